// gemm.mma without a GPU: parameters, rules, generated text, and ptxas over
// sampled kernels per precision for sm_90 and sm_80 (no spills for any
// configuration CanImplementMma accepts). Skips the ptxas part where no
// ptxas is installed.
//
// Sample size: BLOCKTUNE_MMA_PTXAS_SAMPLES kernels per precision (default
// 100, each assembled for sm_90 and sm_80, ptxas on every core: about two
// minutes on a busy 2-core machine; 300 per precision took 300 s for bf16
// there, so the acceptance run of 300 is BLOCKTUNE_MMA_PTXAS_SAMPLES=300).
#include "kernels/gemm_mma.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <thread>

namespace blocktune {
namespace {

MmaProblem Problem(MmaPrecision prec, int64_t m, int64_t n, int64_t k,
                   Layout la, Layout lb) {
  MmaProblem p;
  p.precision = prec;
  p.ctx.m = m;
  p.ctx.n = n;
  p.ctx.k = k;
  p.ctx.layout_a = la;
  p.ctx.layout_b = lb;
  p.ctx.dtype = StorageType(prec);
  return p;
}

TEST(GemmMmaTest, ParamsRoundTripAndValidate) {
  MmaParams p;
  p.bm = 64;
  p.bn = 16;
  p.warps_m = 2;
  p.warps_n = 2;
  p.kg = 4;
  auto q = MmaParamsFromString(ToString(p));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, p);
  EXPECT_FALSE(MmaParamsFromString("bm=64 zz=3").ok());
  EXPECT_TRUE(ValidateMmaParams(p).ok());
  p.bm = 48;
  EXPECT_FALSE(ValidateMmaParams(p).ok());
  p.bm = 16;
  p.warps_m = 2;  // warp tile 8 rows: too small
  EXPECT_FALSE(ValidateMmaParams(p).ok());
  EXPECT_EQ(MmaParamDomains().size(), 9u);
}

TEST(GemmMmaTest, UnalignedLeadingDimensionsUseNarrowCopies) {
  MmaProblem p =
      Problem(MmaPrecision::kBf16, 1023, 4097, 515, Layout::kN, Layout::kN);
  MmaParams params;
  ASSERT_TRUE(CanImplementMma(p, params).ok());
  // lda 515, ldb 4097 (odd): 2-byte loads through registers for both.
  auto k = GenerateGemmMma(p, params);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->a_copy_bytes, 2);
  EXPECT_EQ(k->b_copy_bytes, 2);
  EXPECT_EQ(k->align_elements, 1);
  EXPECT_NE(k->ptx.find("ld.global.nc.b16"), std::string::npos);
  EXPECT_NE(k->ptx.find("st.shared.v4.b32"), std::string::npos);
  EXPECT_EQ(k->ptx.find("cp.async.cg"), std::string::npos);
  // Even, 4-element and 8-element multiples: 4-, 8- and 16-byte copies.
  const std::pair<int64_t, int> widths[] = {
      {514, 4}, {516, 8}, {520, 16}, {1026, 4}};
  for (const auto& [ld, bytes] : widths) {
    p.lda = ld;
    p.ldb = 4104;
    k = GenerateGemmMma(p, params);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    EXPECT_EQ(k->a_copy_bytes, bytes) << "lda " << ld;
    EXPECT_EQ(k->b_copy_bytes, 16);
    if (bytes < 16) {
      EXPECT_NE(k->ptx.find("cp.async.ca.shared.global"), std::string::npos);
      EXPECT_NE(k->ptx.find("], " + std::to_string(bytes) + ", %szq;"),
                std::string::npos);
    }
  }
  // tf32: 4-byte elements, never narrower than 4-byte copies.
  MmaProblem t =
      Problem(MmaPrecision::kTf32, 64, 64, 1003, Layout::kN, Layout::kT);
  k = GenerateGemmMma(t, params);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->a_copy_bytes, 4);
  EXPECT_EQ(k->ptx.find("ld.global.nc.b16"), std::string::npos);
}

