// Bounds the CPU that uncached queries take (issue 21: four batches of
// 2,000 new shapes held both cores for 120 s and cached p99 went from 0.8 to
// 13.5 ms). Every surrogate search runs on one of a fixed number of search
// threads, niced below the gRPC threads; cached queries never enter the
// pool, and the scheduler lets them preempt a running search, so their
// latency stays low however many searches wait.
//
// Waiting is bounded twice: at most `max_waiting` searches wait for a
// thread (more are refused at once, so the daemon's threads are not all
// parked here), and none waits past its call's deadline.
//
// Thread-safe.
#ifndef BLOCKTUNE_SERVER_SEARCH_POOL_H_
#define BLOCKTUNE_SERVER_SEARCH_POOL_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/status.h"

namespace blocktune {

// How much lower the search threads run than the rest of the daemon: at
// nice +10 a thread gets about a tenth of the CPU of a nice 0 thread that
// competes with it (the kernel's CFS weights 110 against 1024).
inline constexpr int kSearchNice = 10;

// Searches that may wait for a thread unless the daemon is told otherwise.
inline constexpr int kDefaultSearchQueue = 64;

class SearchPool {
 public:
  // `threads` >= 1 search threads; `max_waiting` >= 0 searches may wait.
  SearchPool(int threads, int max_waiting);
  // Waits for the running searches; queued ones are answered UNAVAILABLE.
  ~SearchPool();
  SearchPool(const SearchPool&) = delete;
  SearchPool& operator=(const SearchPool&) = delete;

  // Runs `work` on a search thread and returns once it has run (a search
  // that has started is not abandoned: it is bounded by the search range).
  // RESOURCE_EXHAUSTED when max_waiting searches already wait;
  // DEADLINE_EXCEEDED when `deadline` passes before a thread is free.
  Status Run(const std::function<void()>& work,
             std::chrono::system_clock::time_point deadline);

  int threads() const { return static_cast<int>(threads_.size()); }
  int max_waiting() const { return max_waiting_; }

  // Search threads for this machine when none are given: all cores
  // together, each search scoring on ScoringThreads() of them.
  static int DefaultThreads();

 private:
  struct Job {
    const std::function<void()>* work;
    bool started = false;
    bool done = false;
    Status status;  // an exception the work threw
  };
  void Loop();

  const int max_waiting_;
  std::mutex mu_;
  std::condition_variable wake_;      // a job was queued, or stopping
  std::condition_variable finished_;  // a job started or finished
  std::deque<Job*> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_SEARCH_POOL_H_
