// The hand-written PTX a GPU worker measures with, beside the kernels it
// measures: random inputs, result checks against a float64 reference at
// sampled points, a scan for non-finite outputs, and an SM clock probe.
//
// The checks compute their reference on the GPU from the same inputs, in
// float64, one warp per sampled output element (its lanes split the
// reduction and add their sums by shuffles), not a host round trip of the
// whole output. One thread per element, as at first, left the K-long loop
// latency-bound on 8 SMs: the check took 3.1 ms of the 5.4 ms an H100 tf32
// GEMM campaign's GPU thread spent per sample; with a warp per element,
// 0.44 ms (poison, reference and scan together; campaign runs 2 and 3 in
// bench/results/h100/campaigns/).
#ifndef BLOCKTUNE_TUNER_CHECK_PTX_H_
#define BLOCKTUNE_TUNER_CHECK_PTX_H_

#include <cstdint>

#include "kernels/operation.h"

namespace blocktune {

// The error bound a result check applies (DESIGN.md, "Kernel families and
// precision"), against a float64 reference from the same stored inputs:
//   |C - C_ref| <= c * u_math * sum_k |a_ik||b_kj| + u_out * |C_ref|
// with u_math = MathRoundoff(precision), u_out = StorageRoundoff(precision).
// c per precision, and why:
//   fp32 (FFMA): c = 168, so c * u_math = 1.0e-5, the relative tolerance
//     every fp32 sample was checked with before families: the math is the
//     K-long fp32 accumulation itself, whose error on random-sign inputs
//     stays a small multiple of u * sum |a||b|, and fp32 verdicts stay
//     as they were.
//   bf16, fp16: c = 3. The reference multiplies the same rounded inputs,
//     whose products are exact in fp32, so an honest kernel errs only by
//     its fp32 accumulation: at most K * 2^-24 * sum |a||b| in the worst
//     case, within 3 * u_math (2^-8, 2^-11) for K up to 3 * 2^16 (bf16)
//     and 3 * 2^13 (fp16) even with adversarial signs, and far within it
//     for random-sign inputs at any K.
//   tf32: c = 3. The kernel rounds its fp32 inputs to tf32 and the
//     reference does not, which costs at most (2u + u^2) |a||b| per
//     product (u = 2^-11); the remaining ~u covers the fp32 accumulation
//     (worst case K * 2^-24 <= u for K <= 2^13; random signs any K).
// The bound is loose by design where u_math is large (bf16: 2^-8): it
// catches wrong results (a wrong layout, a lost K step or split, a race)
// of the size of C itself, and the NaN poison and scan catch outputs never
// written.
struct CheckBound {
  double c = 0;
  double u_math = 0;
  double u_out = 0;
  double c_u() const { return c * u_math; }
};
CheckBound CheckBoundFor(DType precision);
// The element type code of the entries below: 0 f32 (fp32, tf32), 1 f16,
// 2 bf16.
uint32_t CheckType(DType precision);

// Element types, where an entry takes one: 0 f32, 1 f16, 2 bf16 (the
// storage of tf32 is f32). CheckType maps a context's precision to them.
//
// Entries, all launched with 1-D grids:
//
// blocktune_fill(.u64 ptr, .u32 count, .u32 seed)
//   ptr[i] = uniform in [-1, 1) from a hash of (i, seed), f32; grid-stride.
//
// blocktune_fill_16(.u64 ptr, .u32 count, .u32 seed, .u32 type)
//   The same values rounded to f16 (type 1) or bf16 (type 2), 2 bytes
//   each: inputs of that type, so the reference reads exactly what the
//   kernel reads.
//
// blocktune_set32(.u64 ptr, .u32 count, .u32 value)
//   ptr[i] = value for 32-bit words i < count (a workspace's counters).
//
// blocktune_check_gemm(.u64 A, B, C, err, .u32 M, N, K, lda, ldb, ldc,
//                      ta, tb, points, seed, type_in, type_out,
//                      .f64 c_u, u_out)
//   For `points` output elements (thread 0: (0, 0), thread 1:
//   (M-1, N-1), the rest hashed from seed): the float64 reference
//   ref = sum_l op(A)[i][l] * op(B)[l][j] (alpha = 1, beta = 0) from the
//   stored inputs (type_in), and the error over its bound (DESIGN.md,
//   "Kernel families and precision")
//     e = |C[i][j] - ref| / (c_u * sum_l |op(A)[i][l] * op(B)[l][j]|
//                            + u_out * |ref|),
//   C read as type_out; a non-finite C[i][j] counts as e = +inf. atom.max
//   of the bits of e (a float) into *err: the sample passes where the
//   largest e is at most 1.
//
// blocktune_check_conv(.u64 X, F, Y, err, .u32 N, H, W, C, K, R, S, P, Q,
//                      pad_h, pad_w, stride_h, stride_w, dil_h, dil_w,
//                      points, seed, .f64 c_u, u_out)
//   The same for an NHWC x KRSC -> NPQK convolution, all f32.
//
// blocktune_count_nonfinite(.u64 ptr, .u32 count, .u64 counter, .u32 type)
//   atom.add 1 to *counter (u32) per NaN or infinity among `count`
//   elements of `type`; grid-stride.
//
// blocktune_clock(.u64 out, .u32 spin_ns)
//   One thread spins for spin_ns of %globaltimer and writes the elapsed
//   nanoseconds and %clock64 cycles to out[0], out[1] (u64): their ratio
//   is the SM clock while it ran.
//
// blocktune_flush_read(.u64 ptr, .u64 words)
//   Reads `words` 16-byte words from ptr (ld.global.cg, grid-stride) and
//   stores nothing: the L2 flush before a timed launch. A read leaves L2
//   full of clean lines; a memset would leave dirty ones, whose write-back
//   lands inside the next timed kernel as its reads evict them (on an
//   H100, ~4 us added to a 17 us decode GEMM: bench/results/h100/
//   mma_split.txt).
const char* CheckPtx();

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_CHECK_PTX_H_
