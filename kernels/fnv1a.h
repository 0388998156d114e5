// FNV-1a, 64 bits, over strings with a separator after each, so that
// ("ab", "c") and ("a", "bc") differ. The golden-hash test
// (family_golden_test), the ptxas record's PTX digest (family_ptxas_test)
// and the samples' kernel digests (KernelDigest, kernels/family.h) hash
// generated kernels with it: change detection, not security.
#ifndef BLOCKTUNE_KERNELS_FNV1A_H_
#define BLOCKTUNE_KERNELS_FNV1A_H_

#include <cstdint>
#include <string>

namespace blocktune {

struct Fnv1a {
  uint64_t h = 0xcbf29ce484222325ull;
  void Add(const std::string& s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
    h ^= 0xff;  // a separator no PTX byte equals
    h *= 0x100000001b3ull;
  }
};

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_FNV1A_H_