// gemm.mma_pk: only operands whose rows are not 16-byte aligned are packed,
// each in its own layout with its rows padded to 16 bytes, after gemm.mma's
// own part of the workspace; the main loop then reads 16-byte chunks.
TEST(GemmMmaTest, PackingPadsOnlyTheUnalignedRowsAfterTheSplitsPartials) {
  // bf16 1023 x 4097 x 520 NN: A's rows (K = 520: 1,040 bytes) are aligned,
  // B's (N = 4097) are not.
  MmaProblem p =
      Problem(MmaPrecision::kBf16, 1023, 4097, 520, Layout::kN, Layout::kN);
  MmaParams params;
  params.kg = 4;  // partial sums (reduce entry) first in the workspace
  ASSERT_TRUE(NeedsMmaPacking(p));
  MmaPacking pk = PlanMmaPacking(p, params);
  EXPECT_FALSE(pk.a);
  EXPECT_TRUE(pk.b);
  EXPECT_EQ(pk.rows_b, 520);
  EXPECT_EQ(pk.cols_b, 4097);
  EXPECT_EQ(pk.ldb, 4104);
  EXPECT_EQ(pk.lda, 520);  // read in place
  const int64_t partials = MmaWorkspaceBytes(PackedMmaProblem(p, pk), params);
  EXPECT_EQ(partials, 4 * 1023 * 4097 * 4);
  EXPECT_GE(pk.b_offset, partials);
  EXPECT_EQ(pk.b_offset % 256, 0);
  EXPECT_GE(pk.workspace_bytes, pk.b_offset + 520 * 4104 * 2);
  auto k = GenerateGemmMmaPacked(p, params);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->pack_entry, "blocktune_gemm_mma_pack");
  EXPECT_EQ(k->workspace_bytes, pk.workspace_bytes);
  EXPECT_FALSE(k->reduce_entry.empty());
  EXPECT_EQ(k->a_copy_bytes, 16);  // A in place, 16-byte chunks
  EXPECT_EQ(k->b_copy_bytes, 2);   // B's base: any element
  EXPECT_GT(k->pack_grid[0], 0u);
  EXPECT_EQ(k->pack_block[0], 256u);
  // The main entry reads B from the workspace with the padded rows, in
  // 16-byte chunks only.
  const std::string main = k->ptx.substr(0, k->ptx.find(".entry blocktune_gemm_mma_pack"));
  EXPECT_NE(main.find("add.u64 %B, %W, " + std::to_string(pk.b_offset) + ";"),
            std::string::npos);
  EXPECT_NE(main.find("mov.u32 %ldb, 4104;"), std::string::npos);
  EXPECT_EQ(main.find("add.u64 %A, %W"), std::string::npos);
  EXPECT_NE(main.find("cp.async.cg"), std::string::npos);
  EXPECT_EQ(main.find("ld.global.nc.b16"), std::string::npos);
  EXPECT_EQ(main.find("cp.async.ca"), std::string::npos);
  // The pack entry: B's 520 rows of 513 chunks, zeros past column 4097.
  const std::string pack = k->ptx.substr(k->ptx.find(".entry blocktune_gemm_mma_pack"));
  EXPECT_NE(pack.find("setp.ge.u64 %p, %c, " + std::to_string(520 * 513) + ";"),
            std::string::npos);
  EXPECT_NE(pack.find("sub.s64 %left, 4097, %col;"), std::string::npos);
  EXPECT_NE(pack.find("st.global.v4.b32"), std::string::npos);

  // tf32 777 x 333 x 1555 TT: A (T: K rows of M = 777) and B (T: N rows of
  // K = 1555) both packed, to multiples of 4 elements.
  MmaProblem t =
      Problem(MmaPrecision::kTf32, 777, 333, 1555, Layout::kT, Layout::kT);
  pk = PlanMmaPacking(t, MmaParams{});
  EXPECT_TRUE(pk.a && pk.b);
  EXPECT_EQ(pk.rows_a, 1555);
  EXPECT_EQ(pk.lda, 780);
  EXPECT_EQ(pk.rows_b, 333);
  EXPECT_EQ(pk.ldb, 1556);
  EXPECT_EQ(pk.a_offset, 0);  // K_G = 1: no partials
  EXPECT_EQ(pk.b_offset, (1555 * 780 * 4 + 255) / 256 * 256);
  EXPECT_TRUE(CanImplementMmaPacked(t, MmaParams{}).ok());

  // Rows already aligned: nothing to pack, and the family says why.
  MmaProblem aligned =
      Problem(MmaPrecision::kBf16, 1000, 1024, 512, Layout::kN, Layout::kT);
  EXPECT_FALSE(NeedsMmaPacking(aligned));
  const Status s = CanImplementMmaPacked(aligned, MmaParams{});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("unaligned_rows"), std::string::npos);
  EXPECT_FALSE(GenerateGemmMmaPacked(aligned, MmaParams{}).ok());
}

