#ifndef BLOCKTUNE_SERVER_TUNED_CACHE_H_
#define BLOCKTUNE_SERVER_TUNED_CACHE_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/tuning_store.h"

namespace blocktune {

// FindTuned's answers by key, valid until the next commit that writes
// tuned answers or models. A reader takes the generation before it reads
// the database and files its answer only if no invalidation came since, so
// a read that raced a commit is never kept. The SQLite store invalidates
// it after its own commits (one daemon owns the file, DESIGN.md); the
// PostgreSQL store also when the store's generation counter moved, which
// any daemon's commit does (TuningStore::Generation).
class TunedCache {
 public:
  static constexpr size_t kMaxEntries = 65536;

  static std::string Key(const Context& ctx, std::string_view device_name,
                         int top) {
    std::string key = ToString(ctx);
    key.append(1, '\0').append(device_name).append(1, '\0');
    return key + std::to_string(top);
  }

  // The answer for `key`, if kept; else nullopt and, in `generation`, the
  // generation a read starting now must file its answer under.
  std::optional<std::vector<TunedRecord>> Get(const std::string& key,
                                              uint64_t* generation) const {
    std::lock_guard lock(mu_);
    *generation = generation_;
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }
  void Put(const std::string& key, uint64_t generation,
           const std::vector<TunedRecord>& answers) {
    std::lock_guard lock(mu_);
    if (generation != generation_) return;
    if (entries_.size() >= kMaxEntries) entries_.clear();
    entries_.emplace(key, answers);
  }
  void Invalidate() {
    std::lock_guard lock(mu_);
    ++generation_;
    entries_.clear();
  }

 private:
  mutable std::mutex mu_;
  uint64_t generation_ = 0;
  std::unordered_map<std::string, std::vector<TunedRecord>> entries_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_TUNED_CACHE_H_
