// gemm.wgmma without a GPU: parameters, rules and their messages, the
// family seam, tensor-map specs, generated text, and ptxas -arch=sm_90a
// over sampled kernels per precision (every layout; no spills, no ignored
// setmaxnreg). Where cuobjdump is installed, one kernel's SASS must hold
// HGMMA. Skips the ptxas parts where no ptxas is installed.
//
// Sample size: BLOCKTUNE_WGMMA_PTXAS_SAMPLES kernels per precision
// (default 40; the acceptance run is 300, about 0.5 s of ptxas a kernel).
#include "kernels/gemm_wgmma.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "kernels/family.h"

// tensor_map.h declares the driver's tensor-map ABI by hand; where the
// toolkit's header is installed, the values are checked against it.
#if __has_include("/usr/local/cuda/include/cuda.h")
#include "/usr/local/cuda/include/cuda.h"
static_assert(static_cast<int>(blocktune::TensorMapType::kFp16) ==
              CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
static_assert(static_cast<int>(blocktune::TensorMapType::kFp32) ==
              CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
static_assert(static_cast<int>(blocktune::TensorMapType::kBf16) ==
              CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
static_assert(CU_TENSOR_MAP_SWIZZLE_128B == 3);
static_assert(CU_TENSOR_MAP_L2_PROMOTION_L2_256B == 3);
static_assert(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE == 0);
static_assert(CU_TENSOR_MAP_INTERLEAVE_NONE == 0);
static_assert(sizeof(CUtensorMap) == sizeof(blocktune::EncodedTensorMap));
static_assert(alignof(CUtensorMap) == alignof(blocktune::EncodedTensorMap));
#endif

namespace blocktune {

const KernelFamily& GemmWgmmaFamily();

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

WgmmaParams Make(int64_t bm, int64_t bn, int64_t bk, int64_t st, int64_t wg) {
  WgmmaParams p;
  p.bm = bm;
  p.bn = bn;
  p.bk = bk;
  p.stages = st;
  p.consumers = wg;
  return p;
}

bool Contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

int Count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos;
       at = s.find(what, at + 1))
    ++n;
  return n;
}

TEST(GemmWgmmaTest, ParamsValidate) {
  EXPECT_TRUE(ValidateWgmmaParams(WgmmaParams{}).ok());
  EXPECT_TRUE(ValidateWgmmaParams(Make(256, 128, 64, 3, 2)).ok());
  // 192 rows do not split into m64 tiles over two warpgroups.
  Status s = ValidateWgmmaParams(Make(192, 128, 64, 3, 2));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(s.message(), "bm = 192")) << s.ToString();
  s = ValidateWgmmaParams(Make(128, 120, 64, 3, 1));
  EXPECT_TRUE(Contains(s.message(), "params.bn")) << s.ToString();
  WgmmaParams kg;
  kg.kg = 2;
  EXPECT_TRUE(ValidateWgmmaParams(kg).ok());  // split-K since v2
  kg.kg = 5;
  s = ValidateWgmmaParams(kg);
  EXPECT_TRUE(Contains(s.message(), "params.kg")) << s.ToString();
}

// v2's cluster pairs: whole pairs in the grid, half of every B box per
// program, multicast to both, empty mbarriers counting both programs'
// consumer warps, and a cluster barrier at start and exit.
TEST(GemmWgmmaTest, ClusterPairsShareBByMulticast) {
  for (Layout lb : {Layout::kT, Layout::kN}) {
    const Problem prob = Gemm(DType::kBf16, 1000, 1000, 512, Layout::kN, lb);
    WgmmaParams p;
    p.bm = 128;
    p.bn = lb == Layout::kT ? 256 : 64;  // one B box per stage
    p.bk = 64;
    p.consumers = 2;
    WgmmaParams pair = p;
    pair.cluster_m = 2;
    auto one = GenerateGemmWgmma(prob, p);
    auto two = GenerateGemmWgmma(prob, pair);
    ASSERT_TRUE(one.ok() && two.ok());
    const unsigned cols = lb == Layout::kT ? 4 : 16;  // ceil(1000 / bn)
    EXPECT_EQ(one->grid[0], 8u * cols);       // ceil(1000/128) rows
    EXPECT_EQ(two->grid[0], 2u * 4u * cols);  // 4 pairs of rows
    EXPECT_EQ(two->cluster[0], 2u);
    EXPECT_EQ(two->map_a.box[1], one->map_a.box[1]);
    EXPECT_EQ(two->map_b.box[1] * 2, one->map_b.box[1]);
    EXPECT_EQ(one->ptx.find("multicast"), std::string::npos);
    EXPECT_NE(two->ptx.find(".reqnctapercluster 2, 1, 1"), std::string::npos);
    EXPECT_NE(two->ptx.find("bytes.multicast::cluster"), std::string::npos);
    EXPECT_NE(two->ptx.find("mapa.shared::cluster"), std::string::npos);
    EXPECT_NE(two->ptx.find("mbarrier.arrive.shared::cluster.b64"),
              std::string::npos);
    EXPECT_NE(two->ptx.find("], 16;"), std::string::npos);  // 2 x 8 warps
    EXPECT_NE(two->ptx.find("barrier.cluster.wait"), std::string::npos);
    // Two B boxes per stage: refused (rule cluster_box).
    WgmmaParams wide = pair;
    wide.bk = lb == Layout::kT ? 128 : 64;
    wide.bn = lb == Layout::kT ? 256 : 128;
    wide.stages = 2;
    const Status s = CanImplementWgmma(prob, wide);
    EXPECT_NE(s.message().find("cluster_box"), std::string::npos) << s.ToString();
    EXPECT_FALSE(GenerateGemmWgmma(prob, wide).ok());
  }
}

TEST(GemmWgmmaTest, FamilySeam) {
  const KernelFamily& f = GemmWgmmaFamily();
  EXPECT_EQ(f.name(), "gemm.wgmma");
  EXPECT_EQ(f.min_compute_capability(), 90);
  EXPECT_TRUE(f.Implements(DType::kBf16));
  EXPECT_TRUE(f.Implements(DType::kTf32));
  EXPECT_FALSE(f.Implements(DType::kFp32));
  // All but tl, gemm.wgmma_ps's own.
  ASSERT_EQ(f.params().size(), WgmmaParamDomains().size() - 1);
  EXPECT_EQ(f.params().size(), size_t{kGemmWgmmaParamCount});
  auto p = f.Parse("bm=256 bn=128 wg=2 st=3");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(f.Format(*p), "bm=256 bn=128 bk=64 st=3 wg=2 gm=8 kg=1 cm=1");
  const Problem prob =
      Gemm(DType::kBf16, 4096, 4096, 4096, Layout::kN, Layout::kT);
  EXPECT_TRUE(f.CanImplement(prob, *p, KernelLimits{}).ok());
  EXPECT_EQ(f.FirstFailingRule(prob, *p, KernelLimits{}), -1);
  auto d = f.Default(prob, KernelLimits{});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const ConfigShape shape = f.Shape(prob, *d);
  EXPECT_EQ(shape.threads, 384);
  EXPECT_EQ(shape.programs, 32 * 16);
  auto k = f.Generate(prob, *d, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->family, "gemm.wgmma");
  EXPECT_TRUE(Contains(k->ptx, ".target sm_90a"));
  EXPECT_GT(k->dynamic_shared_bytes, 48u * 1024);
  // tf32 NT has a default (bk 32 fits the shared memory); tf32 NN none.
  EXPECT_TRUE(f.Default(Gemm(DType::kTf32, 100, 100, 100, Layout::kN,
                             Layout::kT),
                        KernelLimits{})
                  .ok());
  EXPECT_FALSE(f.Default(Gemm(DType::kTf32, 100, 100, 100, Layout::kN,
                              Layout::kN),
                         KernelLimits{})
                   .ok());
  EXPECT_EQ(f.CanImplement(Gemm(DType::kFp32, 8, 8, 8, Layout::kN, Layout::kN),
                           *d, KernelLimits{})
                .code(),
            StatusCode::kInvalidArgument);
}

// Each rule refuses with a message that names it and the numbers.
TEST(GemmWgmmaTest, RulesRefuseWithTheirNumbers) {
  const Problem nt = Gemm(DType::kBf16, 1000, 1000, 1000, Layout::kN,
                          Layout::kT);
  KernelLimits limits;
  struct Case {
    Problem problem;
    WgmmaParams params;
    KernelLimits limits;
    std::string rule, numbers;
  };
  KernelLimits a100 = limits, b200 = limits;
  a100.compute_capability = 80;
  b200.compute_capability = 100;
  Problem unaligned =
      Gemm(DType::kBf16, 1023, 4097, 515, Layout::kN, Layout::kN);
  Problem padded = unaligned;
  padded.lda = 520;
  padded.ldb = 4104;
  // C is stored by TMA too (v4): ldc 4097 is refused where lda and ldb
  // are fine.
  Problem c_unaligned = padded;
  padded.ldc = 4104;
  const std::vector<Case> cases = {
      {nt, WgmmaParams{}, a100, "compute_capability", "8.0"},
      {nt, WgmmaParams{}, b200, "compute_capability", "10.0"},
      {Gemm(DType::kTf32, 64, 64, 64, Layout::kN, Layout::kN),
       Make(64, 64, 32, 4, 1), limits, "precision_layout", "B N"},
      {Gemm(DType::kTf32, 64, 64, 64, Layout::kT, Layout::kT),
       Make(64, 64, 32, 4, 1), limits, "precision_layout", "A T"},
      {Gemm(DType::kBf16, 64, 64, 64, Layout::kN, Layout::kN),
       Make(64, 96, 64, 4, 1), limits, "tile_layout", "bn 96"},
      {nt, Make(128, 128, 32, 4, 1), limits, "swizzle_row", "32 * 2 = 64"},
      {nt, Make(256, 256, 128, 4, 2), limits, "shared_memory", "B exceeds"},
      {nt, Make(256, 256, 64, 2, 1), limits, "registers", "552"},
      {unaligned, WgmmaParams{}, limits, "alignment", "lda 515, ldb 4097"},
      {c_unaligned, WgmmaParams{}, limits, "alignment", "ldc 4097"},
      {Gemm(DType::kBf16, 64, 64, 200, Layout::kN, Layout::kT),
       [] {
         WgmmaParams p;
         p.kg = 4;
         return p;
       }(),
       limits, "split_has_work", "kg * bk = 256 exceeds K = 200"},
  };
  for (const Case& c : cases) {
    const Status s = CanImplementWgmma(c.problem, c.params, c.limits);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << c.rule;
    EXPECT_TRUE(Contains(s.message(), c.rule + ":")) << s.ToString();
    EXPECT_TRUE(Contains(s.message(), c.numbers)) << s.ToString();
  }
  EXPECT_TRUE(CanImplementWgmma(padded, WgmmaParams{}).ok());
  // K-major B takes any bn of the domain.
  EXPECT_TRUE(CanImplementWgmma(nt, Make(64, 96, 64, 4, 1)).ok());
  EXPECT_TRUE(CanImplementWgmma(nt, Make(64, 16, 64, 4, 1)).ok());
}

TEST(GemmWgmmaTest, TensorMapsFollowTheLayouts) {
  const WgmmaParams p = Make(128, 256, 64, 4, 2);
  // A N: M rows of K (K-major, box 64 x bm); B T: N rows of K.
  Problem nt = Gemm(DType::kBf16, 300, 500, 700, Layout::kN, Layout::kT);
  TensorMapSpec a = WgmmaTensorMap(nt, p, 'a'), b = WgmmaTensorMap(nt, p, 'b');
  EXPECT_EQ(a.dims[0], 700u);
  EXPECT_EQ(a.dims[1], 300u);
  EXPECT_EQ(a.box[0], 64u);
  EXPECT_EQ(a.box[1], 128u);
  EXPECT_EQ(a.strides[0], 1400u);
  EXPECT_EQ(b.dims[0], 700u);
  EXPECT_EQ(b.dims[1], 500u);
  EXPECT_EQ(b.box[1], 256u);
  // C: M rows of N (ldc), boxes of 128 bytes by an m64 tile's 64 rows.
  nt.ldc = 504;
  const TensorMapSpec c = WgmmaTensorMap(nt, p, 'c');
  EXPECT_EQ(c.dims[0], 500u);
  EXPECT_EQ(c.dims[1], 300u);
  EXPECT_EQ(c.strides[0], 1008u);
  EXPECT_EQ(c.box[0], 64u);
  EXPECT_EQ(c.box[1], 64u);
  EXPECT_TRUE(CheckTensorMap(c, 256).ok());
  // A T: K rows of M (M-major, box 64 x bk); B N: K rows of N.
  Problem tn = Gemm(DType::kFp16, 304, 512, 700, Layout::kT, Layout::kN);
  a = WgmmaTensorMap(tn, p, 'a');
  b = WgmmaTensorMap(tn, p, 'b');
  EXPECT_EQ(a.type, TensorMapType::kFp16);
  EXPECT_EQ(a.dims[0], 304u);
  EXPECT_EQ(a.dims[1], 700u);
  EXPECT_EQ(a.box[1], 64u);
  EXPECT_EQ(b.dims[0], 512u);
  EXPECT_EQ(b.strides[0], 1024u);
  EXPECT_TRUE(CheckTensorMap(a, 256).ok());
  EXPECT_TRUE(CheckTensorMap(b, 256).ok());
  EXPECT_EQ(CheckTensorMap(b, 8).code(), StatusCode::kInvalidArgument);
  // tf32: 32 elements to the 128-byte row.
  Problem t = Gemm(DType::kTf32, 64, 64, 64, Layout::kN, Layout::kT);
  a = WgmmaTensorMap(t, Make(64, 64, 32, 4, 1), 'a');
  EXPECT_EQ(a.type, TensorMapType::kFp32);
  EXPECT_EQ(a.box[0], 32u);
  EXPECT_TRUE(CheckTensorMap(a, 0).ok());
  // Without a driver, encoding answers UNAVAILABLE "no GPU: ...".
  auto e = EncodeTensorMap(a, 0);
  if (!e.ok() && e.status().code() == StatusCode::kUnavailable) {
    EXPECT_TRUE(Contains(e.status().message(), "no GPU: "));
  }
}

TEST(GemmWgmmaTest, PtxNamesTheAlgorithmsInstructions) {
  for (DType dtype : {DType::kBf16, DType::kFp16, DType::kTf32}) {
    for (int l = 0; l < 4; ++l) {
      const Layout la = l / 2 ? Layout::kT : Layout::kN;
      const Layout lb = l % 2 ? Layout::kT : Layout::kN;
      if (dtype == DType::kTf32 && (la != Layout::kN || lb != Layout::kT))
        continue;
      const Problem p = Gemm(dtype, 100, 100, 100, la, lb);
      for (int64_t wg : {1, 2}) {
        const WgmmaParams params =
            Make(128, 128, dtype == DType::kTf32 ? 32 : 64, 4, wg);
        auto k = GenerateGemmWgmma(p, params);
        ASSERT_TRUE(k.ok()) << k.status().ToString();
        const std::string& ptx = k->ptx;
        EXPECT_TRUE(Contains(ptx, "wgmma.mma_async.sync.aligned.m64n128k"));
        EXPECT_TRUE(Contains(ptx, "cp.async.bulk.tensor.2d"));
        EXPECT_TRUE(Contains(ptx, "mbarrier.try_wait.parity"));
        EXPECT_TRUE(Contains(ptx, "mbarrier.arrive.expect_tx"));
        EXPECT_TRUE(Contains(ptx, "wgmma.wait_group.sync.aligned 1"));
        // beta == 0: the TMA-store epilogue through the swizzled buffers.
        EXPECT_TRUE(Contains(ptx, "cp.async.bulk.tensor.2d.global.shared::cta"
                                  ".bulk_group [%tmc"));
        EXPECT_TRUE(Contains(ptx, "fence.proxy.async.shared::cta"));
        EXPECT_TRUE(Contains(ptx, "cp.async.bulk.wait_group.read 0"));
        EXPECT_EQ(Contains(ptx, "setmaxnreg"), wg == 2);
        if (dtype != DType::kTf32) {
          // The transpose bits follow the layouts.
          const std::string bits = std::string(la == Layout::kT ? "1" : "0") +
                                   ", " + (lb == Layout::kN ? "1" : "0") + ";";
          EXPECT_TRUE(Contains(ptx, "%pone, 1, 1, " + bits)) << bits;
        }
        auto again = GenerateGemmWgmma(p, params);
        EXPECT_EQ(again->ptx, ptx);  // deterministic
      }
    }
  }
  const Problem p = Gemm(DType::kBf16, 8, 8, 8, Layout::kN, Layout::kN);
  EXPECT_EQ(GenerateGemmWgmma(p, WgmmaParams{}, "sm_90").status().code(),
            StatusCode::kInvalidArgument);
}

// gemm.wgmma_pk: offered where an operand's rows are not 16-byte aligned;
// then operands whose rows are not 128-byte aligned are packed after
// split-K's partials, with rows padded to 128 bytes; tf32's M- and N-major
// operands are packed transposed, so the main kernel reads NT; C's
// epilogue checks ldc; problems with 16-byte rows are refused.
TEST(GemmWgmmaTest, PackingPadsRowsTo128BytesAndMakesTf32KMajor) {
  WgmmaParams params = Make(128, 128, 64, 4, 1);
  params.kg = 2;
  // bf16 1023 x 4097 x 520 NN: A rows of 520 (1040 B: 16 but not 128),
  // B rows of 4097 (not even 16): both packed, neither transposed.
  const Problem bf = Gemm(DType::kBf16, 1023, 4097, 520, Layout::kN, Layout::kN);
  ASSERT_TRUE(NeedsWgmmaPacking(bf));
  const WgmmaPacking pk = PlanWgmmaPacking(bf, params);
  EXPECT_TRUE(pk.a && pk.b);
  EXPECT_FALSE(pk.a_transposed || pk.b_transposed);
  EXPECT_EQ(pk.lda, 576);   // 520 rounded up to 64 elements
  EXPECT_EQ(pk.ldb, 4160);  // 4097 rounded up to 64
  EXPECT_EQ(pk.a_offset, (2 * 1023 * 4097 * 4 + 255) / 256 * 256);  // after the partials
  EXPECT_EQ(pk.b_offset % 256, 0);
  EXPECT_GE(pk.b_offset, pk.a_offset + 1023 * 576 * 2);
  EXPECT_EQ(pk.workspace_bytes, pk.b_offset + 520 * 4160 * 2);
  auto k = GenerateGemmWgmmaPacked(bf, params);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->pack_entry, "blocktune_gemm_wgmma_pack");
  EXPECT_TRUE(Contains(k->ptx, ".visible .entry blocktune_gemm_wgmma_pack("));
  EXPECT_TRUE(Contains(k->ptx, "// blocktune gemm.wgmma_pk v1"));
  EXPECT_EQ(k->map_a_operand, 'W');
  EXPECT_EQ(k->map_a_offset, pk.a_offset);
  EXPECT_EQ(k->map_b_offset, pk.b_offset);
  EXPECT_EQ(k->map_a.strides[0], 576u * 2);
  EXPECT_EQ(k->workspace_bytes, pk.workspace_bytes);
  // A's rows are whole 16-byte units: 16-byte loads; B's are not.
  EXPECT_TRUE(Contains(k->ptx, "ld.global.nc.v4.b32"));
  EXPECT_TRUE(Contains(k->ptx, "ld.global.nc.b16"));
  // The TMA-store epilogue needs ldc too to be whole 16-byte units.
  EXPECT_TRUE(Contains(k->ptx, "or.b32 %tmp, %N, %ldc;"));
  EXPECT_FALSE(Contains(GenerateGemmWgmma(
                            Gemm(DType::kBf16, 1024, 1024, 1024, Layout::kN,
                                 Layout::kT),
                            params)->ptx,
                        "%ldc;\n\tand.b32"));
  // tf32 NN: B (N-major) is packed transposed; the kernel reads NT.
  const Problem tf = Gemm(DType::kTf32, 1023, 4097, 520, Layout::kN, Layout::kN);
  params = Make(128, 128, 32, 4, 1);
  const WgmmaPacking pt = PlanWgmmaPacking(tf, params);
  EXPECT_TRUE(pt.b_transposed);
  EXPECT_FALSE(pt.a_transposed);
  EXPECT_EQ(pt.ldb, 544);  // K = 520 rounded up to 32
  const Problem q = PackedWgmmaProblem(tf, pt);
  EXPECT_EQ(std::get<GemmContext>(q.ctx).layout_b, Layout::kT);
  EXPECT_EQ(q.ldc, 4100);  // rounded to 16 bytes for C's map
  EXPECT_TRUE(CanImplementWgmmaPacked(tf, params).ok());
  auto kt = GenerateGemmWgmmaPacked(tf, params);
  ASSERT_TRUE(kt.ok()) << kt.status().ToString();
  EXPECT_TRUE(Contains(kt->ptx, "B 520 x 4097 transposed"));
  // Rows 16-byte aligned (1000 bf16: 2000 bytes): not offered, though
  // such rows would be packed where the family is.
  const Problem aligned =
      Gemm(DType::kBf16, 1000, 1000, 1000, Layout::kN, Layout::kN);
  EXPECT_FALSE(NeedsWgmmaPacking(aligned));
  const Status s = CanImplementWgmmaPacked(aligned, params);
  EXPECT_NE(s.message().find("unaligned_rows"), std::string::npos) << s.ToString();
  EXPECT_FALSE(GenerateGemmWgmmaPacked(aligned, params).ok());
}

