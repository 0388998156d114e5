// Command-line values the benchmark programs share.
#ifndef BLOCKTUNE_BENCH_FLAGS_H_
#define BLOCKTUNE_BENCH_FLAGS_H_

#include <cstdio>
#include <optional>
#include <string>

#include "kernels/context.h"

namespace blocktune::bench {

// `--dtype TEXT`: none when empty, else the precision it names; false after
// printing the error (which names the flag and the precisions) otherwise.
inline bool ParseDTypeFlag(const std::string& text, std::optional<DType>* dtype) {
  dtype->reset();
  if (text.empty()) return true;
  auto d = DTypeFromString(text, "--dtype");
  if (!d.ok()) {
    std::fprintf(stderr, "%s\n", d.status().ToString().c_str());
    return false;
  }
  *dtype = *d;
  return true;
}

}  // namespace blocktune::bench

#endif  // BLOCKTUNE_BENCH_FLAGS_H_
