#include "server/search_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "models/surrogate.h"
#include "server/log.h"

namespace blocktune {

SearchPool::SearchPool(int threads, int max_waiting)
    : max_waiting_(std::max(0, max_waiting)) {
  for (int i = 0; i < std::max(1, threads); ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

SearchPool::~SearchPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  finished_.notify_all();
  for (std::thread& t : threads_) t.join();
}

int SearchPool::DefaultThreads() {
  const int cores =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, ScoringThreads()));
}

Status SearchPool::Run(const std::function<void()>& work,
                       std::chrono::system_clock::time_point deadline) {
  Job job{&work};
  std::unique_lock lock(mu_);
  if (stopping_) return Unavailable("blocktuned is shutting down");
  if (static_cast<int>(queue_.size()) >= max_waiting_) {
    return ResourceExhausted(
        std::to_string(queue_.size()) + " uncached queries already wait for " +
        std::to_string(threads_.size()) +
        " search thread(s), the most that may wait (--search-queue " +
        std::to_string(max_waiting_) +
        "); retry later, or send new contexts in fewer calls at a time");
  }
  queue_.push_back(&job);
  wake_.notify_one();
  auto leave_queue = [&] {
    queue_.erase(std::find(queue_.begin(), queue_.end(), &job));
  };
  // Waits to the deadline while queued; once started, to the end.
  const bool no_deadline =
      deadline == std::chrono::system_clock::time_point::max();
  while (!job.done) {
    if (job.started) {
      finished_.wait(lock);
    } else if (stopping_) {
      leave_queue();
      return Unavailable("blocktuned is shutting down");
    } else if (no_deadline) {
      finished_.wait(lock);
    } else if (finished_.wait_until(lock, deadline) ==
                   std::cv_status::timeout &&
               !job.started && !stopping_) {
      leave_queue();
      return DeadlineExceeded(
          "the call's deadline passed while its uncached query waited for "
          "one of " +
          std::to_string(threads_.size()) + " search thread(s), all busy");
    }
  }
  return job.status;
}

void SearchPool::Loop() {
  // Linux nices one thread with its kernel id; threads the search starts
  // (libtorch scoring) inherit the value.
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)),
                  kSearchNice) != 0) {
    BT_LOG(kWarning) << "cannot lower the search thread's priority; cached "
                        "queries may wait behind searches";
  }
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job* job = queue_.front();
    queue_.pop_front();
    job->started = true;
    lock.unlock();
    finished_.notify_all();
    Status status;
    try {
      (*job->work)();
    } catch (const std::exception& e) {
      status = Internal(std::string("search failed: ") + e.what());
    }
    lock.lock();
    job->status = std::move(status);
    job->done = true;
    finished_.notify_all();
  }
}

}  // namespace blocktune
