#include "kernels/ptx_compiler.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

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
    compiler->version_ =
        "nvJitLink " + std::to_string(major) + "." + std::to_string(minor);
    result = compiler;
  });
  return result;
}

StatusOr<std::string> PtxCompiler::Compile(const std::string& ptx,
                                           const std::string& arch) const {
  const Api& a = *api_;
  const std::string arch_option = "-arch=" + arch;
  const char* options[] = {arch_option.c_str(), "-O3"};
  Api::Handle handle = nullptr;
  if (int r = a.create(&handle, 2, options); r != 0) {
    return Internal("nvJitLinkCreate failed with code " + std::to_string(r) +
                    " for " + arch_option);
  }
  auto error_log = [&]() {
    size_t size = 0;
    std::string log;
    if (a.error_log_size(handle, &size) == 0 && size > 1) {
      log.resize(size);
      a.error_log(handle, log.data());
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
                   std::to_string(r) + "): " + error_log());
  }
  a.destroy(&handle);
  return out;
}

}  // namespace blocktune