TEST(GemmWgmmaTest, SplitKHasWorkspaceAndReduceEntry) {
  const Problem p = Gemm(DType::kBf16, 100, 70, 1000, Layout::kN, Layout::kT);
  WgmmaParams params = Make(128, 128, 64, 4, 1);
  auto one = GenerateGemmWgmma(p, params);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->workspace_bytes, 0);
  EXPECT_TRUE(one->reduce_entry.empty());
  EXPECT_FALSE(Contains(one->ptx, "ld.param.u64 %W"));
  params.kg = 3;
  auto k = GenerateGemmWgmma(p, params);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->workspace_bytes, 3 * 100 * 70 * 4);
  EXPECT_EQ(k->grid[0], 1u * 1u * 3u);
  EXPECT_EQ(k->reduce_entry, "blocktune_gemm_mma_reduce");
  EXPECT_TRUE(Contains(k->ptx, ".visible .entry blocktune_gemm_mma_reduce("));
  EXPECT_TRUE(Contains(k->ptx, "ld.param.u64 %W, [param_W]"));
  EXPECT_TRUE(Contains(k->ptx, "st.global.v2.f32"));
  EXPECT_EQ(k->reduce_block[0], 256u);
  EXPECT_GE(int64_t{k->reduce_grid[0]} * 256, 100 * 70);
  // The family seam: programs, workspace and the reduce launch.
  const KernelFamily& f = GemmWgmmaFamily();
  Params fp;
  fp.size = 8;
  const int64_t v[8] = {128, 128, 64, 4, 1, 8, 3, 1};
  for (int i = 0; i < 8; ++i) fp[i] = v[i];
  const ConfigShape shape = f.Shape(p, fp);
  EXPECT_EQ(shape.split_k, 3);
  EXPECT_EQ(shape.programs, 3);
  EXPECT_EQ(shape.workspace_bytes, 3 * 100 * 70 * 4);
  auto g = f.Generate(p, fp, "sm_90");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->reduce_entry, "blocktune_gemm_mma_reduce");
  EXPECT_EQ(g->reduce_params.size(), 8u);
  EXPECT_EQ(g->entry_params.back().name, std::string("tmap_c"));
  EXPECT_EQ(g->workspace_bytes, 3 * 100 * 70 * 4);
  // kg * bk > K: a split would be empty.
  params.kg = 8;
  const Problem short_k =
      Gemm(DType::kBf16, 100, 70, 500, Layout::kN, Layout::kT);
  EXPECT_EQ(GenerateGemmWgmma(short_k, params).status().code(),
            StatusCode::kFailedPrecondition);
}

