// Golden PTX hashes: each family emits PTX for a fixed list of (context,
// parameters, arch), and the FNV-1a 64 hash of it all (PTX and entry
// names) is compared with a table of {family, version, hash}. Measurements
// are valid for one generator version (DESIGN.md, "Provenance"), so PTX
// that changes without a version bump would mix old data with new kernels:
// this test fails until the version is bumped and the table updated.
//
// gemm.ffma's and conv.ffma's version-1 hashes were computed at 7671ef6
// (the family seam), whose gemm_ptx.cc is unchanged since before the seam;
// the seam keeps their PTX byte-identical, which
// FamiliesEmitWhatTheGeneratorsEmit checks directly. Version 2 (ST) keeps
// version 1's PTX for ST = 1, and version 3 (the shared walk of scalar
// loads) version 2's wherever loads are 16-byte vectors
// (FfmaVectorLoadsAreVersionTwosAndStageOneVersionOnes).
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/family.h"
#include "kernels/fnv1a.h"
#include "kernels/gemm_mma.h"
#include "kernels/gemm_ptx.h"
#include "kernels/gemm_wgmma.h"

namespace blocktune {
namespace {

struct Golden {
  const char* family;
  int version;
  uint64_t hash;
  const char* constant;  // where the version lives
};

// Update a row only together with its family's generator version (the
// test says what to write).
constexpr Golden kGolden[] = {
    {"gemm.ffma", 3, 0x8b84cec0919c6015ull,
     "kGemmFfmaGeneratorVersion (kernels/gemm_ptx.h)"},
    {"conv.ffma", 3, 0x3b0d3e55c0429b71ull,
     "kConvFfmaGeneratorVersion (kernels/gemm_ptx.h)"},
    {"gemm.mma", 3, 0x1952e81621ed6825ull,
     "kGemmMmaGeneratorVersion (kernels/gemm_mma.h)"},
    {"gemm.wgmma", 5, 0x55bd741671fcea02ull,
     "kGemmWgmmaGeneratorVersion (kernels/gemm_wgmma.h)"},
    {"conv.mma", 1, 0x2e97834786f4ae0full,
     "kConvMmaGeneratorVersion (kernels/conv_mma.h)"},
    {"conv.wgmma", 2, 0x27ab48cf3475d4aeull,
     "kConvWgmmaGeneratorVersion (kernels/conv_wgmma.h)"},
    {"gemm.wgmma_rs", 2, 0x2f685f953adabad9ull,
     "kGemmWgmmaRsGeneratorVersion (kernels/gemm_wgmma_rs.h)"},
    {"gemm.mma_pk", 1, 0x97e93db8022cd947ull,
     "kGemmMmaPackedGeneratorVersion (kernels/gemm_mma.h)"},
    {"gemm.wgmma_pk", 1, 0xda46a618c964affaull,
     "kGemmWgmmaPackedGeneratorVersion (kernels/gemm_wgmma.h)"},
    {"gemm.wgmma_ps", 1, 0x8365c75bc9c24a1cull,
     "kGemmWgmmaPersistentGeneratorVersion (kernels/gemm_wgmma.h)"},
    {"conv.wgmma_ps", 1, 0x4989feecd19d6a48ull,
     "kConvWgmmaPersistentGeneratorVersion (kernels/conv_wgmma.h)"},
    {"gemm.wgmma_ts", 1, 0x6b2673fcfaaf7ef4ull,
     "kGemmWgmmaTailGeneratorVersion (kernels/gemm_wgmma.h)"},
    {"gemm.gemv", 3, 0xeaff295ae58427a6ull,
     "kGemmGemvGeneratorVersion (kernels/gemm_gemv.h)"},
    {"gemm.ffma_k", 5, 0xed27f92445ff0ecdull,
     "kGemmFfmaKGeneratorVersion (kernels/gemm_ffma_k.h)"},
    {"gemm.ffma_kpk", 2, 0x9c70b2ac1a438f86ull,
     "kGemmFfmaKPackedGeneratorVersion (kernels/gemm_ffma_k.h)"},
    {"conv.wgmma_sk", 1, 0x146e1beb6cf56e57ull,
     "kConvWgmmaSplitGeneratorVersion (kernels/conv_wgmma.h)"},
    {"conv.wgmma_sc", 1, 0x3938eed7ef4e3ad2ull,
     "kConvWgmmaClusterSplitGeneratorVersion (kernels/conv_wgmma.h)"},
    {"gemm.wgmma_sc", 3, 0x38f7706fdb379fdbull,
     "kGemmWgmmaClusterSplitGeneratorVersion (kernels/gemm_wgmma.h)"},
};

struct Case {
  Problem problem;
  std::string params;  // the family's Format
  std::string arch;
};

Problem ParseProblem(const std::string& text, int64_t align = 1) {
  auto ctx = ContextFromString(text);
  EXPECT_TRUE(ctx.ok()) << text << ": " << ctx.status().ToString();
  Problem p(*ctx);
  if (const auto* g = std::get_if<GemmContext>(&p.ctx); g && align > 1) {
    // Leading dimensions rounded up to `align` elements: gemm.mma copies
    // 16-byte chunks of rows.
    auto up = [&](int64_t v) { return (v + align - 1) / align * align; };
    p.lda = up(g->layout_a == Layout::kN ? g->k : g->m);
    p.ldb = up(g->layout_b == Layout::kN ? g->n : g->k);
  }
  return p;
}

const char* const kLayouts[] = {"NN", "NT", "TN", "TT"};

// `stages`: also kernels with ST > 1 (version 2); without them the cases
// are version 1's, whose PTX ST = 1 keeps where loads are vectors
// (FfmaVectorLoadsAreVersionTwosAndStageOneVersionOnes).
std::vector<Case> GemmFfmaCases(bool stages = true) {
  std::vector<Case> out;
  for (const char* l : kLayouts) {
    const std::string layout = std::string(" layout=") + l + " dtype=fp32";
    for (const char* shape :
         {"gemm m=100 n=72 k=300", "gemm m=1 n=1 k=1",
          "gemm m=1023 n=4097 k=515", "gemm m=4096 n=16 k=4096"}) {
      const Problem p = ParseProblem(shape + layout);
      out.push_back({p, "ML=64 NL=64 MS=4 NS=4 U=8 KG=1", "sm_90"});
      out.push_back({p, "ML=32 NL=64 MS=2 NS=4 U=8 KG=4", "sm_90"});
    }
    const Problem p = ParseProblem("gemm m=512 n=512 k=512" + layout);
    out.push_back({p, "ML=96 NL=48 MS=6 NS=3 U=12 KG=1", "sm_80"});
    out.push_back({p, "ML=16 NL=16 MS=1 NS=1 U=4 KG=3", "sm_80"});
    out.push_back({p, "ML=128 NL=128 MS=8 NS=8 U=4 KG=2", "sm_90"});
    if (!stages) continue;
    const Problem q = ParseProblem("gemm m=100 n=72 k=300" + layout);
    out.push_back({q, "ML=64 NL=64 MS=4 NS=4 U=8 KG=1 ST=3", "sm_90"});
    out.push_back({q, "ML=32 NL=64 MS=2 NS=4 U=8 KG=4 ST=2", "sm_80"});
    out.push_back({p, "ML=96 NL=48 MS=6 NS=3 U=12 KG=1 ST=4", "sm_90"});
    out.push_back({p, "ML=16 NL=16 MS=1 NS=1 U=4 KG=3 ST=8", "sm_90"});
  }
  return out;
}

std::vector<Case> ConvFfmaCases(bool stages = true) {
  std::vector<Case> out;
  for (const char* shape : {
           "conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1",
           "conv n=8 h=224 w=224 c=3 k=64 r=7 s=7 pad=3 stride=2 dilation=1",
           "conv n=4 h=28 w=28 c=128 k=128 r=3 s=3 pad=2 stride=1 dilation=2",
           "conv n=2 h=17 w=19 c=5 k=7 r=3 s=1 pad=0x1 stride=2x1 "
           "dilation=1x3",
           "conv n=32 h=7 w=7 c=512 k=2048 r=1 s=1 pad=0 stride=1 dilation=1",
       }) {
    const Problem p = ParseProblem(std::string(shape) + " dtype=fp32");
    out.push_back({p, "ML=64 NL=64 MS=4 NS=4 U=8 KG=1", "sm_90"});
    out.push_back({p, "ML=32 NL=32 MS=2 NS=2 U=8 KG=4", "sm_90"});
    out.push_back({p, "ML=128 NL=32 MS=4 NS=2 U=8 KG=1", "sm_80"});
    if (!stages) continue;
    out.push_back({p, "ML=64 NL=64 MS=4 NS=4 U=8 KG=1 ST=3", "sm_90"});
    out.push_back({p, "ML=32 NL=32 MS=2 NS=2 U=12 KG=4 ST=2", "sm_80"});
  }
  return out;
}

std::vector<Case> GemmMmaCases() {
  std::vector<Case> out;
  for (const char* dtype : {"bf16", "fp16", "tf32"}) {
    const int64_t align = std::string(dtype) == "tf32" ? 4 : 8;
    for (const char* l : kLayouts) {
      const std::string tail =
          std::string(" layout=") + l + " dtype=" + dtype;
      const Problem p = ParseProblem("gemm m=100 n=72 k=300" + tail, align);
      for (const char* params : {
               "bm=128 bn=128 bk=32 wm=2 wn=4 st=3 kg=1 gm=8 sk=0",
               "bm=64 bn=64 bk=32 wm=2 wn=2 st=3 kg=4 gm=8 sk=0",
               "bm=64 bn=64 bk=32 wm=2 wn=2 st=3 kg=4 gm=8 sk=1",
           })
        out.push_back({p, params, "sm_90"});
      // Odd sizes with padded rows, small-N tiles, sm_80.
      out.push_back(
          {ParseProblem("gemm m=1000 n=1023 k=515" + tail, align),
           "bm=32 bn=8 bk=128 wm=2 wn=1 st=5 kg=2 gm=1 sk=1", "sm_80"});
      out.push_back({ParseProblem("gemm m=4096 n=16 k=4096" + tail, align),
                     "bm=256 bn=16 bk=64 wm=8 wn=1 st=2 kg=8 gm=16 sk=0",
                     "sm_80"});
    }
  }
  return out;
}

// Every layout of bf16 and fp16, tf32 in its one layout (A N, B T); one and
// two consumer warpgroups, shallow and deep rings, N-major and K-major B.
// K_G > 1 (the covariance shape 64 x 64 x 4096, an odd tf32 shape) adds the
// reduce entry; cluster pairs (cm=2) with K-major and N-major B, alone and
// with a split. "sm_90" and "sm_90a" both give sm_90a code.
// gemm.wgmma stores C by TMA too (v4): ldc rounded up like lda and ldb.
Problem WgmmaProblem(const std::string& text, int64_t align) {
  Problem p = ParseProblem(text, align);
  const int64_t n = std::get<GemmContext>(p.ctx).n;
  p.ldc = (n + align - 1) / align * align;
  return p;
}

std::vector<Case> GemmWgmmaCases();

// The tail split in every precision (bf16 and fp16 in every layout): 688
// tiles (2048 x 11008 in 128 x 256), an odd M and N with one consumer.
std::vector<Case> GemmWgmmaTailCases() {
  std::vector<Case> out;
  for (const char* l : kLayouts) {
    const std::string d = std::string(" layout=") + l + " dtype=fp16";
    out.push_back({WgmmaProblem("gemm m=700 n=1300 k=900" + d, 8),
                   "bm=128 bn=128 bk=64 st=4 wg=1 gm=8 kg=1 tl=3", "sm_90a"});
  }
  for (const char* dtype : {"bf16", "fp16", "tf32"}) {
    const std::string d = std::string(" layout=NT dtype=") + dtype;
    const bool tf32 = std::string(dtype) == "tf32";
    out.push_back({WgmmaProblem("gemm m=2048 n=11008 k=4096" + d, 8),
                   tf32 ? "bm=128 bn=256 bk=32 st=4 wg=2 gm=16 kg=1 tl=4"
                        : "bm=128 bn=256 bk=64 st=4 wg=2 gm=16 kg=1 tl=4",
                   "sm_90a"});
    out.push_back({WgmmaProblem("gemm m=1000 n=1001 k=515" + d, 8),
                   tf32 ? "bm=64 bn=96 bk=32 st=5 wg=1 gm=4 kg=1 tl=3"
                        : "bm=64 bn=96 bk=64 st=5 wg=1 gm=4 kg=1 tl=2",
                   "sm_90"});
  }
  return out;
}

// gemm.wgmma_sc: every layout (1000^3, the evaluation's lowest shape, in
// clusters of 2; N-major B in two TMA boxes, a wgmma per box), every
// precision, clusters of 2 to 8, two consumer warpgroups, rows padded to 8
// elements, the decode and covariance shapes.
std::vector<Case> GemmWgmmaClusterSplitCases() {
  std::vector<Case> out;
  for (const char* l : kLayouts) {
    out.push_back({WgmmaProblem(std::string("gemm m=1000 n=1000 k=1000 "
                                            "layout=") + l + " dtype=bf16", 8),
                   "bm=128 bn=128 bk=64 st=4 wg=1 gm=8 kg=2 cm=1",
                   "sm_90a"});
  }
  const struct {
    const char* ctx;
    const char* params;
  } cases[] = {
      {"gemm m=512 n=768 k=3072 layout=NT dtype=fp16",
       "bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=8 cm=1"},
      {"gemm m=700 n=300 k=2000 layout=NT dtype=tf32",
       "bm=128 bn=64 bk=32 st=4 wg=2 gm=8 kg=3 cm=1"},
      {"gemm m=4096 n=16 k=4096 layout=NT dtype=bf16",
       "bm=128 bn=16 bk=128 st=5 wg=1 gm=1 kg=4 cm=1"},
      {"gemm m=2560 n=64 k=2560 layout=NN dtype=bf16",
       "bm=64 bn=64 bk=64 st=6 wg=1 gm=4 kg=6 cm=1"},
      {"gemm m=1023 n=517 k=1000 layout=TN dtype=fp16",
       "bm=64 bn=64 bk=64 st=3 wg=1 gm=2 kg=3 cm=1"},
      {"gemm m=64 n=64 k=16384 layout=NT dtype=tf32",
       "bm=64 bn=64 bk=32 st=6 wg=1 gm=1 kg=8 cm=1"}};
  for (const auto& c : cases)
    out.push_back({WgmmaProblem(c.ctx, 8), c.params, "sm_90a"});
  return out;
}

// A case of `ctx` with the leading dimensions given (0: tight).
void AddPadded(std::vector<Case>* out, const std::string& ctx, int64_t lda,
               int64_t ldb, int64_t ldc, const char* params, const char* arch) {
  Problem p = ParseProblem(ctx);
  p.lda = lda;
  p.ldb = ldb;
  p.ldc = ldc;
  out->push_back({p, params, arch});
}

// gemm.ffma_k: a covariance, an MLP layer, a decode product, square and
// ragged NT products with padded rows; every value of LM, TM, TN, WM, WN,
// KC, ST, K_G, WK and CL; copies that do and do not fill the threads;
// sm_90 and sm_80.
std::vector<Case> GemmFfmaKCases() {
  std::vector<Case> out;
  auto add = [&](const std::string& ctx, int64_t lda, int64_t ldb,
                 int64_t ldc, const char* params, const char* arch) {
    AddPadded(&out, ctx, lda, ldb, ldc, params, arch);
  };
  add("gemm m=64 n=64 k=65536 layout=NT dtype=fp32", 0, 0, 0,
      "LM=8 TM=4 TN=4 WM=2 WN=4 KC=32 ST=3 KG=16", "sm_90");
  add("gemm m=64 n=64 k=131072 layout=NT dtype=fp32", 0, 0, 0,
      "LM=8 TM=8 TN=8 WM=1 WN=2 KC=16 ST=2 KG=64", "sm_90");
  add("gemm m=64 n=64 k=16384 layout=NT dtype=fp32", 0, 0, 0,
      "LM=8 TM=4 TN=4 WM=2 WN=4 KC=64 ST=4 KG=8", "sm_90");
  add("gemm m=4096 n=16 k=4096 layout=NT dtype=fp32", 0, 0, 0,
      "LM=16 TM=2 TN=8 WM=4 WN=1 KC=32 ST=4 KG=1", "sm_90");
  add("gemm m=4096 n=1 k=4096 layout=NT dtype=fp32", 0, 0, 0,
      "LM=32 TM=2 TN=1 WM=4 WN=1 KC=16 ST=3 KG=2", "sm_90");
  add("gemm m=4096 n=4096 k=4096 layout=NT dtype=fp32", 0, 0, 0,
      "LM=4 TM=8 TN=4 WM=4 WN=2 KC=16 ST=4 KG=1", "sm_90");
  add("gemm m=1000 n=50 k=1001 layout=NT dtype=fp32", 1004, 1004, 53,
      "LM=8 TM=1 TN=2 WM=8 WN=4 KC=16 ST=2 KG=8", "sm_80");
  add("gemm m=12288 n=8 k=4096 layout=NT dtype=fp32", 0, 0, 0,
      "LM=32 TM=4 TN=2 WM=2 WN=2 KC=32 ST=3 KG=1", "sm_90");
  add("gemm m=2048 n=4096 k=4096 layout=NT dtype=fp32", 0, 0, 0,
      "LM=4 TM=8 TN=8 WM=2 WN=1 KC=16 ST=3 KG=1", "sm_90");
  add("gemm m=777 n=333 k=1555 layout=NT dtype=fp32", 1556, 1560, 0,
      "LM=16 TM=4 TN=2 WM=2 WN=4 KC=64 ST=3 KG=32", "sm_80");
  add("gemm m=33 n=9 k=5 layout=NT dtype=fp32", 8, 8, 9,
      "LM=4 TM=2 TN=1 WM=1 WN=1 KC=16 ST=2 KG=4", "sm_90");
  // Stages split over WK = 2, 4 and 8 groups of warps (a sum in shared
  // memory larger than the ring at WK = 4 with 8 x 8 per lane).
  add("gemm m=64 n=64 k=65536 layout=NT dtype=fp32", 0, 0, 0,
      "LM=8 TM=8 TN=4 WM=1 WN=4 KC=32 ST=3 KG=128 WK=2", "sm_90");
  add("gemm m=7168 n=16 k=7168 layout=NT dtype=fp32", 0, 0, 0,
      "LM=8 TM=4 TN=4 WM=2 WN=1 KC=32 ST=3 KG=8 WK=4", "sm_90");
  add("gemm m=1000 n=70 k=1001 layout=NT dtype=fp32", 1004, 1004, 71,
      "LM=4 TM=8 TN=8 WM=1 WN=1 KC=16 ST=2 KG=1 WK=4", "sm_80");
  add("gemm m=64 n=64 k=4096 layout=NT dtype=fp32", 0, 0, 0,
      "LM=8 TM=1 TN=8 WM=2 WN=1 KC=64 ST=3 KG=8 WK=8", "sm_90");
  // Clusters of CL splits adding their sums in distributed shared memory
  // (v3): into K_G / CL partial sums, into C (K_G = CL), with WK groups, K_G
  // 512 and 1024.
  add("gemm m=64 n=64 k=65536 layout=NT dtype=fp32", 0, 0, 0,
      "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=512 CL=8", "sm_90");
  add("gemm m=4096 n=16 k=4096 layout=NT dtype=fp32", 0, 0, 0,
      "LM=16 TM=2 TN=8 WM=4 WN=1 KC=32 ST=4 KG=4 CL=4", "sm_90");
  add("gemm m=64 n=64 k=131072 layout=NT dtype=fp32", 0, 0, 0,
      "LM=8 TM=8 TN=4 WM=1 WN=4 KC=32 ST=3 KG=1024 WK=2 CL=2", "sm_90");
  add("gemm m=1000 n=50 k=1001 layout=NT dtype=fp32", 1004, 1004, 53,
      "LM=8 TM=1 TN=2 WM=8 WN=4 KC=16 ST=2 KG=8 CL=8", "sm_90");
  // K_G that is no power of two (v5): the MLP layer of 7 x 1024 rows in 56
  // x 7 programs, 3 splits on sm_80, 6 in clusters of 2.
  add("gemm m=7168 n=16 k=7168 layout=NT dtype=fp32", 0, 0, 0,
      "LM=16 TM=4 TN=8 WM=2 WN=1 KC=64 ST=3 KG=7 WK=4", "sm_90");
  add("gemm m=1000 n=50 k=1001 layout=NT dtype=fp32", 1004, 1004, 53,
      "LM=8 TM=1 TN=2 WM=8 WN=4 KC=16 ST=2 KG=3", "sm_80");
  add("gemm m=4096 n=16 k=4096 layout=NT dtype=fp32", 0, 0, 0,
      "LM=16 TM=2 TN=8 WM=4 WN=1 KC=32 ST=4 KG=6 CL=2", "sm_90");
  return out;
}

// gemm.ffma_kpk: A, B or both packed (rows of an odd K, or padded rows
// that are no multiple of 4), with and without a split over K, clusters,
// sm_90 and sm_80.
std::vector<Case> GemmFfmaKPackedCases() {
  std::vector<Case> out;
  auto add = [&](const std::string& ctx, int64_t lda, int64_t ldb,
                 int64_t ldc, const char* params, const char* arch) {
    AddPadded(&out, ctx, lda, ldb, ldc, params, arch);
  };
  add("gemm m=777 n=333 k=1555 layout=NT dtype=fp32", 0, 0, 0,
      "LM=8 TM=4 TN=8 WM=2 WN=1 KC=32 ST=3 KG=1 WK=2", "sm_90");
  add("gemm m=777 n=333 k=1555 layout=NT dtype=fp32", 0, 0, 0,
      "LM=4 TM=8 TN=4 WM=2 WN=2 KC=16 ST=4 KG=8", "sm_80");
  add("gemm m=64 n=64 k=65535 layout=NT dtype=fp32", 0, 0, 0,
      "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=256 CL=8", "sm_90");
  add("gemm m=4096 n=16 k=4096 layout=NT dtype=fp32", 4096, 4099, 0,
      "LM=16 TM=4 TN=8 WM=2 WN=1 KC=32 ST=3 KG=8 WK=4", "sm_90");
  add("gemm m=1000 n=50 k=1000 layout=NT dtype=fp32", 1001, 1000, 53,
      "LM=8 TM=1 TN=2 WM=8 WN=4 KC=16 ST=2 KG=1", "sm_90");
  add("gemm m=1000 n=50 k=1000 layout=NT dtype=fp32", 1000, 1002, 50,
      "LM=8 TM=1 TN=2 WM=8 WN=4 KC=16 ST=2 KG=4 CL=2", "sm_90");
  add("gemm m=4097 n=1 k=4095 layout=NT dtype=fp32", 0, 0, 0,
      "LM=32 TM=2 TN=1 WM=4 WN=1 KC=16 ST=3 KG=2", "sm_90");
  add("gemm m=2049 n=4099 k=4093 layout=NT dtype=fp32", 0, 0, 0,
      "LM=4 TM=8 TN=8 WM=2 WN=2 KC=16 ST=3 KG=1", "sm_90");
  add("gemm m=33 n=9 k=5 layout=NT dtype=fp32", 0, 0, 9,
      "LM=4 TM=2 TN=1 WM=1 WN=1 KC=16 ST=2 KG=4", "sm_80");
  add("gemm m=64 n=64 k=16383 layout=NT dtype=fp32", 0, 0, 0,
      "LM=8 TM=8 TN=4 WM=1 WN=4 KC=32 ST=3 KG=128 WK=2", "sm_90");
  add("gemm m=512 n=16 k=513 layout=NT dtype=fp32", 513, 516, 16,
      "LM=8 TM=4 TN=4 WM=2 WN=1 KC=64 ST=2 KG=8 WK=4 CL=8", "sm_90");
  return out;
}

// gemm.gemv: NT with 1, 3, 8, 16, 64 and 100 columns and NN of one
// column, every value of R, NC, W, WN, V, U and PF, K_G 1 and > 1, column
// tiles narrower than N with a ragged last one, tails of M and K, padded
// rows, sm_90 and sm_80.
std::vector<Case> GemmGemvCases() {
  std::vector<Case> out;
  auto add = [&](const std::string& ctx, int64_t lda, int64_t ldb,
                 int64_t ldc, const char* params, const char* arch) {
    AddPadded(&out, ctx, lda, ldb, ldc, params, arch);
  };
  add("gemm m=4096 n=1 k=4096 layout=NT dtype=fp32", 0, 0, 0,
      "R=2 NC=1 W=4 WN=1 V=4 U=2 KG=1", "sm_90");
  add("gemm m=4096 n=1 k=4096 layout=NN dtype=fp32", 0, 0, 0,
      "R=1 NC=1 W=8 WN=1 V=4 U=4 KG=1", "sm_90");
  add("gemm m=1000 n=3 k=1000 layout=NT dtype=fp32", 1004, 1008, 4,
      "R=4 NC=4 W=2 WN=1 V=2 U=1 KG=2", "sm_90");
  add("gemm m=4104 n=8 k=4100 layout=NT dtype=fp32", 0, 0, 0,
      "R=4 NC=8 W=4 WN=1 V=4 U=2 KG=1", "sm_90");
  add("gemm m=11008 n=2 k=4096 layout=NT dtype=fp32", 0, 0, 0,
      "R=1 NC=2 W=2 WN=1 V=1 U=4 KG=8", "sm_80");
  add("gemm m=777 n=5 k=3333 layout=NT dtype=fp32", 3333, 3335, 7,
      "R=2 NC=2 W=8 WN=2 V=1 U=1 KG=1", "sm_80");
  add("gemm m=256 n=1 k=16384 layout=NT dtype=fp32", 0, 0, 0,
      "R=1 NC=1 W=4 WN=1 V=4 U=4 KG=4", "sm_90");
  add("gemm m=14336 n=4 k=4096 layout=NT dtype=fp32", 4100, 4104, 0,
      "R=2 NC=4 W=2 WN=1 V=2 U=4 KG=1", "sm_90");
  add("gemm m=1000 n=1 k=4100 layout=NN dtype=fp32", 0, 1, 1,
      "R=4 NC=1 W=8 WN=1 V=4 U=1 PF=1 KG=2", "sm_80");
  add("gemm m=3 n=7 k=5 layout=NT dtype=fp32", 0, 0, 0,
      "R=2 NC=4 W=4 WN=2 V=1 U=2 KG=1", "sm_90");
  add("gemm m=64 n=64 k=65536 layout=NT dtype=fp32", 0, 0, 0,
      "R=8 NC=8 W=2 WN=4 V=4 U=1 PF=0 KG=64", "sm_90");
  add("gemm m=64 n=64 k=65536 layout=NT dtype=fp32", 0, 0, 0,
      "R=4 NC=8 W=2 WN=4 V=4 U=1 PF=1 KG=16", "sm_90");
  add("gemm m=7168 n=16 k=7168 layout=NT dtype=fp32", 0, 0, 0,
      "R=2 NC=16 W=1 WN=1 V=4 U=1 PF=1 KG=4", "sm_90");
  add("gemm m=1000 n=100 k=999 layout=NT dtype=fp32", 0, 0, 101,
      "R=1 NC=16 W=1 WN=4 V=1 U=2 PF=1 KG=16", "sm_80");
  add("gemm m=4096 n=16 k=4096 layout=NT dtype=fp32", 0, 0, 0,
      "R=2 NC=8 W=4 WN=2 V=4 U=2 KG=32", "sm_90");
  return out;
}

std::vector<Case> GemmWgmmaCases() {
  std::vector<Case> out;
  for (const char* dtype : {"bf16", "fp16"}) {
    for (const char* l : kLayouts) {
      const std::string tail =
          std::string(" layout=") + l + " dtype=" + dtype;
      const Problem p = WgmmaProblem("gemm m=100 n=72 k=300" + tail, 8);
      out.push_back({p, "bm=128 bn=128 bk=64 st=4 wg=1 gm=8 kg=1", "sm_90"});
      out.push_back({p, "bm=128 bn=256 bk=64 st=4 wg=2 gm=8 kg=1", "sm_90a"});
      out.push_back({WgmmaProblem("gemm m=1000 n=1023 k=515" + tail, 8),
                     "bm=64 bn=64 bk=128 st=3 wg=1 gm=1 kg=1", "sm_90"});
      out.push_back({p, "bm=128 bn=64 bk=64 st=4 wg=1 gm=8 kg=1 cm=2",
                     "sm_90a"});
      out.push_back({WgmmaProblem("gemm m=64 n=64 k=4096" + tail, 8),
                     "bm=64 bn=64 bk=64 st=4 wg=1 gm=8 kg=6", "sm_90"});
    }
  }
  const std::string tf32 = " layout=NT dtype=tf32";
  out.push_back({WgmmaProblem("gemm m=100 n=72 k=300" + tf32, 4),
                 "bm=128 bn=128 bk=32 st=4 wg=1 gm=8 kg=1", "sm_90"});
  out.push_back({WgmmaProblem("gemm m=1000 n=1023 k=515" + tf32, 4),
                 "bm=256 bn=96 bk=32 st=3 wg=2 gm=4 kg=1", "sm_90a"});
  out.push_back({WgmmaProblem("gemm m=4096 n=16 k=4096" + tf32, 4),
                 "bm=64 bn=16 bk=128 st=4 wg=1 gm=16 kg=1", "sm_90"});
  out.push_back({WgmmaProblem("gemm m=4096 n=4096 k=4096" + tf32, 4),
                 "bm=128 bn=256 bk=32 st=4 wg=2 gm=8 kg=1 cm=2", "sm_90"});
  out.push_back({WgmmaProblem("gemm m=1000 n=1023 k=515" + tf32, 4),
                 "bm=128 bn=128 bk=32 st=4 wg=1 gm=8 kg=3", "sm_90"});
  out.push_back({WgmmaProblem("gemm m=300 n=200 k=2048" + tf32, 4),
                 "bm=64 bn=128 bk=32 st=4 wg=1 gm=1 kg=4 cm=2", "sm_90"});
  return out;
}

// Every precision; 16-byte copies (C a multiple of 8), and the narrow
// pieces of C = 3 (the stem: 2-byte bf16/fp16, 4-byte tf32), C = 12 (8-byte
// bf16) and C = 6 (4-byte bf16); pad, stride, dilation per axis; 1x1 and
// 7x7; K_G > 1 (the reduce entry); sm_80.
std::vector<Case> ConvMmaCases() {
  std::vector<Case> out;
  for (const char* dtype : {"bf16", "fp16", "tf32"}) {
    const std::string tail = std::string(" dtype=") + dtype;
    for (const char* shape : {
             "conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1",
             "conv n=8 h=224 w=224 c=3 k=64 r=7 s=7 pad=3 stride=2 "
             "dilation=1",
             "conv n=2 h=17 w=19 c=12 k=7 r=3 s=1 pad=0x1 stride=2x1 "
             "dilation=1x3",
             "conv n=32 h=7 w=7 c=512 k=2048 r=1 s=1 pad=0 stride=1 "
             "dilation=1",
         }) {
      const Problem p = ParseProblem(std::string(shape) + tail);
      out.push_back({p, "bm=128 bn=128 bk=32 wm=2 wn=4 st=4 kg=1 gm=8",
                     "sm_90"});
      out.push_back({p, "bm=64 bn=64 bk=32 wm=2 wn=2 st=3 kg=4 gm=4",
                     "sm_90"});
    }
    out.push_back({ParseProblem("conv n=1 h=9 w=9 c=6 k=24 r=5 s=5 pad=2 "
                                "stride=1 dilation=2" + tail),
                   "bm=32 bn=8 bk=64 wm=2 wn=1 st=5 kg=2 gm=1", "sm_80"});
  }
  return out;
}

// Every precision; one and two consumer warpgroups, bk of one and two
// 128-byte steps, tiles with and without the TMA-store epilogue (bn 96 is
// not whole 128-byte boxes in bf16); the PTX does not depend on the geometry, which
// the cases vary anyway.
std::vector<Case> ConvWgmmaCases() {
  std::vector<Case> out;
  for (const char* dtype : {"bf16", "fp16", "tf32"}) {
    const std::string tail = std::string(" dtype=") + dtype;
    const bool tf32 = std::string(dtype) == "tf32";
    for (const char* shape : {
             "conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1",
             "conv n=32 h=28 w=28 c=256 k=512 r=1 s=1 pad=0 stride=2 "
             "dilation=1",
             "conv n=2 h=17 w=19 c=24 k=40 r=3 s=5 pad=1x2 stride=2x1 "
             "dilation=1x2",
         }) {
      const Problem p = ParseProblem(std::string(shape) + tail);
      out.push_back({p, tf32 ? "bm=128 bn=256 bk=32 st=4 wg=2 gm=8"
                             : "bm=128 bn=256 bk=64 st=4 wg=2 gm=8",
                     "sm_90a"});
      out.push_back({p, "bm=64 bn=96 bk=64 st=3 wg=1 gm=1", "sm_90a"});
      out.push_back({p, tf32 ? "bm=128 bn=64 bk=64 st=4 wg=1 gm=4"
                             : "bm=128 bn=64 bk=128 st=4 wg=1 gm=4",
                     "sm_90a"});
    }
  }
  return out;
}

// The batch-1 layers the reduction splits are for, each precision, with
// one tile (bk per precision) for each: issue 18's 3x3 over 8x8 pixels, a
// 56x56 layer with two consumer warpgroups, a 1x1 (the split walks channel
// steps only), a strided and dilated layer.
std::vector<Case> ConvSplitLayerCases(const std::string (&tiles)[4][2]) {
  const char* const layers[] = {
      "conv n=1 h=8 w=8 c=256 k=256 r=3 s=3 pad=1 stride=1 dilation=1",
      "conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1",
      "conv n=1 h=7 w=7 c=512 k=512 r=1 s=1 pad=0 stride=1 dilation=1",
      "conv n=2 h=17 w=19 c=24 k=40 r=3 s=5 pad=1x2 stride=2x1 dilation=1x2"};
  std::vector<Case> out;
  for (const char* dtype : {"bf16", "fp16", "tf32"}) {
    const std::string tail = std::string(" dtype=") + dtype;
    const bool tf32 = std::string(dtype) == "tf32";
    const std::string bk = tf32 ? "bk=32" : "bk=64";
    for (int i = 0; i < 4; ++i) {
      out.push_back({ParseProblem(layers[i] + tail),
                     tiles[i][0] + " " + bk + " " + tiles[i][1], "sm_90a"});
    }
  }
  return out;
}

// conv.wgmma_sk: splits that divide the k tiles and ones that do not.
std::vector<Case> ConvWgmmaSplitCases() {
  static const std::string tiles[4][2] = {
      {"bm=64 bn=64", "st=4 wg=1 gm=1 kg=8"},
      {"bm=128 bn=64", "st=4 wg=2 gm=1 kg=3"},
      {"bm=64 bn=128", "st=3 wg=1 gm=2 kg=4"},
      {"bm=64 bn=96", "st=3 wg=1 gm=1 kg=6"}};
  return ConvSplitLayerCases(tiles);
}

// conv.wgmma_sc: clusters of 8 (issue 18's 8x8 tile), 3 (two consumer
// warpgroups), 4 (a 1x1) and 6 (strided, dilated, a tile of 96 columns).
std::vector<Case> ConvWgmmaClusterSplitCases() {
  static const std::string tiles[4][2] = {
      {"bm=64 bn=16", "st=5 wg=1 gm=1 kg=8"},
      {"bm=128 bn=64", "st=4 wg=2 gm=1 kg=3"},
      {"bm=64 bn=128", "st=3 wg=1 gm=2 kg=4"},
      {"bm=64 bn=96", "st=3 wg=1 gm=1 kg=6"}};
  return ConvSplitLayerCases(tiles);
}

// gemm.wgmma_rs: tf32 NN (swapped, C stored transposed) and TT, one and
// two consumer warpgroups, a deep k (banks alternate many times), beta's
// register epilogue; TT with a split (the reduce entry) and a cluster pair.
std::vector<Case> GemmWgmmaRsCases() {
  std::vector<Case> out;
  for (const char* l : {"NN", "TT"}) {
    const std::string tail = std::string(" layout=") + l + " dtype=tf32";
    const Problem p = WgmmaProblem("gemm m=100 n=72 k=300" + tail, 4);
    out.push_back({p, "bm=128 bn=128 bk=32 st=4 wg=1 gm=8 kg=1", "sm_90"});
    out.push_back({p, "bm=128 bn=256 bk=32 st=4 wg=2 gm=8 kg=1", "sm_90a"});
    out.push_back({WgmmaProblem("gemm m=1000 n=1023 k=515" + tail, 4),
                   "bm=64 bn=64 bk=64 st=3 wg=1 gm=1 kg=1", "sm_90"});
    out.push_back({p, "bm=128 bn=64 bk=32 st=4 wg=1 gm=8 kg=1 cm=2",
                   "sm_90a"});
  }
  out.push_back({WgmmaProblem("gemm m=64 n=64 k=4096 layout=TT dtype=tf32", 4),
                 "bm=64 bn=64 bk=32 st=4 wg=1 gm=8 kg=6", "sm_90"});
  out.push_back({WgmmaProblem("gemm m=33 n=17 k=7 layout=NN dtype=tf32", 4),
                 "bm=64 bn=32 bk=128 st=2 wg=1 gm=2 kg=1", "sm_90"});
  return out;
}

// gemm.mma_pk: every precision and layout; A packed, B packed, both; K_G
// > 1 by the reduce entry and by the tree; sm_80.
std::vector<Case> GemmMmaPackedCases() {
  std::vector<Case> out;
  for (const char* dtype : {"bf16", "fp16", "tf32"}) {
    const std::string tail = std::string(" dtype=") + dtype;
    for (const char* l : {"NN", "NT", "TN", "TT"}) {
      const std::string layout = std::string(" layout=") + l;
      out.push_back({ParseProblem("gemm m=777 n=333 k=1555" + layout + tail),
                     "bm=64 bn=64 bk=64 wm=2 wn=2 st=4 kg=1 gm=8 sk=0",
                     "sm_90"});
    }
    // B's rows (N = 4097) only; A's (K = 520) are aligned.
    out.push_back({ParseProblem("gemm m=1023 n=4097 k=520 layout=NN" + tail),
                   "bm=128 bn=128 bk=32 wm=2 wn=4 st=3 kg=2 gm=8 sk=0",
                   "sm_90"});
    // A's rows (M = 3001, transposed) only.
    out.push_back({ParseProblem("gemm m=3001 n=64 k=2048 layout=TN" + tail),
                   "bm=64 bn=64 bk=32 wm=2 wn=2 st=4 kg=4 gm=4 sk=1",
                   "sm_80"});
  }
  return out;
}

// gemm.wgmma_pk: every precision and layout (tf32: the M- and N-major
// operands transposed); A packed, B packed, both; rows of 16 but not 128
// bytes (wide loads) and of neither; K_G > 1; a cluster pair; two
// consumers.
std::vector<Case> GemmWgmmaPackedCases() {
  std::vector<Case> out;
  for (const char* dtype : {"bf16", "fp16", "tf32"}) {
    const std::string tail = std::string(" dtype=") + dtype;
    const bool tf32 = std::string(dtype) == "tf32";
    for (const char* l : {"NN", "NT", "TN", "TT"}) {
      const std::string layout = std::string(" layout=") + l;
      out.push_back({ParseProblem("gemm m=777 n=333 k=1555" + layout + tail),
                     tf32 ? "bm=128 bn=128 bk=32 st=4 wg=1 gm=8 kg=1 cm=1"
                          : "bm=128 bn=128 bk=64 st=4 wg=1 gm=8 kg=1 cm=1",
                     "sm_90a"});
    }
    // B's rows (N = 4097) only; A's (K = 520) are 16-byte aligned: packed
    // with 16-byte loads.
    out.push_back({ParseProblem("gemm m=1023 n=4097 k=520 layout=NN" + tail),
                   tf32 ? "bm=128 bn=256 bk=32 st=3 wg=2 gm=8 kg=2 cm=1"
                        : "bm=128 bn=256 bk=64 st=3 wg=2 gm=8 kg=2 cm=1",
                   "sm_90a"});
    // A's rows of 16 but not 128 bytes (K = 1000: 16-byte loads), B's of
    // neither (N = 1001); a cluster pair.
    out.push_back({ParseProblem("gemm m=1000 n=1001 k=1000 layout=NN" + tail),
                   tf32 ? "bm=128 bn=32 bk=32 st=6 wg=1 gm=4 kg=1 cm=2"
                        : "bm=128 bn=64 bk=64 st=6 wg=1 gm=4 kg=1 cm=2",
                   "sm_90a"});
  }
  return out;
}

std::vector<Case> CasesOf(std::string_view family) {
  if (family == "gemm.mma_pk") return GemmMmaPackedCases();
  if (family == "gemm.wgmma_pk") return GemmWgmmaPackedCases();
  if (family == "gemm.ffma") return GemmFfmaCases();
  if (family == "conv.ffma") return ConvFfmaCases();
  if (family == "gemm.mma") return GemmMmaCases();
  if (family == "gemm.wgmma") return GemmWgmmaCases();
  if (family == "conv.mma") return ConvMmaCases();
  if (family == "conv.wgmma") return ConvWgmmaCases();
  if (family == "gemm.wgmma_rs") return GemmWgmmaRsCases();
  // The persistent families emit their base family's PTX.
  if (family == "gemm.wgmma_ps") return GemmWgmmaCases();
  if (family == "gemm.wgmma_ts") return GemmWgmmaTailCases();
  if (family == "gemm.gemv") return GemmGemvCases();
  if (family == "gemm.ffma_k") return GemmFfmaKCases();
  if (family == "gemm.ffma_kpk") return GemmFfmaKPackedCases();
  if (family == "conv.wgmma_ps") return ConvWgmmaCases();
  if (family == "conv.wgmma_sk") return ConvWgmmaSplitCases();
  if (family == "conv.wgmma_sc") return ConvWgmmaClusterSplitCases();
  if (family == "gemm.wgmma_sc") return GemmWgmmaClusterSplitCases();
  return {};
}

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%016" PRIx64 "ull", v);
  return buf;
}

// The hash of everything `family` emits for `cases` (default: its own).
uint64_t HashOf(const KernelFamily& family, const std::vector<Case>* cases = nullptr) {
  Fnv1a fnv;
  const std::vector<Case> own = cases ? std::vector<Case>() : CasesOf(family.name());
  for (const Case& c : cases ? *cases : own) {
    auto params = family.Parse(c.params);
    EXPECT_TRUE(params.ok()) << c.params << ": " << params.status().ToString();
    if (!params.ok()) continue;
    // The cases are kernels the family would run.
    const Status can = family.CanImplement(c.problem, *params, KernelLimits{});
    EXPECT_TRUE(can.ok()) << family.name() << " " << c.params << " "
                          << ToString(c.problem.ctx) << ": " << can.ToString();
    auto k = family.Generate(c.problem, *params, c.arch);
    EXPECT_TRUE(k.ok()) << family.name() << " " << c.params << " "
                        << ToString(c.problem.ctx) << ": "
                        << k.status().ToString();
    if (!k.ok()) continue;
    fnv.Add(k->ptx);
    fnv.Add(k->entry);
    fnv.Add(k->reduce_entry);
    if (!k->pack_entry.empty()) fnv.Add(k->pack_entry);
    // The launch: a persistent grid is another measurement of the same PTX.
    if (k->persistent) fnv.Add("persistent");
  }
  return fnv.h;
}

TEST(FamilyGoldenTest, EveryFamilyHasCasesAndARow) {
  for (const KernelFamily* f : Families()) {
    const std::vector<Case> cases = CasesOf(f->name());
    EXPECT_GE(cases.size(), 10u)
        << "family_golden_test has no cases for " << f->name()
        << ": add a list (all layouts, every precision, K_G = 1 and > 1)";
    bool found = false;
    for (const Golden& g : kGolden) found |= f->name() == g.family;
    EXPECT_TRUE(found) << "kGolden has no row for " << f->name() << ": add {\""
                       << f->name() << "\", " << f->version() << ", "
                       << Hex(HashOf(*f)) << ", ...}";
    // Every precision the family implements is among its cases.
    for (DType d : f->precisions()) {
      bool has = false;
      for (const Case& c : cases) has |= DTypeOf(c.problem.ctx) == d;
      EXPECT_TRUE(has) << f->name() << " has no golden case in "
                       << ToString(d);
    }
  }
}

TEST(FamilyGoldenTest, EmittedPtxMatchesTheGoldenHashOfItsVersion) {
  for (const Golden& g : kGolden) {
    auto f = FindFamily(g.family);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    const uint64_t hash = HashOf(**f);
    const int version = (*f)->version();
    if (version != g.version) {
      ADD_FAILURE() << "generator version of " << g.family << " is now "
                    << version << ", the golden table has " << g.version
                    << ": update its row in kernels/family_golden_test.cc to {\""
                    << g.family << "\", " << version << ", " << Hex(hash)
                    << ", ...}";
    } else if (hash != g.hash) {
      ADD_FAILURE() << "emitted PTX of " << g.family
                    << " changed without a generator version bump: bump "
                    << g.constant << " to " << version + 1
                    << " and set the golden hash to " << Hex(hash);
    }
  }
}

// The cases whose kernels load both operands (a convolution: its filter)
// in 16-byte vectors, which version 3's shared walk leaves alone.
std::vector<Case> VectorLoadCases(const std::vector<Case>& cases) {
  std::vector<Case> out;
  for (const Case& c : cases) {
    const KernelFamily& f = **FindFamily(OpOf(c.problem.ctx) == Op::kGemm
                                             ? "gemm.ffma"
                                             : "conv.ffma");
    auto params = f.Parse(c.params);
    EXPECT_TRUE(params.ok()) << c.params;
    if (!params.ok()) continue;
    auto k = GenerateKernel(c.problem.ctx, ToBlockShape(*params), c.arch);
    EXPECT_TRUE(k.ok()) << c.params << ": " << k.status().ToString();
    if (!k.ok()) continue;
    const bool gemm = OpOf(c.problem.ctx) == Op::kGemm;
    if (k->vector_b == 4 && (!gemm || k->vector_a == 4)) out.push_back(c);
  }
  return out;
}

// Version 3 changes scalar loads only: where both operands load 16-byte
// vectors, it emits version 2's PTX byte for byte (so those samples keep
// their measurements: server/sample_digest.h), and there ST = 1 is still
// the generator before ST, version 1. The hashes of those cases were
// computed with version 2's generator (main at 534ba0b); version 1's full
// hashes (7671ef6) were 0x8259040aee847e9f (gemm) and 0x254ad1d6c4984dcb
// (conv), which version 2 kept for ST = 1.
TEST(FamilyGoldenTest, FfmaVectorLoadsAreVersionTwosAndStageOneVersionOnes) {
  const std::vector<Case> gemm1 = VectorLoadCases(GemmFfmaCases(/*stages=*/false));
  const std::vector<Case> conv1 = VectorLoadCases(ConvFfmaCases(/*stages=*/false));
  const std::vector<Case> gemm2 = VectorLoadCases(GemmFfmaCases());
  const std::vector<Case> conv2 = VectorLoadCases(ConvFfmaCases());
  EXPECT_EQ(gemm1.size(), 28u);
  EXPECT_EQ(conv1.size(), 9u);
  EXPECT_EQ(gemm2.size(), 44u);
  EXPECT_EQ(conv2.size(), 15u);
  EXPECT_EQ(Hex(HashOf(**FindFamily("gemm.ffma"), &gemm1)), Hex(0x6d33cad35aae7ce7ull));
  EXPECT_EQ(Hex(HashOf(**FindFamily("conv.ffma"), &conv1)), Hex(0xe8a6eaea52d830fdull));
  EXPECT_EQ(Hex(HashOf(**FindFamily("gemm.ffma"), &gemm2)), Hex(0xd2a434dbb037fae1ull));
  EXPECT_EQ(Hex(HashOf(**FindFamily("conv.ffma"), &conv2)), Hex(0x0591912b41529b49ull));
}

// The seam adds nothing to the PTX: the families' Generate returns what
// the generators return when called directly.
TEST(FamilyGoldenTest, FamiliesEmitWhatTheGeneratorsEmit) {
  for (const char* name : {"gemm.ffma", "conv.ffma", "gemm.mma", "gemm.wgmma"}) {
    const KernelFamily& f = **FindFamily(name);
    for (const Case& c : CasesOf(name)) {
      SCOPED_TRACE(std::string(name) + " " + c.params + " " +
                   ToString(c.problem.ctx) + " " + c.arch);
      auto params = f.Parse(c.params);
      ASSERT_TRUE(params.ok());
      auto k = f.Generate(c.problem, *params, c.arch);
      ASSERT_TRUE(k.ok()) << k.status().ToString();
      if (f.name() == "gemm.wgmma") {
        WgmmaParams w;
        for (int i = 0; i < params->size; ++i) {
          const std::string& key = f.params()[i].name;
          int64_t* field = key == "bm"   ? &w.bm
                           : key == "bn" ? &w.bn
                           : key == "bk" ? &w.bk
                           : key == "st" ? &w.stages
                           : key == "wg" ? &w.consumers
                           : key == "gm" ? &w.group_m
                           : key == "cm" ? &w.cluster_m
                                         : &w.kg;
          *field = (*params)[i];
        }
        EXPECT_EQ(ToString(w), f.Format(*params));
        auto direct = GenerateGemmWgmma(c.problem, w, "sm_90a");
        ASSERT_TRUE(direct.ok()) << direct.status().ToString();
        EXPECT_TRUE(k->ptx == direct->ptx) << "PTX differs through the seam";
        EXPECT_EQ(k->entry, direct->entry);
        EXPECT_EQ(k->grid, direct->grid);
        EXPECT_EQ(k->block, direct->block);
        EXPECT_EQ(k->dynamic_shared_bytes, direct->shared_bytes);
        ASSERT_EQ(k->tensor_maps.size(), 3u);
        EXPECT_EQ(ToString(k->tensor_maps[0].map), ToString(direct->map_a));
        EXPECT_EQ(ToString(k->tensor_maps[1].map), ToString(direct->map_b));
        EXPECT_EQ(ToString(k->tensor_maps[2].map), ToString(direct->map_c));
        continue;
      }
      if (f.name() == "gemm.mma") {
        auto m = MmaParamsFromString(c.params);
        ASSERT_TRUE(m.ok());
        MmaProblem mp;
        mp.ctx = std::get<GemmContext>(c.problem.ctx);
        auto prec = MmaPrecisionFromString(ToString(mp.ctx.dtype));
        ASSERT_TRUE(prec.ok());
        mp.precision = *prec;
        mp.ctx.dtype = StorageType(mp.precision);
        mp.lda = c.problem.lda;
        mp.ldb = c.problem.ldb;
        mp.ldc = c.problem.ldc;
        auto direct = GenerateGemmMma(mp, *m, c.arch);
        ASSERT_TRUE(direct.ok()) << direct.status().ToString();
        EXPECT_TRUE(k->ptx == direct->ptx);
        EXPECT_EQ(k->entry, direct->entry);
        EXPECT_EQ(k->reduce_entry, direct->reduce_entry);
        EXPECT_EQ(k->grid, direct->grid);
        EXPECT_EQ(k->block, direct->block);
        EXPECT_EQ(k->dynamic_shared_bytes, direct->shared_bytes);
        EXPECT_EQ(k->workspace_bytes, direct->workspace_bytes);
        continue;
      }
      auto xb = BlockShapeFromString(c.params);
      ASSERT_TRUE(xb.ok());
      auto direct =
          f.op() == Op::kGemm
              ? GenerateGemm(std::get<GemmContext>(c.problem.ctx), *xb, c.arch)
              : GenerateConv(std::get<ConvContext>(c.problem.ctx), *xb,
                             c.arch);
      ASSERT_TRUE(direct.ok()) << direct.status().ToString();
      EXPECT_TRUE(k->ptx == direct->ptx) << "PTX differs through the seam";
      EXPECT_EQ(k->entry, direct->entry);
      EXPECT_EQ(k->reduce_entry, direct->reduce_entry);
      EXPECT_EQ(k->grid, direct->grid);
      EXPECT_EQ(k->block, direct->block);
      EXPECT_EQ(k->reduce_grid, direct->reduce_grid);
      EXPECT_EQ(k->reduce_block, direct->reduce_block);
      EXPECT_EQ(k->workspace_bytes, direct->workspace_bytes);
    }
  }
}

}  // namespace
}  // namespace blocktune
