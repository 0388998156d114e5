// gemm.wgmma_rs without a GPU: the family seam, its rules and messages, the
// swap of an NN problem (tensor maps, entry parameters, the shape in the
// problem's frame) and the generated text. ptxas over sampled kernels is
// family_ptxas_test's (every registered family).
#include "kernels/gemm_wgmma_rs.h"

#include <gtest/gtest.h>

#include "kernels/family.h"

namespace blocktune {
namespace {

Problem Gemm(DType dtype, int64_t m, int64_t n, int64_t k, Layout la,
             Layout lb) {
  GemmContext g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.layout_a = la;
  g.layout_b = lb;
  g.dtype = dtype;
  return Problem(g);
}

bool Contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

const KernelFamily& Rs() { return **FindFamily("gemm.wgmma_rs"); }

TEST(GemmWgmmaRsTest, FamilySeamTakesTf32NnAndTtOnly) {
  const KernelFamily& f = Rs();
  EXPECT_EQ(f.min_compute_capability(), 90);
  EXPECT_TRUE(f.Implements(DType::kTf32));
  EXPECT_FALSE(f.Implements(DType::kBf16));
  EXPECT_FALSE(f.Implements(DType::kFp32));
  for (Layout l : {Layout::kN, Layout::kT}) {
    const Problem p = Gemm(DType::kTf32, 4096, 2048, 1024, l, l);
    auto d = f.Default(p, KernelLimits{});
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(f.Format(*d), "bm=128 bn=256 bk=32 st=4 wg=2 gm=8 kg=1 cm=1");
    auto k = f.Generate(p, *d, "sm_90");
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    EXPECT_EQ(k->family, "gemm.wgmma_rs");
    EXPECT_EQ(k->target, "sm_90a");
    EXPECT_EQ(k->entry, "blocktune_gemm_wgmma_rs");
  }
  for (auto [la, lb] : {std::pair{Layout::kN, Layout::kT},
                        std::pair{Layout::kT, Layout::kN}}) {
    const Problem p = Gemm(DType::kTf32, 256, 256, 256, la, lb);
    const Status s = f.CanImplement(p, f.DefaultCandidates()[0], KernelLimits{});
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
    EXPECT_TRUE(Contains(s.message(), "precision_layout")) << s.message();
    EXPECT_TRUE(Contains(s.message(), "NN or TT")) << s.message();
  }
  EXPECT_EQ(f.CanImplement(Gemm(DType::kBf16, 64, 64, 64, Layout::kN,
                                Layout::kN),
                           f.DefaultCandidates()[0], KernelLimits{})
                .code(),
            StatusCode::kInvalidArgument);
  // Not on an A100.
  KernelLimits a100;
  a100.compute_capability = 80;
  const Status s = f.CanImplement(
      Gemm(DType::kTf32, 256, 256, 256, Layout::kN, Layout::kN),
      f.DefaultCandidates()[0], a100);
  EXPECT_TRUE(Contains(s.message(), "compute_capability")) << s.message();
}

// NN runs as C^T = B^T A^T: M and N exchange, the maps are of B then A,
// and the entry's M and N slots take N and M. The shape is the problem's.
TEST(GemmWgmmaRsTest, NnIsTheSwappedProduct) {
  const KernelFamily& f = Rs();
  Problem p = Gemm(DType::kTf32, 3000, 1000, 512, Layout::kN, Layout::kN);
  p.lda = 520;
  p.ldb = 1004;
  p.ldc = 1008;
  const Problem kp = WgmmaRsKernelProblem(p);
  const GemmContext& g = std::get<GemmContext>(kp.ctx);
  EXPECT_EQ(g.m, 1000);
  EXPECT_EQ(g.n, 3000);
  EXPECT_EQ(g.layout_a, Layout::kT);
  EXPECT_EQ(g.layout_b, Layout::kT);
  EXPECT_EQ(kp.lda, 1004);
  EXPECT_EQ(kp.ldb, 520);
  EXPECT_EQ(kp.ldc, 1008);
  auto params = f.Parse("bm=128 bn=256 bk=32 st=4 wg=2");
  ASSERT_TRUE(params.ok());
  const ConfigShape shape = f.Shape(p, *params);
  EXPECT_EQ(shape.tile_m, 256);  // the kernel's bn tiles the problem's M
  EXPECT_EQ(shape.tile_n, 128);
  EXPECT_EQ(shape.programs, 8 * 12);  // ceil(1000/128) x ceil(3000/256)
  auto k = f.Generate(p, *params, "sm_90a");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ASSERT_EQ(k->tensor_maps.size(), 3u);
  EXPECT_EQ(k->tensor_maps[0].operand, 'B');
  EXPECT_EQ(k->tensor_maps[1].operand, 'A');
  EXPECT_EQ(k->tensor_maps[2].operand, 'C');
  // B (512 x 1000, ldb 1004) read M-major: boxes of 32 columns by bk rows.
  EXPECT_EQ(k->tensor_maps[0].map.dims[0], 1000u);
  EXPECT_EQ(k->tensor_maps[0].map.dims[1], 512u);
  EXPECT_EQ(k->tensor_maps[0].map.strides[0], 1004u * 4);
  EXPECT_EQ(k->tensor_maps[0].map.box[1], 32u);
  // A (3000 x 512, lda 520) read K-major: 32 of K by bn rows.
  EXPECT_EQ(k->tensor_maps[1].map.dims[0], 512u);
  EXPECT_EQ(k->tensor_maps[1].map.dims[1], 3000u);
  EXPECT_EQ(k->tensor_maps[1].map.box[1], 256u);
  // C as it is (never read by the kernel, encoded all the same).
  EXPECT_EQ(k->tensor_maps[2].map.dims[0], 1000u);
  EXPECT_EQ(k->tensor_maps[2].map.dims[1], 3000u);
  const auto slot = [&](int offset) {
    for (const KernelParam& q : k->entry_params)
      if (q.offset == offset) return std::string(q.name);
    return std::string();
  };
  EXPECT_EQ(slot(264), "N");
  EXPECT_EQ(slot(268), "M");
  EXPECT_EQ(k->grid[0], 8u * 12u);
  // A from registers, rounded; C stored transposed from the registers.
  EXPECT_TRUE(Contains(k->ptx, "cvt.rna.tf32.f32"));
  EXPECT_TRUE(Contains(k->ptx, "wgmma.mma_async.sync.aligned.m64n256k8.f32."
                               "tf32.tf32 {%acc0"));
  EXPECT_TRUE(Contains(k->ptx, "}, {%fa0, %fa1, %fa2, %fa3}, %dbk, %pone, 1, 1;"));
  EXPECT_TRUE(Contains(k->ptx, "C stored transposed"));
  EXPECT_FALSE(Contains(k->ptx, "global.shared::cta.bulk_group"));

  // TT is computed as it is, with gemm.wgmma's TMA-store epilogue.
  const Problem tt = Gemm(DType::kTf32, 3000, 1000, 512, Layout::kT, Layout::kT);
  auto kt = f.Generate(tt, *params, "sm_90a");
  ASSERT_TRUE(kt.ok());
  EXPECT_EQ(kt->tensor_maps[0].operand, 'A');
  EXPECT_EQ(slot(264), "N");  // (of the NN kernel, unchanged)
  EXPECT_TRUE(Contains(kt->ptx, "global.shared::cta.bulk_group"));
  EXPECT_FALSE(Contains(kt->ptx, "C stored transposed"));
  EXPECT_EQ(f.Shape(tt, *params).tile_m, 128);
}

TEST(GemmWgmmaRsTest, RulesRefuseWithTheirNumbers) {
  const KernelFamily& f = Rs();
  const Problem nn = Gemm(DType::kTf32, 512, 512, 4096, Layout::kN, Layout::kN);
  const Problem tt = Gemm(DType::kTf32, 512, 512, 4096, Layout::kT, Layout::kT);
  auto split = f.Parse("bm=64 bn=64 bk=32 st=4 wg=1 kg=4");
  ASSERT_TRUE(split.ok());
  Status s = f.CanImplement(nn, *split, KernelLimits{});
  EXPECT_TRUE(Contains(s.message(), "swap_split")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "kg 4")) << s.message();
  EXPECT_TRUE(f.CanImplement(tt, *split, KernelLimits{}).ok());
  // Two banks of A fragments count against the registers: 128 x 128 over
  // two consumers fits gemm.wgmma with bk 64 but not here.
  auto regs = f.Parse("bm=256 bn=128 bk=32 st=3 wg=2");
  ASSERT_TRUE(regs.ok());
  s = f.CanImplement(tt, *regs, KernelLimits{});
  EXPECT_TRUE(Contains(s.message(), "registers")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "64 A fragment registers")) << s.message();
  auto pair = f.Parse("bm=128 bn=64 bk=64 st=3 wg=1 cm=2");
  ASSERT_TRUE(pair.ok());
  s = f.CanImplement(tt, *pair, KernelLimits{});
  EXPECT_TRUE(Contains(s.message(), "cluster_box")) << s.message();
  auto big = f.Parse("bm=256 bn=256 bk=64 st=4 wg=2");
  ASSERT_TRUE(big.ok());
  s = f.CanImplement(tt, *big, KernelLimits{});
  EXPECT_TRUE(Contains(s.message(), "shared_memory")) << s.message();
  Problem odd = nn;
  odd.lda = 4098;
  s = f.CanImplement(odd, f.DefaultCandidates()[0], KernelLimits{});
  EXPECT_TRUE(Contains(s.message(), "alignment")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "lda 4098")) << s.message();
}

