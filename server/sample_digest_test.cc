// Kernel digests of samples: what KernelDigest covers, the stores keep it,
// and a generator version bump re-labels only the samples whose kernel the
// new generator emits unchanged (server/sample_digest.h).
#include "server/sample_digest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/family.h"
#include "server/both_stores_test.h"
#include "server/store_test_util.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using namespace ::blocktune::testing;  // NOLINT

const KernelFamily& Ffma() { return BlockShapeFamily(Op::kGemm); }

GeneratedKernel Generated(const Context& ctx, const BlockShape& xb) {
  const KernelConfig k = KernelConfig::OfBlockShape(OpOf(ctx), xb);
  auto g = Ffma().Generate(Problem(ctx), k.params, "sm_90");
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : GeneratedKernel();
}

TEST(KernelDigestTest, CoversTheKernelAndItsLaunchButNotItsVersion) {
  const Context ctx = TestGemm(1024, 512, 256);
  const GeneratedKernel a = Generated(ctx, TestShape(64, 64));
  const std::string digest = KernelDigest(a);
  EXPECT_THAT(digest, ::testing::MatchesRegex("[0-9a-f]{16}"));
  EXPECT_EQ(KernelDigest(Generated(ctx, TestShape(64, 64))), digest);
  // Another tile is another kernel.
  EXPECT_NE(KernelDigest(Generated(ctx, TestShape(128, 64))), digest);
  // The same PTX over more programs is another measurement.
  const GeneratedKernel wider = Generated(TestGemm(2048, 512, 256), TestShape(64, 64));
  ASSERT_EQ(wider.ptx, a.ptx);
  EXPECT_NE(KernelDigest(wider), digest);
  GeneratedKernel shared = a;
  shared.dynamic_shared_bytes += 16;
  EXPECT_NE(KernelDigest(shared), digest);
  // The family's name and version are not the kernel.
  GeneratedKernel renamed = a;
  renamed.version += 1;
  renamed.family = "gemm.other";
  EXPECT_EQ(KernelDigest(renamed), digest);
}

SampleRecord Sample(int64_t m, const BlockShape& xb) {
  SampleRecord s = TestSample(1, 0);
  s.context = TestGemm(m, 512, 256);
  s.kernel = KernelConfig::OfBlockShape(Op::kGemm, xb);
  return s;
}

TEST(SampleDigestTest, RegeneratesTheKernelOfTheSamplesDevice) {
  SampleRecord s = Sample(1000, TestShape(64, 64));
  auto digest = RegeneratedDigest(s);
  ASSERT_TRUE(digest.ok()) << digest.status().ToString();
  EXPECT_EQ(*digest, KernelDigest(Generated(s.context, TestShape(64, 64))));
  // An A100's PTX targets sm_80.
  s.device.cc_major = 8;
  auto a100 = RegeneratedDigest(s);
  ASSERT_TRUE(a100.ok()) << a100.status().ToString();
  EXPECT_NE(*a100, *digest);
  s.kernel.family = "gemm.tcgen05";
  EXPECT_EQ(RegeneratedDigest(s).status().code(), StatusCode::kNotFound);
}

TEST(SampleDigestTest, RelabelsOnlyStaleSamplesWhoseKernelIsUnchanged) {
  const int current = Ffma().version();
  ASSERT_GE(current, 1);
  std::vector<SampleRecord> samples;
  // 0: stale, its digest is today's kernel: re-labeled.
  samples.push_back(Sample(1000, TestShape(64, 64)));
  samples.back().kernel_digest = *RegeneratedDigest(samples.back());
  samples.back().kernel.generator_version = current - 1;
  // 1: stale, measured a kernel today's generator no longer emits.
  samples.push_back(Sample(1000, TestShape(64, 64)));
  samples.back().kernel_digest =
      KernelDigest(Generated(samples.back().context, TestShape(128, 64)));
  samples.back().kernel.generator_version = current - 1;
  // 2: stale, no digest: nothing says what it measured.
  samples.push_back(Sample(1000, TestShape(64, 64)));
  samples.back().kernel.generator_version = current - 1;
  // 3: current already.
  samples.push_back(Sample(1000, TestShape(64, 64)));
  samples.back().kernel_digest = *RegeneratedDigest(samples.back());
  // Many, on several threads: every matching one is found.
  for (int i = 0; i < 200; ++i) {
    samples.push_back(Sample(1000 + i, TestShape(64, 64)));
    samples.back().kernel_digest = *RegeneratedDigest(samples.back());
    samples.back().kernel.generator_version = current - 1;
  }
  EXPECT_EQ(RelabelUnchanged(&samples, 4), 201);
  EXPECT_EQ(samples[0].kernel.generator_version, current);
  EXPECT_TRUE(samples[0].kernel.IsCurrent());
  EXPECT_EQ(samples[1].kernel.generator_version, current - 1);
  EXPECT_EQ(samples[2].kernel.generator_version, current - 1);
  EXPECT_EQ(samples[3].kernel.generator_version, current);
  for (size_t i = 4; i < samples.size(); ++i)
    EXPECT_TRUE(samples[i].kernel.IsCurrent()) << i;
  // Again: nothing left to do.
  EXPECT_EQ(RelabelUnchanged(&samples, 4), 0);
}

