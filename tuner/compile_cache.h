// The worker's cubins by PTX text. A campaign measures one kernel in
// several contexts (server/campaign_plan.h FamilyRotation); the families
// generate the same PTX for them, so the worker compiles it once. The
// compile threads of a worker take a group's candidates at the same time:
// the first compiles; the others leave a continuation with it (GetOrDefer)
// and go on to other work, since a compile thread that waited would be a
// core idle (on an H100 host with 4 contexts per kernel, three of every
// four threads waited, and the campaign ran at a quarter of its cores).
#ifndef BLOCKTUNE_TUNER_COMPILE_CACHE_H_
#define BLOCKTUNE_TUNER_COMPILE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <condition_variable>
#include <string>
#include <unordered_map>
#include <vector>

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

  // Like Get, but where another call is compiling the text now, `later`
  // is kept and called with the image by that call's thread once it has
  // it, and GetOrDefer answers nullopt at once.
  using Later = std::function<void(const StatusOr<std::string>&)>;
  std::optional<StatusOr<std::string>> GetOrDefer(const std::string& ptx,
                                                  const std::string& target,
                                                  const Compile& compile,
                                                  Later later);

  int64_t compiles() const;
  int64_t hits() const;

 private:
  struct Entry {
    bool done = false;
    StatusOr<std::string> image = Internal("not compiled yet");
    std::vector<Later> waiting;  // until done
  };
  // Under mu_: the entry of (ptx, target), made when there is none
  // (*added), the oldest leaving a full cache.
  std::shared_ptr<Entry> FindOrAdd(const std::string& ptx,
                                   const std::string& target, bool* added);
  // Compiles for the Entry just made by this call, then hands the image
  // to its continuations.
  StatusOr<std::string> Fill(const std::shared_ptr<Entry>& entry,
                             const std::string& ptx, const std::string& target,
                             const Compile& compile);
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable filled_;
  std::unordered_map<std::string, std::shared_ptr<Entry>> images_;
  std::deque<std::string> order_;  // keys, oldest first
  int64_t compiles_ = 0;
  int64_t hits_ = 0;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_COMPILE_CACHE_H_
