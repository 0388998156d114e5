#include "kernels/tensor_map.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace blocktune {
namespace {

// The driver's encoders, declared by hand (cuda.h types: CUtensorMap*,
// enum, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*, then the
// mode's own arguments and four enums).
using EncodeTiledFn = int (*)(void*, int, uint32_t, void*, const uint64_t*,
                              const uint64_t*, const uint32_t*,
                              const uint32_t*, int, int, int, int);
using EncodeIm2colFn = int (*)(void*, int, uint32_t, void*, const uint64_t*,
                               const uint64_t*, const int*, const int*,
                               uint32_t, uint32_t, const uint32_t*, int, int,
                               int, int);
constexpr int kInterleaveNone = 0;
constexpr int kSwizzle128B = 3;
constexpr int kL2Promotion256B = 3;
constexpr int kOobFillZero = 0;  // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE

struct Encoder {
  EncodeTiledFn tiled = nullptr;
  EncodeIm2colFn im2col = nullptr;
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
    encoder.tiled =
        reinterpret_cast<EncodeTiledFn>(dlsym(lib, "cuTensorMapEncodeTiled"));
    encoder.im2col = reinterpret_cast<EncodeIm2colFn>(
        dlsym(lib, "cuTensorMapEncodeIm2col"));
    if (encoder.tiled == nullptr || encoder.im2col == nullptr) {
      encoder.tiled = nullptr;
      encoder.why = std::string("no GPU: ") + path +
                    " has no cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col "
                    "(driver older than 12.0)";
    }
  });
  return encoder;
}

std::string N(int64_t v) { return std::to_string(v); }

template <typename T>
std::string Join(const T* v, int n, const char* sep) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? sep : "") + N(static_cast<int64_t>(v[i]));
  return s;
}

// The corners' range for an im2col map of this rank (cuda.h: 16 bits for
// rank 3, 8 for rank 4, 5 for rank 5).
int32_t CornerLimit(int rank) {
  return rank == 3 ? 32768 : rank == 4 ? 128 : 16;
}

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

const char* ToString(TensorMapMode m) {
  return m == TensorMapMode::kIm2col ? "im2col" : "tiled";
}

TensorMapSpec TensorMapSpec::Matrix(TensorMapType type, uint64_t cols,
                                    uint64_t rows, uint64_t row_stride,
                                    uint32_t box_cols, uint32_t box_rows) {
  TensorMapSpec m;
  m.type = type;
  m.rank = 2;
  m.dims[0] = cols;
  m.dims[1] = rows;
  m.strides[0] = row_stride;
  m.box[0] = box_cols;
  m.box[1] = box_rows;
  return m;
}

std::string ToString(const TensorMapSpec& m) {
  const int r = m.rank >= 2 && m.rank <= kTensorMapMaxRank ? m.rank : 2;
  std::string s = std::string(ToString(m.type)) + " " + ToString(m.mode) +
                  " dims " + Join(m.dims, r, "x") + " strides " +
                  Join(m.strides, r - 1, ",") + " B";
  if (m.mode == TensorMapMode::kTiled) return s + " box " + Join(m.box, r, "x");
  return s + " corners " + Join(m.lower, r - 2, ",") + ".." +
         Join(m.upper, r - 2, ",") + " " + N(m.channels) + " ch x " +
         N(m.pixels) + " px steps " + Join(m.element_strides, r, ",");
}

