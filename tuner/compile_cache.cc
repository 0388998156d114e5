#include "tuner/compile_cache.h"

#include <utility>

namespace blocktune {

StatusOr<std::string> CompileCache::Fill(const std::shared_ptr<Entry>& entry,
                                         const std::string& ptx,
                                         const std::string& target,
                                         const Compile& compile) {
  StatusOr<std::string> image = compile(ptx, target);
  std::vector<Later> waiting;
  {
    std::lock_guard lock(mu_);
    entry->image = image;
    entry->done = true;
    waiting.swap(entry->waiting);
  }
  filled_.notify_all();
  for (Later& later : waiting) later(image);
  return image;
}

std::shared_ptr<CompileCache::Entry> CompileCache::FindOrAdd(
    const std::string& ptx, const std::string& target, bool* added) {
  std::string key = target;
  key += '\n';
  key += ptx;
  if (auto it = images_.find(key); it != images_.end()) {
    ++hits_;
    *added = false;
    return it->second;
  }
  ++compiles_;
  *added = true;
  auto entry = std::make_shared<Entry>();
  images_.emplace(key, entry);
  order_.push_back(std::move(key));
  while (order_.size() > capacity_) {
    // An entry being compiled stays alive with its compiling call.
    images_.erase(order_.front());
    order_.pop_front();
  }
  return entry;
}

std::optional<StatusOr<std::string>> CompileCache::GetOrDefer(
    const std::string& ptx, const std::string& target, const Compile& compile,
    Later later) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard lock(mu_);
    bool added = false;
    entry = FindOrAdd(ptx, target, &added);
    if (!added) {
      if (entry->done) return entry->image;
      entry->waiting.push_back(std::move(later));
      return std::nullopt;
    }
  }
  return Fill(entry, ptx, target, compile);
}

StatusOr<std::string> CompileCache::Get(const std::string& ptx,
                                        const std::string& target,
                                        const Compile& compile, bool* hit) {
  std::shared_ptr<Entry> entry;
  {
    std::unique_lock lock(mu_);
    bool added = false;
    entry = FindOrAdd(ptx, target, &added);
    if (hit != nullptr) *hit = !added;
    if (!added) {
      filled_.wait(lock, [&] { return entry->done; });
      return entry->image;
    }
  }
  return Fill(entry, ptx, target, compile);
}

int64_t CompileCache::compiles() const {
  std::lock_guard lock(mu_);
  return compiles_;
}

int64_t CompileCache::hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}

}  // namespace blocktune
