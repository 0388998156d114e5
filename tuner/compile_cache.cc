#include "tuner/compile_cache.h"

#include <utility>

namespace blocktune {

StatusOr<std::string> CompileCache::Get(const std::string& ptx,
                                        const std::string& target,
                                        const Compile& compile, bool* hit) {
  std::string key = target;
  key += '\n';
  key += ptx;
  std::promise<StatusOr<std::string>> promise;
  Result result;
  {
    std::lock_guard lock(mu_);
    if (auto it = images_.find(key); it != images_.end()) {
      ++hits_;
      result = it->second;
    } else {
      ++compiles_;
      images_.emplace(key, promise.get_future().share());
      order_.push_back(std::move(key));
      while (order_.size() > capacity_) {
        images_.erase(order_.front());  // waiters hold their own future
        order_.pop_front();
      }
    }
  }
  if (hit != nullptr) *hit = result.valid();
  if (result.valid()) return result.get();
  StatusOr<std::string> image = compile(ptx, target);
  promise.set_value(image);
  return image;
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