Status CheckTensorMap(const TensorMapSpec& m, uint64_t address) {
  const uint64_t esize = TensorMapTypeBytes(m.type);
  const bool im2col = m.mode == TensorMapMode::kIm2col;
  if (address % 16 != 0)
    return InvalidArgument("tensor map: the address must be 16-byte aligned, "
                           "got " + N(address));
  const int min_rank = im2col ? 3 : 2;
  if (m.rank < min_rank || m.rank > kTensorMapMaxRank)
    return InvalidArgument(std::string("tensor map: rank must be in [") +
                           N(min_rank) + ", 5] for a " + ToString(m.mode) +
                           " map, got " + N(m.rank));
  for (int i = 0; i < m.rank; ++i) {
    if (m.dims[i] == 0 || m.dims[i] > (uint64_t{1} << 32))
      return InvalidArgument("tensor map: dims[" + N(i) +
                             "] must be in [1, 2^32], got " + N(m.dims[i]));
    if (!im2col && (m.box[i] == 0 || m.box[i] > 256))
      return InvalidArgument("tensor map: box[" + N(i) +
                             "] must be in [1, 256], got " + N(m.box[i]));
    if (m.element_strides[i] == 0 || m.element_strides[i] > 8)
      return InvalidArgument("tensor map: element_strides[" + N(i) +
                             "] must be in [1, 8], got " +
                             N(m.element_strides[i]));
  }
  uint64_t extent = m.dims[0] * esize;  // bytes the previous dim spans
  for (int i = 1; i < m.rank; ++i) {
    const uint64_t st = m.strides[i - 1];
    if (st % 16 != 0 || st >= (uint64_t{1} << 40))
      return InvalidArgument("tensor map: strides[" + N(i - 1) +
                             "] must be a multiple of 16 bytes below 2^40, "
                             "got " + N(st));
    if (st < extent)
      return InvalidArgument("tensor map: strides[" + N(i - 1) + "] " +
                             N(st) + " B is shorter than dim " + N(i - 1) +
                             " (" + N(extent) + " B)");
    extent = st * m.dims[i];
  }
  if (!im2col) {
    if (m.box[0] * esize != 128)
      return InvalidArgument("tensor map: the 128-byte swizzle needs an "
                             "inner box of 128 bytes, got " +
                             N(m.box[0] * esize));
    return OkStatus();
  }
  const int32_t lim = CornerLimit(m.rank);
  for (int i = 0; i < m.rank - 2; ++i) {
    for (int32_t c : {m.lower[i], m.upper[i]}) {
      if (c < -lim || c >= lim)
        return InvalidArgument("tensor map: im2col corners of a rank-" +
                               N(m.rank) + " map must be in [" + N(-lim) +
                               ", " + N(lim - 1) + "], got " + N(c));
    }
    if (static_cast<int64_t>(m.dims[i + 1]) + m.upper[i] - m.lower[i] <= 0)
      return InvalidArgument("tensor map: the im2col bounding box of spatial "
                             "dim " + N(i) + " is empty");
  }
  if (m.channels * esize != 128)
    return InvalidArgument("tensor map: the 128-byte swizzle needs 128 bytes "
                           "of channels per pixel, got " +
                           N(m.channels * esize));
  if (m.pixels == 0 || m.pixels > 1024)
    return InvalidArgument("tensor map: pixels must be in [1, 1024], got " +
                           N(m.pixels));
  return OkStatus();
}

StatusOr<EncodedTensorMap> EncodeTensorMap(const TensorMapSpec& m,
                                           uint64_t address) {
  BT_RETURN_IF_ERROR(CheckTensorMap(m, address));
  const Encoder& e = GetEncoder();
  if (e.tiled == nullptr) return Unavailable(e.why);
  EncodedTensorMap out{};
  void* at = reinterpret_cast<void*>(address);
  const uint32_t rank = static_cast<uint32_t>(m.rank);
  int result = 0;
  if (m.mode == TensorMapMode::kTiled) {
    result = e.tiled(out.bytes, static_cast<int>(m.type), rank, at, m.dims,
                     m.strides, m.box, m.element_strides, kInterleaveNone,
                     kSwizzle128B, kL2Promotion256B, kOobFillZero);
  } else {
    int lower[kTensorMapMaxRank - 2], upper[kTensorMapMaxRank - 2];
    for (int i = 0; i < kTensorMapMaxRank - 2; ++i) {
      lower[i] = m.lower[i];
      upper[i] = m.upper[i];
    }
    result = e.im2col(out.bytes, static_cast<int>(m.type), rank, at, m.dims,
                      m.strides, lower, upper, m.channels, m.pixels,
                      m.element_strides, kInterleaveNone, kSwizzle128B,
                      kL2Promotion256B, kOobFillZero);
  }
  if (result != 0) {
    return Internal(std::string("cuTensorMapEncode") +
                    (m.mode == TensorMapMode::kTiled ? "Tiled" : "Im2col") +
                    ": CUresult " + N(result) + " for " + ToString(m));
  }
  return out;
}

}  // namespace blocktune
