// The worker's cubins by PTX text. A campaign measures one kernel in
// several contexts (server/campaign_plan.h FamilyRotation); the families
// generate the same PTX for them, so the worker compiles it once. The
// compile threads of a worker take a group's candidates at the same time:
// the first compiles, the others wait for its result instead of compiling
// the same text again.
#ifndef BLOCKTUNE_TUNER_COMPILE_CACHE_H_
#define BLOCKTUNE_TUNER_COMPILE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kernels/status.h"

namespace blocktune {

class CompileCache {
 public:
  using Compile = std::function<StatusOr<std::string>(
      const std::string& ptx, const std::string& target)>;

  // Keeps the last `capacity` texts (oldest first out).
  explicit CompileCache(size_t capacity = 256) : capacity_(capacity) {}

  // The image of (ptx, target), from `compile` on the first call (errors
  // too: the same text fails the same way) and from the cache after.
  // `*hit`: the image was compiled, or is being compiled, by another call.
  // Thread-safe; `compile` runs outside the lock.
  StatusOr<std::string> Get(const std::string& ptx, const std::string& target,
                            const Compile& compile, bool* hit = nullptr);

  int64_t compiles() const;
  int64_t hits() const;

 private:
  using Result = std::shared_future<StatusOr<std::string>>;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Result> images_;
  std::deque<std::string> order_;  // keys, oldest first
  int64_t compiles_ = 0;
  int64_t hits_ = 0;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_COMPILE_CACHE_H_