// ---- ptxas ----------------------------------------------------------------

std::string FindTool(const char* env_name, const char* name) {
  if (const char* env = std::getenv(env_name); env && env[0]) return env;
  for (const std::string dir : {"/usr/local/cuda/bin/", "/usr/bin/"}) {
    const std::string path = dir + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

struct Assembled {
  bool ok = false;
  int registers = -1;
  int spill_bytes = 0;
  int stack_bytes = 0;
  std::string log;
};

std::string RunCommand(const std::string& cmd, bool* ok) {
  std::string out;
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  *ok = pclose(pipe) == 0;
  return out;
}

Assembled RunPtxas(const std::string& ptxas, const std::string& path) {
  Assembled out;
  out.log = RunCommand(ptxas + " -arch=sm_90a -v " + path + " -o " + path + ".cubin",
                &out.ok);
  std::smatch m;
  static const std::regex used(
      "(\\d+) bytes stack frame, (\\d+) bytes spill stores, (\\d+) bytes "
      "spill loads\\n.*?Used (\\d+) registers");
  if (std::regex_search(out.log, m, used)) {
    out.stack_bytes = std::stoi(m[1]);
    out.spill_bytes = std::stoi(m[2]) + std::stoi(m[3]);
    out.registers = std::stoi(m[4]);
  }
  return out;
}

// The PTX assembled for sm_90a and its SASS (cuobjdump -sass), through a
// temporary file named by `tag`, removed afterwards; ok false with the
// tool's output in `log` where either step fails.
struct Sass {
  bool ok = false;
  std::string text, log;
};
Sass AssembleSass(const std::string& ptxas, const std::string& cuobjdump,
                  const std::string& ptx, const std::string& tag) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("blocktune-wgmma-" + tag + "-" + std::to_string(getpid()) +
                     ".ptx");
  std::ofstream(path) << ptx;
  Sass out;
  Assembled a = RunPtxas(ptxas, path.string());
  if (!a.ok) {
    out.log = a.log;
  } else {
    out.text =
        RunCommand(cuobjdump + " -sass " + path.string() + ".cubin", &out.ok);
    if (!out.ok) out.log = out.text.substr(0, 2000);
  }
  std::filesystem::remove(path);
  std::filesystem::remove(path.string() + ".cubin");
  return out;
}

WgmmaParams SampleParams(std::mt19937& rng) {
  int64_t v[kGemmWgmmaParamCount];
  const auto& domains = WgmmaParamDomains();
  for (size_t i = 0; i < std::size(v); ++i)
    v[i] = domains[i].values[rng() % domains[i].values.size()];
  WgmmaParams p = Make(v[0], v[1], v[2], v[3], v[4]);
  p.group_m = v[5];
  p.kg = v[6];
  return p;
}

void AssembleSampled(DType dtype, uint32_t seed) {
  const std::string ptxas = FindTool("BLOCKTUNE_PTXAS", "ptxas");
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas (set BLOCKTUNE_PTXAS)";
  int samples = 40;
  if (const char* env = std::getenv("BLOCKTUNE_WGMMA_PTXAS_SAMPLES"))
    samples = std::max(1, std::atoi(env));
  const auto dir = std::filesystem::temp_directory_path() /
                   ("blocktune-wgmma-ptxas-" + std::to_string(getpid()) + "-" +
                    std::string(ToString(dtype)));
  std::filesystem::create_directories(dir);
  std::mt19937 rng(seed);
  const KernelLimits limits;  // the H100's
  struct Job {
    Problem problem;
    WgmmaParams params;
    std::string path;
  };
  std::vector<Job> jobs;
  std::set<std::string> seen;  // distinct kernels: the PTX depends on the
                               // layouts and parameters, not M, N, K
  std::map<std::string, int> rejected, per_layout;
  int split = 0;  // kernels with kg > 1
  for (int tries = 0; static_cast<int>(jobs.size()) < samples && tries < 100000;
       ++tries) {
    Job job;
    const int64_t align = 16 / WgmmaElementBytes(dtype);
    const Layout la = rng() % 2 ? Layout::kT : Layout::kN;
    const Layout lb = rng() % 2 ? Layout::kT : Layout::kN;
    job.problem = Gemm(dtype, 1 + rng() % 8192, 1 + rng() % 8192,
                       1 + rng() % 8192, la, lb);
    const GemmContext& g = std::get<GemmContext>(job.problem.ctx);
    auto up = [&](int64_t x) { return (x + align - 1) / align * align; };
    job.problem.lda = up(la == Layout::kT ? g.m : g.k);
    job.problem.ldb = up(lb == Layout::kT ? g.k : g.n);
    job.params = SampleParams(rng);
    if (!ValidateWgmmaParams(job.params).ok()) {
      ++rejected["params"];
      continue;
    }
    const WgmmaRule rule =
        FirstFailingWgmmaRule(job.problem, job.params, limits);
    if (rule != WgmmaRule::kNone) {
      ++rejected[ToString(rule)];
      continue;
    }
    const std::string layouts = std::string(ToString(la)) +
                                std::string(ToString(lb));
    if (!seen.insert(layouts + ToString(job.params)).second) continue;
    ++per_layout[layouts];
    split += job.params.kg > 1;
    job.path = (dir / ("k" + std::to_string(jobs.size()) + ".ptx")).string();
    jobs.push_back(job);
  }
  EXPECT_EQ(static_cast<int>(jobs.size()), samples);
  if (samples >= 20) {
    EXPECT_GT(split, 0);
  }
  if (dtype == DType::kTf32) {
    EXPECT_EQ(per_layout.size(), 1u);  // NT only (rule precision_layout)
  } else {
    EXPECT_EQ(per_layout.size(), 4u);
  }

  std::mutex mu;
  std::vector<std::string> failures;
  int max_registers = 0;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      const Job& job = jobs[i];
      const std::string what = ToString(Context(job.problem.ctx)) + " " +
                               ToString(job.params);
      auto kernel = GenerateGemmWgmma(job.problem, job.params);
      if (!kernel.ok()) {
        std::lock_guard lock(mu);
        failures.push_back(what + ": " + kernel.status().ToString());
        continue;
      }
      std::ofstream(job.path) << kernel->ptx;
      Assembled a = RunPtxas(ptxas, job.path);
      std::lock_guard lock(mu);
      if (!a.ok || a.registers < 0) {
        failures.push_back(what + ": ptxas failed\n" + a.log.substr(0, 2000));
        continue;
      }
      if (a.spill_bytes > 0 || a.stack_bytes > 0) {
        failures.push_back(what + ": spills " + std::to_string(a.spill_bytes) +
                           " bytes, stack " + std::to_string(a.stack_bytes) +
                           " with " + std::to_string(a.registers) +
                           " registers (estimate " +
                           std::to_string(WgmmaRegisterEstimate(job.params)) +
                           ")");
      }
      // C7508: setmaxnreg ignored; any other warning is a fault too.
      if (Contains(a.log, "arning")) {
        failures.push_back(what + ": ptxas warns\n" + a.log.substr(0, 2000));
      }
      max_registers = std::max(max_registers, a.registers);
    }
  };
  std::vector<std::thread> threads;
  const unsigned n = std::max(2u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  std::filesystem::remove_all(dir);
  for (const auto& f : failures) ADD_FAILURE() << f;
  std::string why, layouts;
  for (const auto& [rule, count] : rejected)
    why += " " + rule + "=" + std::to_string(count);
  for (const auto& [l, count] : per_layout)
    layouts += " " + l + "=" + std::to_string(count);
  std::printf(
      "%s: %zu distinct kernels (%d with kg > 1) assembled for sm_90a with "
      "%s (layouts:%s); rejected draws:%s; max registers at entry %d\n",
      std::string(ToString(dtype)).c_str(), jobs.size(), split, ptxas.c_str(),
      layouts.c_str(), why.c_str(), max_registers);
}

