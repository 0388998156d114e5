// TMA tensor maps (CUtensorMap), encoded on the host with the driver's
// cuTensorMapEncodeTiled or cuTensorMapEncodeIm2col, loaded at run time
// like the rest of the driver layer (cuda_driver.h): building needs no CUDA
// headers, and on a machine with no driver EncodeTensorMap answers
// UNAVAILABLE "no GPU: ...".
//
// The shapes of map the Hopper families use, all with the 128-byte swizzle
// (an inner box of exactly 128 bytes), out-of-bounds elements read as zero
// and L2 promotion of 256 bytes:
//   - tiled, rank 2..5: a tensor of dims[0] contiguous elements, then
//     dims[1], ... with strides[i - 1] bytes between consecutive indices of
//     dim i, copied in boxes of box[0] x box[1] x ... elements. gemm.wgmma's
//     operands are rank 2 (a row-major matrix); conv.wgmma's filter is rank
//     3 (C, R*S, K).
//   - im2col, rank 3..5: an activation tensor (C, then rank - 2 spatial
//     dims innermost first, then images), copied as `pixels` rows of
//     `channels` channels: the pixels of the box the corners bound, walked
//     innermost spatial dim first in steps of element_strides (a
//     convolution's stride) and on into the next image (PTX ISA, "im2col
//     mode"). conv.wgmma's input is rank 4 (C, W, H, N).
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

enum class TensorMapMode : int { kTiled = 0, kIm2col = 1 };
const char* ToString(TensorMapMode m);

inline constexpr int kTensorMapMaxRank = 5;

struct TensorMapSpec {
  TensorMapType type = TensorMapType::kBf16;
  TensorMapMode mode = TensorMapMode::kTiled;
  int rank = 2;
  uint64_t dims[kTensorMapMaxRank] = {};         // elements, innermost first
  uint64_t strides[kTensorMapMaxRank - 1] = {};  // bytes of dims 1.., % 16
  // Tiled: elements per box in each dim; box[0] * element bytes == 128.
  uint32_t box[kTensorMapMaxRank] = {};
  // Im2col: the bounding box's corners per spatial dim (innermost first),
  // relative to each image's origin and its far edge; the channels of a
  // pixel (channels * element bytes == 128) and the pixels per copy.
  int32_t lower[kTensorMapMaxRank - 2] = {};
  int32_t upper[kTensorMapMaxRank - 2] = {};
  uint32_t channels = 0, pixels = 0;
  // The traversal step in each dim (1..8; im2col: a convolution's stride).
  uint32_t element_strides[kTensorMapMaxRank] = {1, 1, 1, 1, 1};

  // A row-major matrix of `rows` rows of `cols` elements, `row_stride`
  // bytes apart, in boxes of box_cols x box_rows.
  static TensorMapSpec Matrix(TensorMapType type, uint64_t cols,
                              uint64_t rows, uint64_t row_stride,
                              uint32_t box_cols, uint32_t box_rows);
};

// A CUtensorMap: 128 opaque bytes, 128-byte aligned as cuda.h declares it
// (the kernel parameter needs 64), passed to a kernel by
// value (a `.param .align 64 .b8 name[128]` parameter).
struct alignas(128) EncodedTensorMap {
  unsigned char bytes[128];
};

// The encoders' documented preconditions, checked without a driver:
// INVALID_ARGUMENT naming the field and its range. `address` is the
// operand's device address (16-byte aligned).
Status CheckTensorMap(const TensorMapSpec& map, uint64_t address);

// Encodes `map` for the tensor at device address `address`. UNAVAILABLE
// ("no GPU: ...") without a driver; INTERNAL with the driver's error code
// when it refuses.
StatusOr<EncodedTensorMap> EncodeTensorMap(const TensorMapSpec& map,
                                           uint64_t address);

// "bf16 tiled dims 4096x4096 strides 8192 B box 64x128";
// "bf16 im2col dims 64x56x56x32 strides 128,7168,401408 B corners
//  -1,-1..-1,-1 72 ch x 128 px steps 1,1,1,1"
std::string ToString(const TensorMapSpec& map);

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_TENSOR_MAP_H_
