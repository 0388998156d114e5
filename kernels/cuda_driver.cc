// The driver API is declared here by hand (the handful of types and entry
// points used), so building needs no CUDA headers. The enum values are the
// driver ABI's and never change; cuda_driver_test checks them against
// cuda.h where the toolkit is installed.
#include "kernels/cuda_driver.h"

#include <dlfcn.h>

#include <algorithm>

#include <cstdlib>
#include <mutex>

namespace blocktune::cuda {
namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = uint64_t;  // unsigned long long in cuda.h; same ABI
using Handle = void*;

constexpr CUresult kSuccess = 0;
constexpr CUresult kErrorNoDevice = 100;

// CUdevice_attribute
constexpr int kAttrMaxThreadsPerBlock = 1;
constexpr int kAttrWarpSize = 10;
constexpr int kAttrMaxSharedPerBlock = 8;
constexpr int kAttrMaxRegistersPerBlock = 12;
constexpr int kAttrClockRateKhz = 13;
constexpr int kAttrSmCount = 16;
constexpr int kAttrMemoryClockRateKhz = 36;
constexpr int kAttrL2Bytes = 38;
constexpr int kAttrMaxThreadsPerSm = 39;
constexpr int kAttrCcMajor = 75;
constexpr int kAttrCcMinor = 76;
constexpr int kAttrMaxSharedPerSm = 81;
constexpr int kAttrMaxRegistersPerSm = 82;
constexpr int kAttrMaxSharedPerBlockOptin = 97;
// CUfunction_attribute
constexpr int kFuncSharedBytes = 1;
constexpr int kFuncLocalBytes = 3;
constexpr int kFuncNumRegs = 4;
constexpr int kFuncMaxDynamicShared = 8;
constexpr int kFuncPreferredSharedCarveout = 9;
// CUjit_option
constexpr int kJitInfoLog = 3;
constexpr int kJitInfoLogSize = 4;
constexpr int kJitErrorLog = 5;
constexpr int kJitErrorLogSize = 6;

}  // namespace

struct Driver::Api {
  void* library = nullptr;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(Handle*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(Handle);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuCtxGetDevice)(CUdevice*);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int*, Handle, int,
                                                          size_t);
  CUresult (*cuModuleLoadDataEx)(Handle*, const void*, unsigned, int*, void**);
  CUresult (*cuModuleUnload)(Handle);
  CUresult (*cuModuleGetFunction)(Handle*, Handle, const char*);
  CUresult (*cuFuncGetAttribute)(int*, int, Handle);
  CUresult (*cuFuncSetAttribute)(Handle, int, int);
  CUresult (*cuLaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, Handle, void**,
                             void**);
  // cuLaunchKernelEx (CUDA 11.8+): optional, for programmatic dependent
  // launch; the config and attribute mirror cuda.h's CUlaunchConfig and
  // CUlaunchAttribute.
  struct LaunchAttribute {
    int id;
    char pad[4];
    union {
      char bytes[64];
      int value;
    } value;
  };
  struct LaunchConfig {
    unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared;
    Handle stream;
    LaunchAttribute* attrs;
    unsigned num_attrs;
  };
  CUresult (*cuLaunchKernelEx)(const LaunchConfig*, Handle, void**, void**);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemsetD32)(CUdeviceptr, unsigned, size_t);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, Handle);
  CUresult (*cuEventCreate)(Handle*, unsigned);
  CUresult (*cuEventDestroy)(Handle);
  CUresult (*cuEventRecord)(Handle, Handle);
  CUresult (*cuEventSynchronize)(Handle);
  CUresult (*cuEventElapsedTime)(float*, Handle, Handle);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);

  // "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: out of memory"
  Status Check(CUresult result, const char* call) const {
    if (result == kSuccess) return OkStatus();
    const char* name = "CUDA_ERROR_UNKNOWN";
    const char* text = "unknown error";
    if (cuGetErrorName) cuGetErrorName(result, &name);
    if (cuGetErrorString) cuGetErrorString(result, &text);
    std::string message = std::string(call) + ": " + name + ": " + text;
    // A fault makes the context unusable; the caller's process must go.
    return result == kErrorNoDevice ? Unavailable("no GPU: " + message)
                                    : Internal(message);
  }
};

