#include "kernels/tensor_map.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace blocktune {
namespace {

// The driver's cuTensorMapEncodeTiled, declared by hand (cuda.h types:
// CUtensorMap* , enum, cuuint32_t, void*, const cuuint64_t*, const
// cuuint64_t*, const cuuint32_t*, const cuuint32_t*, then four enums).
using EncodeTiledFn = int (*)(void*, int, uint32_t, void*, const uint64_t*,
                              const uint64_t*, const uint32_t*,
                              const uint32_t*, int, int, int, int);
constexpr int kInterleaveNone = 0;
constexpr int kSwizzle128B = 3;
constexpr int kL2Promotion256B = 3;
constexpr int kOobFillZero = 0;  // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE

struct Encoder {
  EncodeTiledFn fn = nullptr;
  std::string why;
};

const Encoder& GetEncoder() {
  static std::once_flag once;
  static Encoder encoder;
  std::call_once(once, [] {
    // The same library cuda_driver.cc opens (dlopen returns its handle
    // when it is already loaded).
    const char* path = std::getenv("BLOCKTUNE_LIBCUDA");
    if (path == nullptr || path[0] == '\0') path = "libcuda.so.1";
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      encoder.why = std::string("no GPU: cannot load the CUDA driver (") +
                    (why ? why : path) + ")";
      return;
    }
    encoder.fn =
        reinterpret_cast<EncodeTiledFn>(dlsym(lib, "cuTensorMapEncodeTiled"));
    if (encoder.fn == nullptr) {
      encoder.why = std::string("no GPU: ") + path +
                    " has no cuTensorMapEncodeTiled (driver older than 12.0)";
    }
  });
  return encoder;
}

std::string N(uint64_t v) { return std::to_string(v); }

}  // namespace

int TensorMapTypeBytes(TensorMapType t) {
  return t == TensorMapType::kFp32 ? 4 : 2;
}

const char* ToString(TensorMapType t) {
  switch (t) {
    case TensorMapType::kFp16:
      return "fp16";
    case TensorMapType::kFp32:
      return "fp32";
    case TensorMapType::kBf16:
      return "bf16";
  }
  return "?";
}

std::string ToString(const TensorMap2d& m) {
  return std::string(ToString(m.type)) + " dims " + N(m.dims[0]) + "x" +
         N(m.dims[1]) + " stride " + N(m.row_stride_bytes) + " B box " +
         N(m.box[0]) + "x" + N(m.box[1]);
}

Status CheckTensorMap(const TensorMap2d& m, uint64_t address) {
  const uint64_t esize = TensorMapTypeBytes(m.type);
  if (address % 16 != 0)
    return InvalidArgument("tensor map: the address must be 16-byte aligned, "
                           "got " + N(address));
  for (int i = 0; i < 2; ++i) {
    if (m.dims[i] == 0 || m.dims[i] > (uint64_t{1} << 32))
      return InvalidArgument("tensor map: dims[" + N(i) +
                             "] must be in [1, 2^32], got " + N(m.dims[i]));
    if (m.box[i] == 0 || m.box[i] > 256)
      return InvalidArgument("tensor map: box[" + N(i) +
                             "] must be in [1, 256], got " + N(m.box[i]));
  }
  if (m.row_stride_bytes % 16 != 0 || m.row_stride_bytes >= (uint64_t{1} << 40))
    return InvalidArgument(
        "tensor map: the row stride must be a multiple of 16 bytes below "
        "2^40, got " + N(m.row_stride_bytes));
  if (m.row_stride_bytes < m.dims[0] * esize)
    return InvalidArgument("tensor map: the row stride " +
                           N(m.row_stride_bytes) + " B is shorter than a row (" +
                           N(m.dims[0] * esize) + " B)");
  if (m.box[0] * esize != 128)
    return InvalidArgument("tensor map: the 128-byte swizzle needs an inner "
                           "box of 128 bytes, got " + N(m.box[0] * esize));
  return OkStatus();
}

StatusOr<EncodedTensorMap> EncodeTensorMap(const TensorMap2d& m,
                                           uint64_t address) {
  BT_RETURN_IF_ERROR(CheckTensorMap(m, address));
  const Encoder& e = GetEncoder();
  if (e.fn == nullptr) return Unavailable(e.why);
  EncodedTensorMap out{};
  const uint64_t strides[1] = {m.row_stride_bytes};
  const uint32_t element_strides[2] = {1, 1};
  const int result = e.fn(out.bytes, static_cast<int>(m.type), 2,
                          reinterpret_cast<void*>(address), m.dims, strides,
                          m.box, element_strides, kInterleaveNone,
                          kSwizzle128B, kL2Promotion256B, kOobFillZero);
  if (result != 0) {
    return Internal("cuTensorMapEncodeTiled: CUresult " + N(result) + " for " +
                    ToString(m));
  }
  return out;
}

}  // namespace blocktune