// The configurations gemm_wgmma_gpu_test runs pass the rules on an H100.
TEST(GemmWgmmaRsTest, TheGpuTestsConfigurationsPassTheRules) {
  const char* configs[] = {
      "bm=64 bn=64 bk=32 st=2 wg=1",   "bm=128 bn=128 bk=32 st=4 wg=1",
      "bm=128 bn=256 bk=32 st=4 wg=2", "bm=128 bn=64 bk=64 st=3 wg=1",
      "bm=64 bn=128 bk=128 st=2 wg=1", "bm=256 bn=64 bk=32 st=4 wg=2",
      "bm=128 bn=64 bk=32 st=4 wg=1 cm=2", "bm=128 bn=128 bk=32 st=3 wg=1",
      "bm=64 bn=64 bk=32 st=4 wg=1"};
  const KernelFamily& f = Rs();
  for (Layout l : {Layout::kN, Layout::kT}) {
    Problem p = Gemm(DType::kTf32, 1000, 1023, 515, l, l);
    p.lda = p.ldb = p.ldc = 1024;  // as the GPU test rounds them
    for (const char* c : configs) {
      auto params = f.Parse(c);
      ASSERT_TRUE(params.ok()) << c;
      EXPECT_TRUE(f.CanImplement(p, *params, KernelLimits{}).ok())
          << c << ": " << f.CanImplement(p, *params, KernelLimits{}).message();
    }
  }
}

}  // namespace
}  // namespace blocktune
