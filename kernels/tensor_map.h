// TMA tensor maps (CUtensorMap) for 2-D operands, encoded on the host with
// the driver's cuTensorMapEncodeTiled, loaded at run time like the rest of
// the driver layer (cuda_driver.h): building needs no CUDA headers, and on a
// machine with no driver EncodeTensorMap answers UNAVAILABLE "no GPU: ...".
//
// One shape of map only, the one the Hopper families use: a row-major
// matrix of `dims[1]` rows of `dims[0]` elements, `row_stride_bytes` apart,
// copied in boxes of box[0] x box[1] elements with the 128-byte swizzle,
// out-of-bounds elements read as zero, L2 promotion of 256 bytes.
//
// Thread-safety: every function may be called from any thread.
#ifndef BLOCKTUNE_KERNELS_TENSOR_MAP_H_
#define BLOCKTUNE_KERNELS_TENSOR_MAP_H_

#include <cstdint>
#include <string>

#include "kernels/status.h"

namespace blocktune {

// CUtensorMapDataType values (driver ABI; gemm_wgmma_test checks them
// against cuda.h where the toolkit is installed).
enum class TensorMapType : int { kFp16 = 6, kFp32 = 7, kBf16 = 9 };
int TensorMapTypeBytes(TensorMapType t);
const char* ToString(TensorMapType t);

struct TensorMap2d {
  TensorMapType type = TensorMapType::kBf16;
  uint64_t dims[2] = {0, 0};       // elements: contiguous, then rows
  uint64_t row_stride_bytes = 0;   // a multiple of 16
  uint32_t box[2] = {0, 0};        // box[0] * element bytes == 128
};

// A CUtensorMap: 128 opaque bytes, 128-byte aligned as cuda.h declares it
// (the kernel parameter needs 64), passed to a kernel by
// value (a `.param .align 64 .b8 name[128]` parameter).
struct alignas(128) EncodedTensorMap {
  unsigned char bytes[128];
};

// The encoder's documented preconditions, checked without a driver:
// INVALID_ARGUMENT naming the field. `address` is the operand's device
// address (16-byte aligned).
Status CheckTensorMap(const TensorMap2d& map, uint64_t address);

// Encodes `map` for the matrix at device address `address`. UNAVAILABLE
// ("no GPU: ...") without a driver; INTERNAL with the driver's error code
// when it refuses.
StatusOr<EncodedTensorMap> EncodeTensorMap(const TensorMap2d& map,
                                           uint64_t address);

// "bf16 dims 4096x4096 stride 8192 B box 64x128"
std::string ToString(const TensorMap2d& map);

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_TENSOR_MAP_H_