TEST(GemmWgmmaPtxasTest, Bf16SampledKernelsAssembleWithoutSpills) {
  AssembleSampled(DType::kBf16, 2300);
}
TEST(GemmWgmmaPtxasTest, Fp16SampledKernelsAssembleWithoutSpills) {
  AssembleSampled(DType::kFp16, 2301);
}
TEST(GemmWgmmaPtxasTest, Tf32SampledKernelsAssembleWithoutSpills) {
  AssembleSampled(DType::kTf32, 2302);
}

// WgmmaParams::b_per_box (the cluster_box diagnosis): N-major B of two
// and four boxes per stage gets a wgmma of N = 64 per box, on that box's
// accumulators and its descriptor (+ a box's bytes / 16); rule cluster_box
// then takes the cluster pair and the cluster split; K-major B and one-box
// tiles are untouched (the PTX of a kernel without it is unchanged: the
// golden hashes). Assembles with ptxas where there is one.
TEST(GemmWgmmaPtxasTest, AWgmmaPerBoxOfNMajorB) {
  const Problem nn = Gemm(DType::kBf16, 1000, 1000, 1000, Layout::kN,
                          Layout::kN);
  WgmmaParams pair = Make(128, 128, 64, 4, 1);
  pair.cluster_m = 2;
  WgmmaParams split = Make(128, 256, 64, 2, 2);
  split.kg = 2;
  split.split_cluster = true;
  for (WgmmaParams* p : {&pair, &split}) {
    EXPECT_FALSE(GenerateGemmWgmma(nn, *p).ok()) << ToString(*p);
    p->b_per_box = true;
  }
  const std::string ptxas = FindTool("BLOCKTUNE_PTXAS", "ptxas");
  for (const WgmmaParams& p : {pair, split}) {
    auto k = GenerateGemmWgmma(nn, p);
    ASSERT_TRUE(k.ok()) << ToString(p) << ": " << k.status().ToString();
    EXPECT_TRUE(Contains(k->ptx, "wgmma.mma_async.sync.aligned.m64n64k16"));
    EXPECT_FALSE(Contains(k->ptx, "m64n" + std::to_string(p.bn) + "k16"));
    // The second box: its descriptor 64 rows x 128 bytes = 8192 bytes on.
    EXPECT_TRUE(Contains(k->ptx, "add.s64 %dbj, %dbk, 512;"));
    // Its accumulators: the m tile's columns 64 .. 127 (registers 32 on).
    EXPECT_TRUE(Contains(k->ptx, "{%acc32, %acc33,"));
    if (ptxas.empty()) continue;
    const auto path = std::filesystem::temp_directory_path() /
                      ("blocktune-wgmma-box-" + std::to_string(getpid()) +
                       ".ptx");
    std::ofstream(path) << k->ptx;
    Assembled a = RunPtxas(ptxas, path.string());
    EXPECT_TRUE(a.ok) << ToString(p) << "\n" << a.log;
    EXPECT_EQ(a.spill_bytes, 0) << ToString(p);
    std::printf("%s: %d registers\n", ToString(p).c_str(), a.registers);
    std::filesystem::remove(path);
    std::filesystem::remove(path.string() + ".cubin");
  }
  // K-major B (NT) is one box wide: the flag changes nothing.
  const Problem nt = Gemm(DType::kBf16, 1000, 1000, 1000, Layout::kN,
                          Layout::kT);
  WgmmaParams wide = Make(128, 128, 64, 4, 1), flagged = wide;
  flagged.b_per_box = true;
  auto a = GenerateGemmWgmma(nt, wide), b = GenerateGemmWgmma(nt, flagged);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->ptx, b->ptx);
}