namespace {

const Driver::Api& Api() { return (*Driver::Get())->api(); }

// Calls driver entry point `fn`; an error names it: "cuMemAlloc: ...".
#define BT_CU(fn, ...) \
  BT_RETURN_IF_ERROR(Api().Check(Api().fn(__VA_ARGS__), #fn))

template <typename Fn>
bool Resolve(void* library, Fn* fn, const char* name,
             const char* fallback = nullptr) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr && fallback != nullptr) symbol = dlsym(library, fallback);
  *fn = reinterpret_cast<Fn>(symbol);
  return symbol != nullptr;
}

Status Load(Driver::Api* api) {
  const char* path = std::getenv("BLOCKTUNE_LIBCUDA");
  if (path == nullptr || path[0] == '\0') path = "libcuda.so.1";
  api->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (api->library == nullptr) {
    const char* why = dlerror();
    return Unavailable(std::string("no GPU: cannot load the CUDA driver (") +
                       (why ? why : path) + ")");
  }
  void* lib = api->library;
  bool ok = true;
  ok &= Resolve(lib, &api->cuInit, "cuInit");
  ok &= Resolve(lib, &api->cuDriverGetVersion, "cuDriverGetVersion");
  ok &= Resolve(lib, &api->cuDeviceGetCount, "cuDeviceGetCount");
  ok &= Resolve(lib, &api->cuDeviceGet, "cuDeviceGet");
  ok &= Resolve(lib, &api->cuDeviceGetName, "cuDeviceGetName");
  ok &= Resolve(lib, &api->cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  ok &= Resolve(lib, &api->cuDeviceGetAttribute, "cuDeviceGetAttribute");
  ok &= Resolve(lib, &api->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  ok &= Resolve(lib, &api->cuDevicePrimaryCtxRelease,
                "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
  ok &= Resolve(lib, &api->cuCtxSetCurrent, "cuCtxSetCurrent");
  ok &= Resolve(lib, &api->cuCtxSynchronize, "cuCtxSynchronize");
  ok &= Resolve(lib, &api->cuCtxGetDevice, "cuCtxGetDevice");
  ok &= Resolve(lib, &api->cuOccupancyMaxActiveBlocksPerMultiprocessor,
                "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  ok &= Resolve(lib, &api->cuModuleLoadDataEx, "cuModuleLoadDataEx");
  ok &= Resolve(lib, &api->cuModuleUnload, "cuModuleUnload");
  ok &= Resolve(lib, &api->cuModuleGetFunction, "cuModuleGetFunction");
  ok &= Resolve(lib, &api->cuFuncGetAttribute, "cuFuncGetAttribute");
  ok &= Resolve(lib, &api->cuFuncSetAttribute, "cuFuncSetAttribute");
  ok &= Resolve(lib, &api->cuLaunchKernel, "cuLaunchKernel");
  Resolve(lib, &api->cuLaunchKernelEx, "cuLaunchKernelEx");  // optional
  ok &= Resolve(lib, &api->cuMemAlloc, "cuMemAlloc_v2");
  ok &= Resolve(lib, &api->cuMemFree, "cuMemFree_v2");
  ok &= Resolve(lib, &api->cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  ok &= Resolve(lib, &api->cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  ok &= Resolve(lib, &api->cuMemsetD32, "cuMemsetD32_v2");
  ok &= Resolve(lib, &api->cuMemsetD32Async, "cuMemsetD32Async");
  ok &= Resolve(lib, &api->cuEventCreate, "cuEventCreate");
  ok &= Resolve(lib, &api->cuEventDestroy, "cuEventDestroy_v2");
  ok &= Resolve(lib, &api->cuEventRecord, "cuEventRecord");
  ok &= Resolve(lib, &api->cuEventSynchronize, "cuEventSynchronize");
  ok &= Resolve(lib, &api->cuEventElapsedTime, "cuEventElapsedTime_v2",
                "cuEventElapsedTime");
  ok &= Resolve(lib, &api->cuGetErrorName, "cuGetErrorName");
  ok &= Resolve(lib, &api->cuGetErrorString, "cuGetErrorString");
  if (!ok) {
    return Unavailable(std::string("no GPU: ") + path +
                       " lacks driver API entry points this build needs");
  }
  Status init = api->Check(api->cuInit(0), "cuInit");
  if (!init.ok()) {  // a driver that cannot start is no GPU to use
    std::string why = init.message();
    if (why.rfind("no GPU: ", 0) != 0) why = "no GPU: " + why;
    return Unavailable(why);
  }
  return OkStatus();
}

}  // namespace

StatusOr<Driver*> Driver::Get() {
  static std::once_flag once;
  static StatusOr<Driver*> loaded = Unavailable("no GPU: not loaded");
  std::call_once(once, [] {
    auto api = std::make_unique<Api>();
    Status status = Load(api.get());
    if (!status.ok()) {
      loaded = status;
      return;
    }
    Api& a = *api;
    int count = 0, version = 0;
    Status s = a.Check(a.cuDriverGetVersion(&version), "cuDriverGetVersion");
    if (s.ok()) s = a.Check(a.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (!s.ok()) {
      loaded = s;
      return;
    }
    if (count == 0) {
      loaded = Unavailable("no GPU: the CUDA driver sees no device");
      return;
    }
    Driver* d = new Driver;  // lives as long as the process
    d->api_ = std::move(api);
    d->device_count_ = count;
    d->version_ = version;
    loaded = d;
  });
  return loaded;
}

std::string Driver::VersionString() const {
  return std::to_string(version_ / 1000) + "." +
         std::to_string((version_ % 1000) / 10);
}

StatusOr<DeviceLimits> Driver::Limits(int ordinal) const {
  const Api& a = *api_;
  CUdevice device = 0;
  BT_RETURN_IF_ERROR(a.Check(a.cuDeviceGet(&device, ordinal), "cuDeviceGet"));
  DeviceLimits l;
  const std::pair<int*, int> attributes[] = {
      {&l.max_threads_per_block, kAttrMaxThreadsPerBlock},
      {&l.max_shared_per_block, kAttrMaxSharedPerBlock},
      {&l.max_shared_per_block_optin, kAttrMaxSharedPerBlockOptin},
      {&l.max_shared_per_sm, kAttrMaxSharedPerSm},
      {&l.max_registers_per_block, kAttrMaxRegistersPerBlock},
      {&l.max_registers_per_sm, kAttrMaxRegistersPerSm},
      {&l.max_threads_per_sm, kAttrMaxThreadsPerSm},
      {&l.l2_bytes, kAttrL2Bytes},
      {&l.sm_count, kAttrSmCount},
      {&l.warp_size, kAttrWarpSize},
      {&l.cc_major, kAttrCcMajor},
      {&l.cc_minor, kAttrCcMinor}};
  for (const auto& [out, attribute] : attributes) {
    BT_RETURN_IF_ERROR(a.Check(a.cuDeviceGetAttribute(out, attribute, device),
                               "cuDeviceGetAttribute"));
  }
  return l;
}

StatusOr<DeviceFingerprint> Driver::Fingerprint(int ordinal) const {
  const Api& a = *api_;
  if (ordinal < 0 || ordinal >= device_count_) {
    return InvalidArgument("GPU ordinal must be in [0, " +
                           std::to_string(device_count_ - 1) + "], got " +
                           std::to_string(ordinal));
  }
  CUdevice device = 0;
  BT_RETURN_IF_ERROR(a.Check(a.cuDeviceGet(&device, ordinal), "cuDeviceGet"));
  DeviceFingerprint f;
  char name[256] = {};
  BT_RETURN_IF_ERROR(
      a.Check(a.cuDeviceGetName(name, sizeof(name) - 1, device), "cuDeviceGetName"));
  f.name = name;
  size_t memory = 0;
  BT_RETURN_IF_ERROR(
      a.Check(a.cuDeviceTotalMem(&memory, device), "cuDeviceTotalMem"));
  f.memory_bytes = static_cast<int64_t>(memory);
  int sm_khz = 0, mem_khz = 0;
  const std::pair<int*, int> attributes[] = {
      {&f.cc_major, kAttrCcMajor}, {&f.cc_minor, kAttrCcMinor},
      {&f.sm_count, kAttrSmCount}, {&sm_khz, kAttrClockRateKhz},
      {&mem_khz, kAttrMemoryClockRateKhz}};
  for (const auto& [out, attribute] : attributes) {
    BT_RETURN_IF_ERROR(a.Check(a.cuDeviceGetAttribute(out, attribute, device),
                               "cuDeviceGetAttribute"));
  }
  f.sm_clock_mhz = sm_khz / 1000;
  f.memory_clock_mhz = mem_khz / 1000;
  f.driver_version = VersionString();
  f.cuda_version = VersionString();
  f.ptxas_version = "driver " + VersionString();  // JIT by the driver
  return f;
}

StatusOr<std::unique_ptr<Context>> Context::Open(int ordinal) {
  BT_ASSIGN_OR_RETURN(Driver * driver, Driver::Get());
  if (ordinal < 0 || ordinal >= driver->device_count()) {
    return InvalidArgument("GPU ordinal must be in [0, " +
                           std::to_string(driver->device_count() - 1) +
                           "], got " + std::to_string(ordinal));
  }
  std::unique_ptr<Context> ctx(new Context);
  ctx->driver_ = driver;
  ctx->ordinal_ = ordinal;
  const Driver::Api& a = driver->api();
  BT_RETURN_IF_ERROR(a.Check(a.cuDeviceGet(&ctx->device_, ordinal), "cuDeviceGet"));
  BT_RETURN_IF_ERROR(a.Check(a.cuDevicePrimaryCtxRetain(&ctx->context_, ctx->device_),
                             "cuDevicePrimaryCtxRetain"));
  BT_RETURN_IF_ERROR(ctx->MakeCurrent());
  return ctx;
}

Context::~Context() {
  if (context_ != nullptr) driver_->api().cuDevicePrimaryCtxRelease(device_);
}

Status Context::MakeCurrent() const {
  const Driver::Api& a = driver_->api();
  return a.Check(a.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

Status Context::Synchronize() const {
  const Driver::Api& a = driver_->api();
  return a.Check(a.cuCtxSynchronize(), "cuCtxSynchronize");
}

StatusOr<std::unique_ptr<Module>> Module::Load(const std::string& image) {
  BT_ASSIGN_OR_RETURN(Driver * driver, Driver::Get());
  const Driver::Api& a = driver->api();
  std::string info(16384, '\0'), error(16384, '\0');
  int options[] = {kJitInfoLog, kJitInfoLogSize, kJitErrorLog, kJitErrorLogSize};
  void* values[] = {info.data(), reinterpret_cast<void*>(info.size()),
                    error.data(), reinterpret_cast<void*>(error.size())};
  std::unique_ptr<Module> module(new Module);
  CUresult result = a.cuModuleLoadDataEx(&module->module_, image.c_str(), 4,
                                         options, values);
  error.resize(error.find('\0'));
  info.resize(info.find('\0'));
  if (result != kSuccess) {
    module->module_ = nullptr;
    Status s = a.Check(result, "cuModuleLoadDataEx");
    return Status(s.code(), s.message() + (error.empty() ? "" : "\n" + error));
  }
  module->info_log_ = info;
  return module;
}

Module::~Module() {
  if (module_ != nullptr) Api().cuModuleUnload(module_);
}

StatusOr<Function> Module::GetFunction(const std::string& name) const {
  Function fn;
  BT_CU(cuModuleGetFunction, &fn.handle, module_, name.c_str());
  BT_CU(cuFuncGetAttribute, &fn.registers, kFuncNumRegs, fn.handle);
  BT_CU(cuFuncGetAttribute, &fn.local_bytes, kFuncLocalBytes, fn.handle);
  BT_CU(cuFuncGetAttribute, &fn.static_shared_bytes, kFuncSharedBytes, fn.handle);
  return fn;
}

StatusOr<DeviceBuffer> DeviceBuffer::Allocate(size_t bytes) {
  BT_RETURN_IF_ERROR(Driver::Get().status());
  DeviceBuffer buffer;
  BT_CU(cuMemAlloc, &buffer.address_, bytes == 0 ? 4 : bytes);
  buffer.bytes_ = bytes;
  return buffer;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : address_(other.address_), bytes_(other.bytes_) {
  other.address_ = 0;
  other.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  std::swap(address_, other.address_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (address_ != 0) Api().cuMemFree(address_);
}

Status DeviceBuffer::CopyFromHost(const void* host, size_t bytes) {
  if (bytes > bytes_) return InvalidArgument("copy larger than the buffer");
  BT_CU(cuMemcpyHtoD, address_, host, bytes);
  return OkStatus();
}

Status DeviceBuffer::CopyToHost(void* host, size_t bytes) const {
  if (bytes > bytes_) return InvalidArgument("copy larger than the buffer");
  BT_CU(cuMemcpyDtoH, host, address_, bytes);
  return OkStatus();
}

Status DeviceBuffer::Fill32(uint32_t value) {
  BT_CU(cuMemsetD32, address_, value, bytes_ / 4);
  return OkStatus();
}

Status DeviceBuffer::Fill32Async(uint32_t value, size_t words) {
  BT_CU(cuMemsetD32Async, address_, value, std::min(words, bytes_ / 4), nullptr);
  return OkStatus();
}

StatusOr<std::unique_ptr<Event>> Event::Create() {
  BT_RETURN_IF_ERROR(Driver::Get().status());
  std::unique_ptr<Event> event(new Event);
  BT_CU(cuEventCreate, &event->event_, 0);
  return event;
}

Event::~Event() {
  if (event_ != nullptr) Api().cuEventDestroy(event_);
}

Status Event::Record() {
  BT_CU(cuEventRecord, event_, nullptr);
  return OkStatus();
}

Status Event::Synchronize() {
  BT_CU(cuEventSynchronize, event_);
  return OkStatus();
}

StatusOr<float> Event::MillisecondsSince(const Event& start) const {
  float ms = 0;
  BT_CU(cuEventElapsedTime, &ms, start.event_, event_);
  return ms;
}

Status Launch(const Function& fn, Dim3 grid, Dim3 block, unsigned shared_bytes,
              std::vector<void*> args) {
  BT_CU(cuLaunchKernel, fn.handle, grid.x, grid.y, grid.z, block.x, block.y,
                       block.z, shared_bytes, nullptr, args.data(), nullptr);
  return OkStatus();
}

Status LaunchDependent(const Function& fn, Dim3 grid, Dim3 block,
                       unsigned shared_bytes, std::vector<void*> args) {
  const Driver::Api& api = Api();
  if (api.cuLaunchKernelEx != nullptr) {
    Driver::Api::LaunchAttribute attr{};
    attr.id = 6;  // CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attr.value.value = 1;
    const Driver::Api::LaunchConfig config{
        grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes,
        nullptr, &attr, 1};
    if (api.cuLaunchKernelEx(&config, fn.handle, args.data(), nullptr) ==
        kSuccess)
      return OkStatus();
  }
  // No programmatic launch here: an ordinary launch (griddepcontrol.wait
  // returns at once in a kernel launched without the attribute).
  return Launch(fn, grid, block, shared_bytes, std::move(args));
}

Status SetMaxDynamicShared(const Function& fn, int bytes) {
  BT_CU(cuFuncSetAttribute, fn.handle, kFuncMaxDynamicShared, bytes);
  return OkStatus();
}

Status PreferSharedCarveout(const Function& fn, int percent) {
  BT_CU(cuFuncSetAttribute, fn.handle, kFuncPreferredSharedCarveout, percent);
  return OkStatus();
}

StatusOr<unsigned> PersistentPrograms(const Function& fn, unsigned threads,
                                      unsigned dynamic_shared_bytes) {
  CUdevice device = 0;
  BT_CU(cuCtxGetDevice, &device);
  int sms = 0;
  BT_CU(cuDeviceGetAttribute, &sms, kAttrSmCount, device);
  int resident = 0;
  BT_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &resident, fn.handle,
        static_cast<int>(threads), dynamic_shared_bytes);
  if (resident < 1) {
    return FailedPrecondition(
        "the kernel cannot be resident on an SM (" + std::to_string(threads) +
        " threads, " + std::to_string(dynamic_shared_bytes) +
        " bytes of dynamic shared memory)");
  }
  return static_cast<unsigned>(sms) * static_cast<unsigned>(resident);
}

}  // namespace blocktune::cuda
