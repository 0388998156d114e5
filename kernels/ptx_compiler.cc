#include "kernels/ptx_compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

extern char** environ;

namespace blocktune {

// The entry points of nvJitLink's C API. Since CUDA 12 the exported names
// carry the library's major version (__nvJitLinkCreate_13_0); the header's
// inline wrappers hide that, so it is spelled out here.
struct PtxCompiler::Api {
  using Handle = void*;
  void* library = nullptr;
  int (*create)(Handle*, unsigned, const char**);
  int (*destroy)(Handle*);
  int (*add_data)(Handle, int, const void*, size_t, const char*);
  int (*complete)(Handle);
  int (*cubin_size)(Handle, size_t*);
  int (*cubin)(Handle, void*);
  int (*error_log_size)(Handle, size_t*);
  int (*error_log)(Handle, char*);
  int (*info_log_size)(Handle, size_t*);
  int (*info_log)(Handle, char*);
  int (*version)(unsigned*, unsigned*);
};

namespace {

constexpr int kInputPtx = 2;  // NVJITLINK_INPUT_PTX (CUBIN is 1)

template <typename Fn>
bool Resolve(void* library, Fn* fn, const std::string& name) {
  *fn = reinterpret_cast<Fn>(dlsym(library, name.c_str()));
  return *fn != nullptr;
}

StatusOr<std::unique_ptr<PtxCompiler::Api>> LoadApi() {
  auto api = std::make_unique<PtxCompiler::Api>();
  struct Candidate {
    const char* file;
    const char* suffix;
  };
  const char* env = std::getenv("BLOCKTUNE_NVJITLINK");
  std::string tried;
  // The loader's path first, then the toolkit's usual home.
  const Candidate candidates[] = {
      {"libnvJitLink.so.13", "_13_0"},
      {"libnvJitLink.so.12", "_12_0"},
      {"/usr/local/cuda/lib64/libnvJitLink.so.13", "_13_0"},
      {"/usr/local/cuda/lib64/libnvJitLink.so.12", "_12_0"}};
  for (const Candidate& c : candidates) {
    const char* file = (env && env[0]) ? env : c.file;
    void* lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      tried += std::string(tried.empty() ? "" : "; ") + dlerror();
      if (env && env[0]) break;
      continue;
    }
    const std::string s = c.suffix;
    bool ok = true;
    ok &= Resolve(lib, &api->create, "__nvJitLinkCreate" + s);
    ok &= Resolve(lib, &api->destroy, "__nvJitLinkDestroy" + s);
    ok &= Resolve(lib, &api->add_data, "__nvJitLinkAddData" + s);
    ok &= Resolve(lib, &api->complete, "__nvJitLinkComplete" + s);
    ok &= Resolve(lib, &api->cubin_size, "__nvJitLinkGetLinkedCubinSize" + s);
    ok &= Resolve(lib, &api->cubin, "__nvJitLinkGetLinkedCubin" + s);
    ok &= Resolve(lib, &api->error_log_size, "__nvJitLinkGetErrorLogSize" + s);
    ok &= Resolve(lib, &api->error_log, "__nvJitLinkGetErrorLog" + s);
    ok &= Resolve(lib, &api->info_log_size, "__nvJitLinkGetInfoLogSize" + s);
    ok &= Resolve(lib, &api->info_log, "__nvJitLinkGetInfoLog" + s);
    ok &= Resolve(lib, &api->version, "nvJitLinkVersion");
    if (ok) {
      api->library = lib;
      return api;
    }
    tried += std::string(tried.empty() ? "" : "; ") + file +
             ": missing nvJitLink" + s + " entry points";
    dlclose(lib);
    if (env && env[0]) break;
  }
  return Unavailable("no PTX compiler: cannot load nvJitLink (" + tried + ")");
}

}  // namespace

StatusOr<const PtxCompiler*> PtxCompiler::Get() {
  static std::once_flag once;
  static StatusOr<const PtxCompiler*> result =
      Unavailable("nvJitLink not loaded");
  std::call_once(once, [] {
    auto api = LoadApi();
    if (!api.ok()) {
      result = api.status();
      return;
    }
    auto* compiler = new PtxCompiler;  // lives as long as the process
    compiler->api_ = std::move(*api);
    unsigned major = 0, minor = 0;
    compiler->api_->version(&major, &minor);
    // The fingerprint names both paths: "nvJitLink 13.0; setmaxnreg: ptxas"
    // (or "driver JIT"), so the store tells apart measurements of
    // setmaxnreg kernels from before the whole-program path.
    compiler->version_ = "nvJitLink " + std::to_string(major) + "." +
                         std::to_string(minor) + "; setmaxnreg: " +
                         (FindPtxas().empty() ? "driver JIT" : "ptxas");
    result = compiler;
  });
  return result;
}