// gemm.ffma_k writes its generator version into its PTX
// ("// blocktune gemm.ffma_k v4, fp32: ..."): a sample measured under an
// older version whose kernel differs from today's only there is re-labeled;
// one whose code differs too is not.
TEST(SampleDigestTest, RelabelsAKernelThatDiffersOnlyInItsVersionComment) {
  auto family = FindFamily("gemm.ffma_k");
  ASSERT_TRUE(family.ok()) << family.status().ToString();
  const int current = (*family)->version();
  ASSERT_GE(current, 2);
  auto params = (*family)->Parse("LM=16 TM=2 TN=8 WM=4 WN=1 KC=32 ST=4 KG=2");
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  SampleRecord s = TestSample(1, 0);
  s.context = GemmContext{4096, 16, 4096, Layout::kN, Layout::kT, DType::kFp32};
  s.kernel = KernelConfig::Current(**family, *params);
  auto today =
      (*family)->Generate(Problem(s.context), s.kernel.params, s.device.Arch());
  ASSERT_TRUE(today.ok()) << today.status().ToString();
  const std::string now = " gemm.ffma_k v" + std::to_string(current);
  const size_t at = today->ptx.find(now);
  ASSERT_NE(at, std::string::npos) << "the PTX no longer names its version";
  auto measured = [&](int version, bool code_changed) {
    GeneratedKernel k = *today;
    k.ptx.replace(at, now.size(), " gemm.ffma_k v" + std::to_string(version));
    if (code_changed) k.ptx.replace(k.ptx.find("add.u32"), 7, "sub.u32");
    SampleRecord r = s;
    r.kernel.generator_version = version;
    r.kernel_digest = KernelDigest(k);
    return r;
  };
  std::vector<SampleRecord> samples = {
      measured(current - 1, false),  // the same kernel, an older comment
      measured(1, false),            // older still
      measured(current - 1, true),   // the code changed too
  };
  // The digest does see the comment: the plain comparison alone misses it.
  ASSERT_NE(samples[0].kernel_digest, *RegeneratedDigest(samples[0]));
  EXPECT_EQ(RelabelUnchanged(&samples, 2), 2);
  EXPECT_TRUE(samples[0].kernel.IsCurrent());
  EXPECT_TRUE(samples[1].kernel.IsCurrent());
  EXPECT_EQ(samples[2].kernel.generator_version, current - 1);
}

TEST(SampleDigestTest, FillsDigestsOfCurrentSamplesOnly) {
  std::vector<SampleRecord> samples = {Sample(1000, TestShape(64, 64)),
                                       Sample(1000, TestShape(64, 64)),
                                       Sample(1000, TestShape(64, 64))};
  samples[1].kernel.generator_version -= 1;
  samples[2].kernel_digest = "0123456789abcdef";
  EXPECT_EQ(FillMissingDigests(&samples), 1);
  EXPECT_EQ(samples[0].kernel_digest, *RegeneratedDigest(samples[0]));
  EXPECT_EQ(samples[1].kernel_digest, "");  // stale: not today's kernel
  EXPECT_EQ(samples[2].kernel_digest, "0123456789abcdef");
}

TEST(SampleDigestTest, ABadDigestIsRefusedNamingTheField) {
  SampleRecord s = Sample(1000, TestShape(64, 64));
  for (const char* bad : {"0123", "0123456789ABCDEF", "0123456789abcdeg",
                          "0123456789abcdef0"}) {
    s.kernel_digest = bad;
    const Status st = Validate(s, "samples[4]");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(st.message(), HasSubstr("samples[4].kernel_digest must be "
                                        "empty or 16 lowercase hex digits"));
  }
  s.kernel_digest = "0123456789abcdef";
  EXPECT_TRUE(Validate(s, "samples[4]").ok());
}

using SampleDigestStoreTest = BothStoresTest;

TEST_P(SampleDigestStoreTest, StoresKeepEachSamplesDigest) {
  WriteBatch batch;
  batch.samples.push_back(Sample(1000, TestShape(64, 64)));
  batch.samples.back().kernel_digest = "00000000deadbeef";
  batch.samples.push_back(Sample(1001, TestShape(64, 64)));  // unknown
  ASSERT_TRUE(store_->Commit(batch).ok());
  auto samples = store_->ListSamples({});
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), 2u);
  EXPECT_EQ((*samples)[0].kernel_digest, "00000000deadbeef");
  EXPECT_EQ((*samples)[1].kernel_digest, "");
  // A bad one is refused before anything is stored.
  batch.samples[1].kernel_digest = "not hex";
  const Status st = store_->Commit(batch).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("kernel_digest"));
  EXPECT_EQ(store_->ListSamples({})->size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Stores, SampleDigestStoreTest, AllStoreKinds(),
                         StoreKindName);

}  // namespace
}  // namespace blocktune
