#include "tuner/compile_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace blocktune {
namespace {

// Eight threads ask for one text at once: it is compiled once and every
// caller gets its image; another target or text compiles again.
TEST(CompileCacheTest, CompilesEachTextOnceForEveryThreadThatWantsIt) {
  CompileCache cache;
  std::atomic<int> calls{0};
  auto compile = [&](const std::string& ptx, const std::string& target)
      -> StatusOr<std::string> {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return target + ":" + ptx;
  };
  std::vector<std::thread> threads;
  std::atomic<int> hits{0}, right{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      bool hit = false;
      auto image = cache.Get("ptx A", "sm_90", compile, &hit);
      hits += hit;
      right += image.ok() && *image == "sm_90:ptx A";
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(hits, 7);
  EXPECT_EQ(right, 8);
  EXPECT_EQ(*cache.Get("ptx A", "sm_90a", compile), "sm_90a:ptx A");
  EXPECT_EQ(*cache.Get("ptx B", "sm_90", compile), "sm_90:ptx B");
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(cache.compiles(), 3);
  EXPECT_EQ(cache.hits(), 7);
}

// An error is kept like an image; the oldest text leaves a full cache.
TEST(CompileCacheTest, KeepsErrorsAndForgetsTheOldest) {
  CompileCache cache(2);
  int calls = 0;
  auto compile = [&](const std::string& ptx,
                     const std::string&) -> StatusOr<std::string> {
    ++calls;
    if (ptx == "bad") return Internal("ptxas: syntax error");
    return ptx;
  };
  EXPECT_EQ(cache.Get("bad", "sm_90", compile).status().code(),
            StatusCode::kInternal);
  EXPECT_EQ(cache.Get("bad", "sm_90", compile).status().message(),
            "ptxas: syntax error");
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(cache.Get("one", "sm_90", compile).ok());
  ASSERT_TRUE(cache.Get("two", "sm_90", compile).ok());  // "bad" leaves
  EXPECT_EQ(calls, 3);
  ASSERT_TRUE(cache.Get("one", "sm_90", compile).ok());
  EXPECT_EQ(calls, 3);
  EXPECT_FALSE(cache.Get("bad", "sm_90", compile).ok());
  EXPECT_EQ(calls, 4);
}

// A caller that finds the text being compiled is not held up: its
// continuation runs on the compiling thread, with the image, once.
TEST(CompileCacheTest, DefersToTheThreadThatCompiles) {
  CompileCache cache;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> calls{0};
  auto compile = [&](const std::string& ptx,
                     const std::string&) -> StatusOr<std::string> {
    ++calls;
    released.wait();
    return "image of " + ptx;
  };
  std::thread first([&] {
    auto image = cache.GetOrDefer("ptx", "sm_90", compile, nullptr);
    ASSERT_TRUE(image.has_value());
    EXPECT_EQ(**image, "image of ptx");
  });
  while (cache.compiles() == 0) std::this_thread::yield();
  std::vector<std::string> later;
  std::thread::id ran_on;
  for (int i = 0; i < 3; ++i) {
    auto now = cache.GetOrDefer("ptx", "sm_90", compile,
                                [&](const StatusOr<std::string>& image) {
                                  later.push_back(*image);
                                  ran_on = std::this_thread::get_id();
                                });
    EXPECT_FALSE(now.has_value()) << "a deferred call returns at once";
  }
  EXPECT_TRUE(later.empty());
  const std::thread::id compiler = first.get_id();
  release.set_value();
  first.join();
  EXPECT_EQ(later, std::vector<std::string>(3, "image of ptx"));
  EXPECT_EQ(ran_on, compiler);
  EXPECT_EQ(calls, 1);
  // Compiled: answered now, no continuation kept.
  auto now = cache.GetOrDefer("ptx", "sm_90", compile, nullptr);
  ASSERT_TRUE(now.has_value());
  EXPECT_EQ(**now, "image of ptx");
}

}  // namespace
}  // namespace blocktune