std::string FindPtxas() {
  if (const char* env = std::getenv("BLOCKTUNE_PTXAS")) return env;
  for (const char* path : {"/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"})
    if (access(path, X_OK) == 0) return path;
  return "";
}

StatusOr<std::string> AssembleWholeProgram(const std::string& ptxas,
                                           const std::string& ptx,
                                           const std::string& arch,
                                           std::string* log) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string pattern = (fs::temp_directory_path(ec) / "blocktune-ptxas-XXXXXX")
                            .string();
  if (mkdtemp(pattern.data()) == nullptr)
    return Internal("ptxas: cannot make a temporary folder " + pattern);
  const fs::path dir = pattern;
  const std::string in = (dir / "kernel.ptx").string(),
                    out = (dir / "kernel.cubin").string(),
                    messages = (dir / "ptxas.log").string();
  StatusOr<std::string> result = Internal("ptxas: no output");
  {
    std::ofstream(in, std::ios::binary) << ptx;
    const std::string arch_option = "-arch=" + arch;
    const char* argv[] = {ptxas.c_str(), arch_option.c_str(), "-O3", "-o",
                          out.c_str(),   in.c_str(),          nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, messages.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, ptxas.c_str(), &actions, nullptr,
                         const_cast<char* const*>(argv), environ);
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    if (rc == 0 && waitpid(pid, &status, 0) != pid) rc = -1;
    std::ifstream m(messages);
    const std::string text((std::istreambuf_iterator<char>(m)),
                           std::istreambuf_iterator<char>());
    if (log != nullptr) *log += text;
    if (rc != 0) {
      result = Internal("ptxas: cannot run " + ptxas);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      result = Internal("PTX does not compile for " + arch + " (" + ptxas +
                        "): " + text);
    } else {
      std::ifstream c(out, std::ios::binary);
      std::string cubin((std::istreambuf_iterator<char>(c)),
                        std::istreambuf_iterator<char>());
      if (cubin.empty())
        result = Internal("ptxas: " + out + " is empty");
      else
        result = std::move(cubin);
    }
  }
  fs::remove_all(dir, ec);
  return result;
}

StatusOr<std::string> PtxCompiler::Compile(const std::string& ptx,
                                           const std::string& arch,
                                           Report* report) const {
  Report local;
  Report& rep = report != nullptr ? *report : local;
  rep = Report{};
  // A kernel that sets its registers goes to ptxas at once where there is
  // one (nvJitLink would drop setmaxnreg, below, and compile it twice).
  if (ptx.find("setmaxnreg") != std::string::npos) {
    if (const std::string ptxas = FindPtxas(); !ptxas.empty()) {
      rep.path = "ptxas";
      return AssembleWholeProgram(ptxas, ptx, arch, &rep.ptxas_log);
    }
  }
  const Api& a = *api_;
  const std::string arch_option = "-arch=" + arch;
  const char* options[] = {arch_option.c_str(), "-O3"};
  Api::Handle handle = nullptr;
  if (int r = a.create(&handle, 2, options); r != 0) {
    return Internal("nvJitLinkCreate failed with code " + std::to_string(r) +
                    " for " + arch_option);
  }
  auto read_log = [&](int (*size_of)(Api::Handle, size_t*),
                      int (*read)(Api::Handle, char*)) {
    size_t size = 0;
    std::string log;
    if (size_of(handle, &size) == 0 && size > 1) {
      log.resize(size);
      read(handle, log.data());
      log.resize(size - 1);
    }
    return log;
  };
  StatusOr<std::string> out = Internal("nvJitLink: no output");
  int r = a.add_data(handle, kInputPtx, ptx.data(), ptx.size(), "kernel.ptx");
  if (r == 0) r = a.complete(handle);
  size_t size = 0;
  if (r == 0) r = a.cubin_size(handle, &size);
  if (r == 0) {
    std::string cubin(size, '\0');
    r = a.cubin(handle, cubin.data());
    if (r == 0) out = std::move(cubin);
  }
  if (r != 0) {
    out = Internal("PTX does not compile for " + arch + " (nvJitLink code " +
                   std::to_string(r) + "): " +
                   read_log(a.error_log_size, a.error_log));
  }
  const std::string info = read_log(a.info_log_size, a.info_log);
  a.destroy(&handle);
  rep.path = "nvJitLink";
  rep.info_log = info;
  // nvJitLink compiled it as a separate unit and dropped setmaxnreg (with a
  // ptxas, such PTX went there above): the PTX, for the driver's JIT.
  if (out.ok() && info.find("(C7504)") != std::string::npos) {
    rep.path = "driver JIT";
    return ptx;
  }
  return out;
}

}  // namespace blocktune
