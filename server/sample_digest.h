// Kernel digests of samples (kernels/family.h KernelDigest), and what a
// generator version bump does with them.
//
// Every change to what a family's generator emits bumps its version, and
// samples of an older version are stale: kept, never trained on, never
// answering. Most bumps change the kernels of some configurations only
// (a new path for rows that are not 16-byte aligned, say), and measuring
// every sample again would throw away the rest. A sample keeps the digest
// of the kernel it measured; when this build's generator emits a kernel of
// the same digest for it, the measurement is of that very kernel, and the
// sample is stored as current (re-labeled) instead of stale.
#ifndef BLOCKTUNE_SERVER_SAMPLE_DIGEST_H_
#define BLOCKTUNE_SERVER_SAMPLE_DIGEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/status.h"
#include "server/tuning_store.h"

namespace blocktune {

// The digest of the kernel that this build's generator of the sample's
// family emits for it: its context (tight leading dimensions, as campaigns
// measure), its parameters, its device's architecture. NOT_FOUND for a
// family this build lacks; the generator's error for parameters it no
// longer takes.
StatusOr<std::string> RegeneratedDigest(const SampleRecord& sample);

// Stale samples whose kernel_digest RegeneratedDigest reproduces get their
// family's current generator version; so do those it reproduces with the
// generator versions that most families write into their PTX's comments
// ("// blocktune gemm.ffma_k v4, ...") set back to older values, which
// KernelDigest cannot leave out: the kernel is the same but for a comment.
// Samples without a digest, of an unknown family or of a newer version stay as
// they are. Returns how many were re-labeled. Uses up to `threads` threads (at
// least one).
int64_t RelabelUnchanged(std::vector<SampleRecord>* samples, int threads = 1);

// Current samples without a digest get RegeneratedDigest: by the
// versioning rule this build's generator emits the kernel they measured.
// Returns how many got one (a sample the generator refuses keeps none).
int64_t FillMissingDigests(std::vector<SampleRecord>* samples,
                           int threads = 1);

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_SAMPLE_DIGEST_H_
