// The driver layer: on a machine without a GPU it reports "no GPU" and
// nothing else; on a GPU (ctest label gpu) it loads, runs and times a
// kernel, and reports JIT errors with their log.
#include "kernels/cuda_driver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace blocktune::cuda {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// out[i] = 2 * i for i < n.
constexpr char kTwicePtx[] = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry twice(.param .u64 out, .param .u32 n)
{
  .reg .pred p;
  .reg .b32 r<5>;
  .reg .b64 rd<4>;
  ld.param.u64 rd1, [out];
  ld.param.u32 r1, [n];
  mov.u32 r2, %ctaid.x;
  mov.u32 r3, %ntid.x;
  mov.u32 r4, %tid.x;
  mad.lo.s32 r2, r2, r3, r4;
  setp.ge.u32 p, r2, r1;
  @p bra DONE;
  cvta.to.global.u64 rd2, rd1;
  mul.wide.u32 rd3, r2, 4;
  add.s64 rd2, rd2, rd3;
  shl.b32 r3, r2, 1;
  st.global.u32 [rd2], r3;
DONE:
  ret;
}
)";

TEST(CudaDriverTest, EitherAGpuOrAClearNoGpu) {
  auto driver = Driver::Get();
  if (driver.ok()) {
    EXPECT_GT((*driver)->device_count(), 0);
    EXPECT_GT((*driver)->version(), 0);
    return;
  }
  EXPECT_EQ(driver.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(driver.status().message(), StartsWith("no GPU: "));
  // Everything else says the same, and nothing crashes.
  EXPECT_THAT(Context::Open(0).status().message(), StartsWith("no GPU: "));
  EXPECT_THAT(Module::Load(kTwicePtx).status().message(),
              StartsWith("no GPU: "));
  EXPECT_THAT(DeviceBuffer::Allocate(16).status().message(),
              StartsWith("no GPU: "));
  EXPECT_THAT(Event::Create().status().message(), StartsWith("no GPU: "));
}

class CudaGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto driver = Driver::Get();
    if (!driver.ok()) GTEST_SKIP() << driver.status().message();
    auto ctx = Context::Open(0);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    ctx_ = std::move(*ctx);
  }
  std::unique_ptr<Context> ctx_;
};

TEST_F(CudaGpuTest, FingerprintAndLimitsAreReadOffTheDevice) {
  Driver* driver = *Driver::Get();
  auto fp = driver->Fingerprint(0);
  ASSERT_TRUE(fp.ok()) << fp.status().ToString();
  EXPECT_TRUE(Validate(*fp).ok()) << Validate(*fp).ToString();
  auto limits = driver->Limits(0);
  ASSERT_TRUE(limits.ok());
  EXPECT_EQ(limits->sm_count, fp->sm_count);
  EXPECT_GE(limits->max_shared_per_block_optin, limits->max_shared_per_block);
  EXPECT_EQ(limits->max_threads_per_block, 1024);
  std::cout << "device 0: " << ToString(*fp) << ", shared/block opt-in "
            << limits->max_shared_per_block_optin << " B, L2 "
            << limits->l2_bytes << " B\n";
  EXPECT_EQ(driver->Fingerprint(driver->device_count()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(CudaGpuTest, LoadsRunsAndTimesAKernel) {
  auto module = Module::Load(kTwicePtx);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto fn = (*module)->GetFunction("twice");
  ASSERT_TRUE(fn.ok()) << fn.status().ToString();
  EXPECT_GT(fn->registers, 0);
  EXPECT_EQ(fn->local_bytes, 0);

  const uint32_t n = 1000;
  auto out = DeviceBuffer::Allocate(n * 4);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->Fill32(0x7fc00000).ok());  // NaN: unwritten shows
  auto start = Event::Create();
  auto stop = Event::Create();
  ASSERT_TRUE(start.ok() && stop.ok());
  uint64_t address = out->address();
  uint32_t count = n;
  ASSERT_TRUE((*start)->Record().ok());
  Status launched = Launch(*fn, {(n + 127) / 128}, {128}, 0, {&address, &count});
  ASSERT_TRUE(launched.ok()) << launched.ToString();
  ASSERT_TRUE((*stop)->Record().ok());
  ASSERT_TRUE((*stop)->Synchronize().ok());
  auto ms = (*stop)->MillisecondsSince(**start);
  ASSERT_TRUE(ms.ok()) << ms.status().ToString();
  EXPECT_GE(*ms, 0.f);
  std::vector<uint32_t> host(n);
  ASSERT_TRUE(out->CopyToHost(host.data(), n * 4).ok());
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(host[i], 2 * i) << i;
}

TEST_F(CudaGpuTest, ErrorsCarryTheDriverMessageAndJitLog) {
  std::string bad = kTwicePtx;
  bad.replace(bad.find("shl.b32"), 7, "shl.b99");
  auto module = Module::Load(bad);
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(module.status().message(), HasSubstr("cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX"));
  EXPECT_THAT(module.status().message(),
              HasSubstr("line 21; error   : Unknown modifier '.b99'"));

  auto good = Module::Load(kTwicePtx);
  ASSERT_TRUE(good.ok());
  EXPECT_THAT((*good)->GetFunction("nope").status().message(),
              HasSubstr("CUDA_ERROR_NOT_FOUND"));
  auto fn = (*good)->GetFunction("twice");
  uint64_t address = 0;
  uint32_t count = 0;
  Status too_many = Launch(*fn, {1}, {2048}, 0, {&address, &count});
  EXPECT_THAT(too_many.message(), HasSubstr("cuLaunchKernel: CUDA_ERROR_INVALID_VALUE"));
}

}  // namespace
}  // namespace blocktune::cuda