// WgmmaParams::relaxed_start (experimental): a cluster pair's barrier after
// the mbarrier init arrives relaxed; the exit's barrier keeps release. The
// PTX differs in that one line; in SASS the start loses its MEMBAR.ALL.GPU
// (the release), the exit keeps its own.
TEST(GemmWgmmaPtxasTest, RelaxedStartDropsTheStartsGpuFence) {
  const Problem nn = Gemm(DType::kBf16, 1000, 1000, 1000, Layout::kN,
                          Layout::kN);
  WgmmaParams pair = Make(128, 64, 64, 8, 2);
  pair.cluster_m = 2;
  WgmmaParams relaxed = pair;
  relaxed.relaxed_start = true;
  auto a = GenerateGemmWgmma(nn, pair), b = GenerateGemmWgmma(nn, relaxed);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Count(a->ptx, "barrier.cluster.arrive.release;"), 2);
  EXPECT_EQ(Count(b->ptx, "barrier.cluster.arrive.release;"), 1);
  EXPECT_EQ(Count(b->ptx, "barrier.cluster.arrive.relaxed;"), 1);
  std::string edited = a->ptx;
  edited.replace(edited.find("barrier.cluster.arrive.release;"),
                 std::strlen("barrier.cluster.arrive.release;"),
                 "barrier.cluster.arrive.relaxed;");
  EXPECT_EQ(edited, b->ptx);
  const std::string ptxas = FindTool("BLOCKTUNE_PTXAS", "ptxas");
  const std::string cuobjdump = FindTool("BLOCKTUNE_CUOBJDUMP", "cuobjdump");
  if (ptxas.empty() || cuobjdump.empty())
    GTEST_SKIP() << "no ptxas or cuobjdump (set BLOCKTUNE_CUOBJDUMP)";
  int fences[2];
  for (int i = 0; i < 2; ++i) {
    const Sass sass = AssembleSass(ptxas, cuobjdump, i ? b->ptx : a->ptx,
                                   "relaxed");
    ASSERT_TRUE(sass.ok) << sass.log;
    fences[i] = Count(sass.text, "MEMBAR.ALL.GPU");
  }
  std::printf("MEMBAR.ALL.GPU in SASS: %d with a release start, %d relaxed\n",
              fences[0], fences[1]);
  EXPECT_EQ(fences[1], fences[0] - 1);
}

