// The real worker backend on a real GPU (label gpu): generated kernels
// measure ok and pass the float64 check; a kernel that computes the wrong
// thing is a wrong_result with no time. Skips where there is no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/cuda_driver.h"
#include "tuner/worker.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;

class GpuWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto driver = cuda::Driver::Get();
    if (!driver.ok() || (*driver)->device_count() == 0) {
      GTEST_SKIP() << (driver.ok() ? "no GPU: no device" : driver.status().message());
    }
    GpuBackendOptions options;
    options.buffer_bytes = int64_t{256} << 20;
    backend_ = NewGpuBackend(0, options);
    hello_ = backend_->Open();
    ASSERT_TRUE(hello_.error().empty()) << hello_.error();
  }

  tuner::WorkResult Run(const std::string& ctx, std::vector<int64_t> xb,
                        PreparedSample* prepared = nullptr) {
    PreparedSample s;
    s.item.set_seq(1);
    s.item.set_context(ctx);
    for (int64_t v : xb) s.item.add_block_shape(v);
    EXPECT_TRUE(ParseWorkItem(&s)) << s.status.message();
    backend_->Prepare(&s);
    if (prepared != nullptr) *prepared = s;
    bool broken = false;
    tuner::WorkResult r = backend_->Measure(s, &broken);
    EXPECT_FALSE(broken) << r.error();
    return r;
  }

  std::unique_ptr<WorkerBackend> backend_;
  tuner::WorkerHello hello_;
};

TEST_F(GpuWorkerTest, GeneratedKernelsMeasureAndPassTheCheck) {
  std::cout << "GPU: " << hello_.name() << ", compiler " << hello_.ptxas_version()
            << "\n";
  const std::pair<std::string, std::vector<int64_t>> cases[] = {
      {"gemm m=1024 n=1024 k=1024 layout=NN dtype=fp32", {64, 64, 4, 4, 8, 1}},
      {"gemm m=1000 n=77 k=3001 layout=TN dtype=fp32", {32, 32, 4, 2, 8, 4}},
      {"gemm m=4096 n=16 k=4096 layout=NT dtype=fp32", {64, 16, 4, 2, 16, 8}},
      {"gemm m=1 n=1 k=1 layout=TT dtype=fp32", {16, 16, 1, 1, 4, 1}},
      {"conv n=2 h=28 w=28 c=64 k=96 r=3 s=3 pad=1x1 stride=1x1 dilation=1x1 "
       "dtype=fp32",
       {64, 32, 4, 4, 8, 1}},
      {"conv n=1 h=17 w=23 c=5 k=7 r=5 s=3 pad=2x0 stride=2x1 dilation=1x2 "
       "dtype=fp32",
       {32, 8, 2, 2, 4, 2}},
  };
  for (const auto& [ctx, xb] : cases) {
    SCOPED_TRACE(ctx);
    tuner::WorkResult r = Run(ctx, xb);
    EXPECT_EQ(r.status(), "ok") << r.error();
    EXPECT_TRUE(r.verified());
    EXPECT_LT(r.max_error(), 1e-5);
    EXPECT_GT(r.median_s(), 0);
    EXPECT_GE(r.repetitions(), 1);
    EXPECT_GT(r.sm_clock_mhz(), 500);
    EXPECT_LT(r.sm_clock_mhz(), 3000);
    std::printf("  %-70s %9.2f us  spread %.3f  reps %lld  %.0f MHz  err %.2e\n",
                ctx.c_str(), r.median_s() * 1e6, r.spread(),
                static_cast<long long>(r.repetitions()), r.sm_clock_mhz(),
                r.max_error());
  }
}

TEST_F(GpuWorkerTest, AWrongKernelIsAWrongResultNeverATime) {
  // The kernel of an NT GEMM run as NN: it reads B transposed.
  PreparedSample nt;
  Run("gemm m=512 n=512 k=512 layout=NT dtype=fp32", {64, 64, 4, 4, 8, 1}, &nt);
  PreparedSample wrong;
  wrong.item.set_seq(2);
  wrong.item.set_context("gemm m=512 n=512 k=512 layout=NN dtype=fp32");
  for (int64_t v : {64, 64, 4, 4, 8, 2}) wrong.item.add_block_shape(v);
  ASSERT_TRUE(ParseWorkItem(&wrong));
  wrong.kernel = nt.kernel;
  wrong.image = nt.image;
  bool broken = false;
  tuner::WorkResult r = backend_->Measure(wrong, &broken);
  EXPECT_EQ(r.status(), "wrong_result") << r.error();
  EXPECT_EQ(r.median_s(), 0);
  EXPECT_THAT(r.error(), HasSubstr("max relative error"));
}

}  // namespace
}  // namespace blocktune
