// The hand-written PTX a GPU worker measures with, beside the kernels it
// measures: random inputs, result checks against a float64 reference at
// sampled points, a scan for non-finite outputs, and an SM clock probe.
//
// The checks compute their reference on the GPU from the same inputs, in
// float64, one thread per sampled output element, so verifying a
// 4096 x 4096 x 4096 GEMM costs about a millisecond, not a host round
// trip of 64 MiB.
#ifndef BLOCKTUNE_TUNER_CHECK_PTX_H_
#define BLOCKTUNE_TUNER_CHECK_PTX_H_

namespace blocktune {

// Entries, all launched with 1-D grids:
//
// blocktune_fill(.u64 ptr, .u32 count, .u32 seed)
//   ptr[i] = uniform in [-1, 1) from a hash of (i, seed); grid-stride.
//
// blocktune_check_gemm(.u64 A, B, C, err, .u32 M, N, K, lda, ldb, ldc,
//                      ta, tb, points, seed)
//   For `points` output elements (thread 0: (0, 0), thread 1:
//   (M-1, N-1), the rest hashed from seed): the float64 reference
//   sum_l op(A)[i][l] * op(B)[l][j] (alpha = 1, beta = 0) and
//   e = |C[i][j] - ref| / max(sum_l |op(A)[i][l] * op(B)[l][j]|, 1e-30);
//   a non-finite C[i][j] counts as e = +inf. atom.max of the bits of e
//   into *err (a float; non-negative floats order like their bits).
//
// blocktune_check_conv(.u64 X, F, Y, err, .u32 N, H, W, C, K, R, S, P, Q,
//                      pad_h, pad_w, stride_h, stride_w, dil_h, dil_w,
//                      points, seed)
//   The same for an NHWC x KRSC -> NPQK convolution.
//
// blocktune_count_nonfinite(.u64 ptr, .u32 count, .u64 counter)
//   atom.add 1 to *counter (u32) per NaN or infinity; grid-stride.
//
// blocktune_clock(.u64 out, .u32 spin_ns)
//   One thread spins for spin_ns of %globaltimer and writes the elapsed
//   nanoseconds and %clock64 cycles to out[0], out[1] (u64): their ratio
//   is the SM clock while it ran.
const char* CheckPtx();

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_CHECK_PTX_H_