// The tensor cores' Hopper path shows as HGMMA in SASS (HMMA is mma.sync).
TEST(GemmWgmmaPtxasTest, SassHasHgmma) {
  const std::string ptxas = FindTool("BLOCKTUNE_PTXAS", "ptxas");
  const std::string cuobjdump = FindTool("BLOCKTUNE_CUOBJDUMP", "cuobjdump");
  if (ptxas.empty() || cuobjdump.empty())
    GTEST_SKIP() << "no ptxas or cuobjdump (set BLOCKTUNE_CUOBJDUMP)";
  const Problem p = Gemm(DType::kBf16, 4096, 4096, 4096, Layout::kN,
                         Layout::kT);
  auto k = GenerateGemmWgmma(p, Make(128, 256, 64, 4, 2));
  ASSERT_TRUE(k.ok());
  const Sass sass = AssembleSass(ptxas, cuobjdump, k->ptx, "sass");
  ASSERT_TRUE(sass.ok) << sass.log;
  const int hgmma = Count(sass.text, "HGMMA");
  std::printf("bm=128 bn=256 bk=64 wg=2 bf16 NT: %d HGMMA in SASS, HMMA %s\n",
              hgmma, Contains(sass.text, "HMMA") ? "present" : "absent");
  // bk/16 k steps of one m64n256 tile per consumer: 4 in the loop body
  // (more if ptxas unrolls it).
  EXPECT_GE(hgmma, 4);
}

}  // namespace
}  // namespace blocktune
