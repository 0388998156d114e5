// A thin layer over the CUDA driver API, loaded at run time.
//
// libcuda is opened with dlopen on first use, never linked, so every program
// of blocktune builds, starts and tests on a machine with no GPU and no
// driver; there Driver::Get() answers UNAVAILABLE with a message that starts
// "no GPU: ". Every driver error becomes a Status carrying the driver's own
// name and text for it ("CUDA_ERROR_INVALID_PTX: a PTX JIT compilation
// failed"), plus the JIT log for module loads.
//
// Thread-safety: Driver is safe to use from any thread. A Context is made
// current per thread with MakeCurrent(); modules, buffers and events belong
// to the context that was current when they were made.
#ifndef BLOCKTUNE_KERNELS_CUDA_DRIVER_H_
#define BLOCKTUNE_KERNELS_CUDA_DRIVER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "kernels/status.h"

namespace blocktune::cuda {

// What CanImplement needs to know of a device, read off the device.
struct DeviceLimits {
  int max_threads_per_block = 0;
  int max_shared_per_block = 0;        // bytes, without opt-in
  int max_shared_per_block_optin = 0;  // bytes, with opt-in
  int max_shared_per_sm = 0;
  int max_registers_per_block = 0;
  int max_registers_per_sm = 0;
  int max_threads_per_sm = 0;
  int l2_bytes = 0;
  int sm_count = 0;
  int warp_size = 0;
  int cc_major = 0;
  int cc_minor = 0;
};

class Driver {
 public:
  // The process's driver, loaded and initialized once. The library is
  // libcuda.so.1 unless BLOCKTUNE_LIBCUDA names another file.
  static StatusOr<Driver*> Get();

  int device_count() const { return device_count_; }
  int version() const { return version_; }  // 13000 for CUDA 13.0
  // "13.0"
  std::string VersionString() const;

  // The fingerprint of device `ordinal`. cuda_version and ptxas_version are
  // the driver's version here; the caller that compiles PTX with a ptxas of
  // its own replaces them.
  StatusOr<DeviceFingerprint> Fingerprint(int ordinal) const;
  StatusOr<DeviceLimits> Limits(int ordinal) const;

  struct Api;  // the loaded entry points
  const Api& api() const { return *api_; }

 private:
  Driver() = default;
  std::unique_ptr<Api> api_;
  int device_count_ = 0;
  int version_ = 0;
};

// The primary context of one device.
class Context {
 public:
  static StatusOr<std::unique_ptr<Context>> Open(int ordinal);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  Status MakeCurrent() const;  // on the calling thread
  Status Synchronize() const;  // waits for all work; reports faults
  int ordinal() const { return ordinal_; }

 private:
  Context() = default;
  const Driver* driver_ = nullptr;
  int ordinal_ = 0;
  int device_ = 0;
  void* context_ = nullptr;
};

// A kernel of a loaded module.
struct Function {
  void* handle = nullptr;
  int registers = 0;    // per thread
  int local_bytes = 0;  // per thread: spills and local arrays
  int static_shared_bytes = 0;
};

// A module in the current context: PTX, JIT-compiled by the driver, or a
// cubin image (kernels/ptx_compiler.h) loaded as is.
class Module {
 public:
  // `image` is PTX text or a cubin. The error of a failed load carries the
  // JIT's error log.
  static StatusOr<std::unique_ptr<Module>> Load(const std::string& image);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  StatusOr<Function> GetFunction(const std::string& name) const;
  const std::string& info_log() const { return info_log_; }

 private:
  Module() = default;
  void* module_ = nullptr;
  std::string info_log_;
};

// Device memory in the current context.
class DeviceBuffer {
 public:
  static StatusOr<DeviceBuffer> Allocate(size_t bytes);
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer();

  uint64_t address() const { return address_; }
  size_t bytes() const { return bytes_; }
  Status CopyFromHost(const void* host, size_t bytes);
  Status CopyToHost(void* host, size_t bytes) const;
  // Sets every 32-bit word, e.g. to a NaN pattern to poison an output.
  Status Fill32(uint32_t value);
  // The first `words` words (all, by default), queued on the default
  // stream: between timed runs, writing a buffer twice the L2's size
  // flushes it.
  Status Fill32Async(uint32_t value, size_t words = SIZE_MAX);

 private:
  uint64_t address_ = 0;
  size_t bytes_ = 0;
};

// A timing event on the default stream.
class Event {
 public:
  static StatusOr<std::unique_ptr<Event>> Create();
  ~Event();
  Status Record();
  Status Synchronize();
  // Milliseconds from `start` to this event; both must have completed.
  StatusOr<float> MillisecondsSince(const Event& start) const;

 private:
  Event() = default;
  void* event_ = nullptr;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// Launches `fn` on the default stream; `args` point at each argument.
Status Launch(const Function& fn, Dim3 grid, Dim3 block, unsigned shared_bytes,
              std::vector<void*> args);
// As Launch, with programmatic dependent launch allowed (sm_90): `fn` may
// start before the kernel before it on the stream has finished, and must
// execute griddepcontrol.wait before it reads that kernel's results. Falls
// back to an ordinary launch where the driver lacks cuLaunchKernelEx or
// refuses the attribute.
Status LaunchDependent(const Function& fn, Dim3 grid, Dim3 block,
                       unsigned shared_bytes, std::vector<void*> args);
// Allows `fn` up to `bytes` of dynamic shared memory (past 48 KiB).
Status SetMaxDynamicShared(const Function& fn, int bytes);
// Asks for `percent` of the unified L1/shared storage as shared memory (100:
// the most). Without it the driver may pick a carveout that fits a single
// program per SM, as ncu showed for a 16 KiB kernel on the H100.
Status PreferSharedCarveout(const Function& fn, int percent);

// The programs of `fn` the current context's device holds at once: its SM
// count times the driver's occupancy for `threads` per block and
// `dynamic_shared_bytes` (set the opt-in limit first). A persistent grid
// launches that many (GeneratedKernel::persistent).
StatusOr<unsigned> PersistentPrograms(const Function& fn, unsigned threads,
                                      unsigned dynamic_shared_bytes);

}  // namespace blocktune::cuda

#endif  // BLOCKTUNE_KERNELS_CUDA_DRIVER_H_