TEST(GemmMmaTest, PtxNamesTheAlgorithmsInstructions) {
  for (MmaPrecision prec :
       {MmaPrecision::kBf16, MmaPrecision::kFp16, MmaPrecision::kTf32}) {
    for (int l = 0; l < 4; ++l) {
      MmaProblem p =
          Problem(prec, 100, 100, 100, l / 2 ? Layout::kT : Layout::kN,
                  l % 2 ? Layout::kT : Layout::kN);
      p.lda = p.ldb = 104;  // rows of 16-byte multiples: cp.async.cg
      MmaParams params;
      params.kg = 2;
      auto k = GenerateGemmMma(p, params);
      ASSERT_TRUE(k.ok()) << k.status().ToString();
      EXPECT_NE(k->ptx.find("mma.sync.aligned"), std::string::npos);
      EXPECT_NE(k->ptx.find("cp.async.cg.shared.global"), std::string::npos);
      // tf32 TN reads both operands by words (ldmatrix.trans is 16-bit).
      if (!(prec == MmaPrecision::kTf32 && l == 2)) {
        EXPECT_NE(k->ptx.find("ldmatrix"), std::string::npos);
      }
      EXPECT_EQ(k->reduce_entry, "blocktune_gemm_mma_reduce");
      EXPECT_EQ(k->workspace_bytes, 2 * 100 * 100 * 4);
      // sm_90: the reduce entry is a programmatic dependent launch.
      EXPECT_NE(k->ptx.find("griddepcontrol.launch_dependents"),
                std::string::npos);
      EXPECT_NE(k->ptx.find("griddepcontrol.wait"), std::string::npos);
      EXPECT_EQ(GenerateGemmMma(p, params, "sm_80")
                    ->ptx.find("griddepcontrol"),
                std::string::npos);
      auto again = GenerateGemmMma(p, params);
      EXPECT_EQ(again->ptx, k->ptx);  // deterministic
      // The split-K tree: no reduce entry; tile-major partials and
      // K_G + 8 counters per tile.
      params.split_reduce = 1;
      params.kg = 20;  // two levels of radix 8
      auto tree = GenerateGemmMma(p, params);
      ASSERT_TRUE(tree.ok());
      EXPECT_TRUE(tree->reduce_entry.empty());
      const int64_t tiles = 1;  // 100 x 100 in one 128 x 128 tile
      EXPECT_EQ(tree->counter_offset, tiles * 20 * 128 * 128 * 4);
      EXPECT_EQ(tree->workspace_bytes, tree->counter_offset + tiles * 28 * 4);
      EXPECT_NE(tree->ptx.find("// level 1:"), std::string::npos);
      EXPECT_EQ(tree->ptx.find("// level 2:"), std::string::npos);
    }
  }
}

TEST(GemmMmaTest, WrongDtypeOrArchIsRefused) {
  MmaProblem p = Problem(MmaPrecision::kBf16, 8, 8, 8, Layout::kN, Layout::kN);
  p.ctx.dtype = DType::kFp32;
  EXPECT_EQ(GenerateGemmMma(p, MmaParams{}).status().code(),
            StatusCode::kInvalidArgument);
  p.ctx.dtype = DType::kBf16;
  EXPECT_EQ(GenerateGemmMma(p, MmaParams{}, "sm_75").status().code(),
            StatusCode::kInvalidArgument);
}

// The ptxas check of sampled gemm.mma kernels (every precision, sm_90 and
// sm_80, no spills) is family_ptxas_test, over every family.

}  // namespace
}  // namespace blocktune
