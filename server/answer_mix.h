// Which of a query's ranked candidates it answers with.
#ifndef BLOCKTUNE_SERVER_ANSWER_MIX_H_
#define BLOCKTUNE_SERVER_ANSWER_MIX_H_

#include <cstddef>
#include <set>
#include <utility>
#include <vector>

namespace blocktune {

// Keeps k of `ranked` (fastest prediction first, several kernel families
// mixed), in their order: each family's fastest first (the k fastest of
// them where more than k families have candidates), then the fastest of the
// rest. k = 1 keeps the fastest. So that one family's model, optimistic
// where it has few samples, cannot fill a --verify re-benchmark's list:
// on the H100's bf16 evaluation (bench/eval/rescore.py, 94 shapes) the plain
// top 10 of 35x700x2048 was gemm.wgmma_pk's ten, the fastest 18.0 us, and
// gemm.mma's best, kept this way, ran 9.9 us.
template <typename T, typename FamilyOf>
void KeepEachFamilysFastest(std::vector<T>* ranked, size_t k,
                            FamilyOf&& family_of) {
  if (ranked->size() <= k) return;
  std::vector<bool> keep(ranked->size(), false);
  std::set<decltype(family_of((*ranked)[0]))> seen;
  size_t kept = 0;
  for (size_t i = 0; i < ranked->size() && kept < k; ++i) {
    if (seen.insert(family_of((*ranked)[i])).second) {
      keep[i] = true;
      ++kept;
    }
  }
  for (size_t i = 0; i < ranked->size() && kept < k; ++i) {
    if (!keep[i]) {
      keep[i] = true;
      ++kept;
    }
  }
  size_t out = 0;
  for (size_t i = 0; i < ranked->size(); ++i) {
    if (!keep[i]) continue;
    if (out != i) (*ranked)[out] = std::move((*ranked)[i]);
    ++out;
  }
  ranked->resize(out);
}

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_ANSWER_MIX_H_
