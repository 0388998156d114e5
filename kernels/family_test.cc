// The family registry and every registered family through the generic
// interface (kernels/family.h), on the CPU: names and errors, parameter
// tables, defaults over a spread of contexts on an sm_90 and an sm_80
// device, Format/Parse, CanImplement's refusals, and the consistency of
// what Generate returns with Shape and with the PTX it carries.
#include "kernels/family.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/gemm_ffma_k.h"
#include "kernels/gemm_gemv.h"
#include "kernels/gemm_mma.h"
#include "kernels/gemm_ptx.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;

// The two devices the checks run against: the H100 (KernelLimits'
// defaults) and an A100-like sm_80 (163 KiB opt-in shared memory).
KernelLimits H100() { return KernelLimits{}; }
KernelLimits Sm80() {
  KernelLimits l;
  l.max_dynamic_shared_bytes = 163 * 1024;
  l.compute_capability = 80;
  return l;
}

const KernelFamily& Family(std::string_view name) {
  auto f = FindFamily(name);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return **f;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(c));
  return out;
}

GemmContext Gemm(int64_t m, int64_t n, int64_t k, Layout la, Layout lb,
                 DType dtype) {
  GemmContext g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.layout_a = la;
  g.layout_b = lb;
  g.dtype = dtype;
  return g;
}

// A GEMM problem whose leading dimensions are the stored rows rounded up to
// `align` elements (1: tight).
Problem Padded(const GemmContext& g, int64_t align) {
  Problem p(g);
  auto up = [&](int64_t v) { return (v + align - 1) / align * align; };
  p.lda = up(g.layout_a == Layout::kN ? g.k : g.m);
  p.ldb = up(g.layout_b == Layout::kN ? g.n : g.k);
  p.ldc = up(g.n);
  return p;
}

// 16 bytes in elements: what gemm.mma's cp.async needs of lda and ldb.

std::vector<ConvContext> ConvContexts() {
  std::vector<ConvContext> out;
  auto add = [&](int64_t n, int64_t hw, int64_t c, int64_t k, int64_t rs,
                 int64_t pad, int64_t stride, int64_t dil) {
    ConvContext x;
    x.n = n;
    x.h = x.w = hw;
    x.c = c;
    x.k = k;
    x.r = x.s = rs;
    x.pad_h = x.pad_w = pad;
    x.stride_h = x.stride_w = stride;
    x.dilation_h = x.dilation_w = dil;
    out.push_back(x);
  };
  add(1, 56, 64, 64, 3, 1, 1, 1);
  add(32, 56, 64, 64, 1, 0, 1, 1);
  add(8, 224, 3, 64, 7, 3, 2, 1);
  add(1, 7, 512, 2048, 1, 0, 1, 1);
  add(4, 28, 128, 128, 3, 2, 1, 2);
  add(2, 17, 5, 7, 3, 0, 2, 1);
  add(1, 1, 1, 1, 1, 0, 1, 1);
  add(16, 14, 256, 256, 3, 1, 2, 1);
  add(1, 9, 33, 65, 5, 2, 1, 2);
  return out;
}

// One value from each parameter's domain.
Params SampleParams(const KernelFamily& f, std::mt19937& rng) {
  Params p;
  p.size = static_cast<int>(f.params().size());
  for (int i = 0; i < p.size; ++i) {
    const auto& values = f.params()[i].values;
    p[i] = values[rng() % values.size()];
  }
  return p;
}

// --- The registry --------------------------------------------------------

TEST(FamilyRegistryTest, NamesAreUniqueAndFound) {
  const auto& all = Families();
  ASSERT_GE(all.size(), 3u);
  std::set<std::string> names;
  for (const KernelFamily* f : all) {
    EXPECT_TRUE(names.insert(Lower(f->name())).second) << f->name();
    auto found = FindFamily(f->name());
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(*found, f);
    auto upper = FindFamily(
        [&] {
          std::string s(f->name());
          for (char& c : s) c = static_cast<char>(std::toupper(c));
          return s;
        }());
    ASSERT_TRUE(upper.ok()) << "names are case-insensitive";
    EXPECT_EQ(*upper, f);
  }
  EXPECT_TRUE(names.count("gemm.ffma"));
  EXPECT_TRUE(names.count("conv.ffma"));
  EXPECT_TRUE(names.count("gemm.mma"));
  EXPECT_TRUE(names.count("gemm.wgmma"));
}

TEST(FamilyRegistryTest, UnknownFamilyNamesTheFieldAndListsWhatExists) {
  auto f = FindFamily("gemm.nope");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(f.status().message(), HasSubstr("family"));
  EXPECT_THAT(f.status().message(), HasSubstr("'gemm.nope'"));
  for (const KernelFamily* x : Families())
    EXPECT_THAT(f.status().message(), HasSubstr(std::string(x->name())));
}

TEST(FamilyRegistryTest, ParsesAConfigurationAfterItsFamilysName) {
  auto c = ParseFamilyConfig("gemm.gemv R=1 NC=1 W=4 WN=1 V=4 U=4 PF=0 KG=1");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->family->name(), "gemm.gemv");
  EXPECT_EQ(c->params[c->family->ParamIndex("W")], 4);
  EXPECT_THAT(ParseFamilyConfig("gemm.nope R=1").status().message(),
              HasSubstr("'gemm.nope'"));
  EXPECT_FALSE(ParseFamilyConfig("gemm.gemv R=3").ok());  // not a value of R
}

// Leading dimensions: at least the rows' lengths, at most kMaxDim, and
// their rows within kMaxTensorElements (an lda of 2^63 - 8 made a TMA
// stride of -16 bytes), in every family.
TEST(FamilyRegistryTest, LeadingDimensionsAreBoundedBothWays) {
  GemmContext g;
  g.m = g.n = g.k = 4096;
  g.layout_a = Layout::kN;
  g.layout_b = Layout::kT;
  g.dtype = DType::kBf16;
  const KernelFamily& wgmma = **FindFamily("gemm.wgmma");
  Problem p{Context(g)};
  p.lda = 4096;
  EXPECT_TRUE(wgmma.CheckProblem(p).ok());
  p.lda = 4095;
  EXPECT_THAT(wgmma.CheckProblem(p).message(),
              HasSubstr("lda, ldb, ldc must be at least the stored rows' lengths"));
  p.lda = int64_t{9223372036854775800};
  EXPECT_EQ(wgmma.CheckProblem(p).message(),
            "lda must be in [4096, 2147483647], got 9223372036854775800");
  p.lda = int64_t{1} << 30;  // 4096 rows of 2^30: 2^42 elements
  EXPECT_THAT(wgmma.CheckProblem(p).message(), HasSubstr("lda times its rows"));
  p.lda = 0;
  p.ldc = int64_t{1} << 31;
  EXPECT_THAT(wgmma.CheckProblem(p).message(), HasSubstr("ldc must be in [4096, 2147483647]"));
}

TEST(FamilyRegistryTest, FamiliesForMatchesOpAndPrecision) {
  for (Op op : {Op::kGemm, Op::kConv}) {
    for (DType d : {DType::kFp32, DType::kTf32, DType::kBf16, DType::kFp16,
                    DType::kFp64}) {
      std::vector<const KernelFamily*> want;
      for (const KernelFamily* f : Families())
        if (f->op() == op && f->Implements(d)) want.push_back(f);
      EXPECT_EQ(FamiliesFor(op, d), want) << ToString(op) << " " << ToString(d);
      auto def = DefaultFamily(op, d);
      if (want.empty()) {
        EXPECT_FALSE(def.ok());
      } else {
        ASSERT_TRUE(def.ok());
        EXPECT_EQ(*def, want.front()) << "the first registered";
      }
    }
  }
  EXPECT_EQ(FamiliesFor(Op::kGemm, DType::kFp32).front()->name(), "gemm.ffma");
  // gemm.gemv (N <= 128, NT), gemm.ffma_k (NT) and gemm.ffma_kpk (NT with
  // rows that are not whole 16-byte units) after it: gemm.ffma stays the
  // fp32 default.
  ASSERT_EQ(FamiliesFor(Op::kGemm, DType::kFp32).size(), 4u);
  EXPECT_EQ(FamiliesFor(Op::kGemm, DType::kFp32)[1]->name(), "gemm.gemv");
  EXPECT_EQ(FamiliesFor(Op::kGemm, DType::kFp32)[2]->name(), "gemm.ffma_k");
  EXPECT_EQ(FamiliesFor(Op::kGemm, DType::kFp32).back()->name(),
            "gemm.ffma_kpk");
  EXPECT_EQ(FamiliesFor(Op::kConv, DType::kFp32).front()->name(), "conv.ffma");
  // gemm.wgmma is registered after gemm.mma: the default for a context
  // that names no family stays the one that runs on every tensor-core GPU.
  for (DType d : {DType::kBf16, DType::kFp16, DType::kTf32}) {
    EXPECT_EQ(DefaultFamily(Op::kGemm, d).value()->name(), "gemm.mma");
    const auto all = FamiliesFor(Op::kGemm, d);
    // tf32 has gemm.wgmma_rs too (NN and TT, A from registers); then
    // gemm.mma_pk and gemm.wgmma_pk (offered only where rows are not 16-
    // and 128-byte aligned); then gemm.wgmma_ps (the persistent grid),
    // gemm.wgmma_ts (with the tail split) and gemm.wgmma_sc (K split
    // inside a cluster, where the tiles are few).
    ASSERT_EQ(all.size(), d == DType::kTf32 ? 8u : 7u) << ToString(d);
    EXPECT_EQ(all[1]->name(), "gemm.wgmma");
    if (d == DType::kTf32) EXPECT_EQ(all[2]->name(), "gemm.wgmma_rs");
    EXPECT_EQ(all[all.size() - 5]->name(), "gemm.mma_pk");
    EXPECT_EQ(all[all.size() - 4]->name(), "gemm.wgmma_pk");
    EXPECT_EQ(all[all.size() - 3]->name(), "gemm.wgmma_ps");
    EXPECT_EQ(all[all.size() - 2]->name(), "gemm.wgmma_ts");
    EXPECT_EQ(all.back()->name(), "gemm.wgmma_sc");
  }
  for (DType d : {DType::kBf16, DType::kFp16, DType::kTf32}) {
    const auto all = FamiliesFor(Op::kConv, d);
    ASSERT_EQ(all.size(), 5u) << ToString(d);
    EXPECT_EQ(all[0]->name(), "conv.mma");
    EXPECT_EQ(all[1]->name(), "conv.wgmma");
    EXPECT_EQ(all[2]->name(), "conv.wgmma_ps");
    // The split over the reduction, offered where the tiles are few, and
    // the same split added inside a cluster.
    EXPECT_EQ(all[3]->name(), "conv.wgmma_sk");
    EXPECT_EQ(all[4]->name(), "conv.wgmma_sc");
  }
}

TEST(FamilyRegistryTest, DefaultFamilyErrorNamesTheDtypeAndListsWhatExists) {
  auto f = DefaultFamily(Op::kConv, DType::kFp64);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(f.status().message(), HasSubstr("dtype fp64"));
  EXPECT_THAT(f.status().message(), HasSubstr("conv"));
  for (const char* d : {"fp32", "bf16", "fp16", "tf32"})
    EXPECT_THAT(f.status().message(), HasSubstr(d));
  // conv.mma: the convolution in bf16.
  ASSERT_TRUE(DefaultFamily(Op::kConv, DType::kBf16).ok());
  EXPECT_EQ((*DefaultFamily(Op::kConv, DType::kBf16))->name(), "conv.mma");
  f = DefaultFamily(Op::kGemm, DType::kFp64);
  ASSERT_FALSE(f.ok());
  for (const char* d : {"fp32", "bf16", "fp16", "tf32"})
    EXPECT_THAT(f.status().message(), HasSubstr(d));
}

// --- What every family declares ------------------------------------------

TEST(FamilyTest, DeclarationsAreWellFormed) {
  for (const KernelFamily* f : Families()) {
    SCOPED_TRACE(std::string(f->name()));
    EXPECT_GE(f->version(), 1);
    EXPECT_FALSE(f->summary().empty());
    EXPECT_FALSE(f->precisions().empty());
    EXPECT_GE(f->min_compute_capability(), 70);
    const auto& specs = f->params();
    ASSERT_FALSE(specs.empty());
    ASSERT_LE(specs.size(), static_cast<size_t>(kMaxFamilyParams));
    std::set<std::string> names;
    for (size_t i = 0; i < specs.size(); ++i) {
      const ParamSpec& s = specs[i];
      EXPECT_TRUE(names.insert(Lower(s.name)).second) << s.name;
      EXPECT_FALSE(s.meaning.empty()) << s.name;
      ASSERT_FALSE(s.values.empty()) << s.name;
      EXPECT_TRUE(std::is_sorted(s.values.begin(), s.values.end()) &&
                  std::adjacent_find(s.values.begin(), s.values.end()) ==
                      s.values.end())
          << s.name << " values must ascend";
      if (s.log_feature) {
        EXPECT_GE(s.values.front(), 1) << s.name;
      }
      EXPECT_EQ(f->ParamIndex(s.name), static_cast<int>(i));
      EXPECT_EQ(f->ParamIndex(Lower(s.name)), static_cast<int>(i));
    }
    EXPECT_EQ(f->ParamIndex("no_such"), -1);
    std::set<std::string> rules(f->rules().begin(), f->rules().end());
    EXPECT_FALSE(rules.empty());
    EXPECT_EQ(rules.size(), f->rules().size()) << "rule names are unique";
  }
}

TEST(FamilyTest, DefaultCandidatesValidateAndLieInTheDomains) {
  for (const KernelFamily* f : Families()) {
    SCOPED_TRACE(std::string(f->name()));
    const auto candidates = f->DefaultCandidates();
    ASSERT_FALSE(candidates.empty());
    for (const Params& p : candidates) {
      EXPECT_TRUE(f->ValidateParams(p).ok())
          << f->Format(p) << ": " << f->ValidateParams(p).ToString();
      ASSERT_EQ(p.size, static_cast<int>(f->params().size()));
      for (int i = 0; i < p.size; ++i) {
        const auto& v = f->params()[i].values;
        EXPECT_NE(std::find(v.begin(), v.end(), p[i]), v.end())
            << f->params()[i].name << "=" << p[i] << " not in its domain";
      }
    }
  }
}

// Default() finds a configuration for every context of a spread, on both
// devices, and what it finds is accepted and splits K only with work.
void ExpectDefaultFits(const KernelFamily& f, const Problem& problem,
                       const KernelLimits& limits, int* checked) {
  auto d = f.Default(problem, limits);
  ASSERT_TRUE(d.ok()) << f.name() << " " << ToString(problem.ctx) << " cc "
                      << limits.compute_capability << ": "
                      << d.status().ToString();
  EXPECT_TRUE(f.CanImplement(problem, *d, limits).ok());
  EXPECT_TRUE(SplitHasWork(problem, f.Shape(problem, *d)));
  ++*checked;
}

// The fallback of a context that names no family (DefaultFamily) must fit
// everything; a family registered after it may refuse what its rules send
// to the default (gemm.wgmma: devices other than 9.0, tf32 layouts other
// than NT, rows that are no multiple of 16 bytes).
TEST(FamilyTest, DefaultFitsGemmsOfEverySizeAndLayout) {
  const int64_t sizes[] = {1, 2, 3, 8, 17, 64, 127, 1000, 4097, 8191, 8192};
  for (const KernelFamily* f : Families()) {
    if (f->op() != Op::kGemm) continue;
    for (DType d : f->precisions()) {
      if (DefaultFamily(f->op(), d).value() != f) continue;
      int checked = 0;
      for (const KernelLimits& limits : {H100(), Sm80()}) {
        for (int l = 0; l < 4; ++l) {
          for (int64_t m : sizes)
            for (int64_t n : sizes)
              for (int64_t k : sizes) {
                const GemmContext g =
                    Gemm(m, n, k, l / 2 ? Layout::kT : Layout::kN,
                         l % 2 ? Layout::kT : Layout::kN, d);
                // Tight rows of any length: gemm.mma narrows its copies
                // where a row is not a multiple of 16 bytes (v2).
                ExpectDefaultFits(*f, Problem(g), limits, &checked);
                if (HasFailure()) return;
              }
        }
      }
      EXPECT_EQ(checked, 2 * 4 * 11 * 11 * 11);
    }
  }
}

// gemm.wgmma's default fits every size on the H100 where its rules let it
// run at all: 16-byte rows, and for tf32 A N and B T.
TEST(WgmmaFamilyTest, DefaultFitsAlignedGemmsOfEverySizeOnTheH100) {
  const KernelFamily& f = Family("gemm.wgmma");
  const int64_t sizes[] = {1, 2, 3, 8, 17, 64, 127, 1000, 4097, 8191, 8192};
  for (DType d : f.precisions()) {
    int checked = 0;
    for (int l = 0; l < 4; ++l) {
      const Layout la = l / 2 ? Layout::kT : Layout::kN;
      const Layout lb = l % 2 ? Layout::kT : Layout::kN;
      if (d == DType::kTf32 && (la != Layout::kN || lb != Layout::kT)) {
        const Problem p(Gemm(64, 64, 64, la, lb, d));
        EXPECT_FALSE(f.Default(p, H100()).ok()) << ToString(p.ctx);
        continue;
      }
      for (int64_t m : sizes)
        for (int64_t n : sizes)
          for (int64_t k : sizes) {
            ExpectDefaultFits(f, Padded(Gemm(m, n, k, la, lb, d), 8), H100(),
                              &checked);
            if (HasFailure()) return;
          }
    }
    EXPECT_EQ(checked, (d == DType::kTf32 ? 1 : 4) * 11 * 11 * 11);
  }
}

TEST(WgmmaFamilyTest, RefusedOnEveryDeviceButComputeCapability90) {
  const KernelFamily& f = Family("gemm.wgmma");
  EXPECT_EQ(f.min_compute_capability(), 90);
  const Problem p(Gemm(256, 256, 256, Layout::kN, Layout::kT, DType::kBf16));
  const Params params = f.DefaultCandidates().front();
  EXPECT_TRUE(f.CanImplement(p, params, H100()).ok());
  for (int cc : {70, 80, 86, 89, 100}) {
    KernelLimits other = H100();
    other.compute_capability = cc;
    const Status s = f.CanImplement(p, params, other);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << cc;
    const int rule = f.FirstFailingRule(p, params, other);
    ASSERT_GE(rule, 0) << cc;
    EXPECT_EQ(f.rules()[rule], "compute_capability");
    EXPECT_FALSE(f.Default(p, other).ok()) << cc;
  }
}

// What a launcher needs of a wgmma kernel: the sm_90a target, and one
// tensor map per operand filling a 128-byte entry parameter.
TEST(WgmmaFamilyTest, GenerateDescribesItsTensorMapsAndTarget) {
  const KernelFamily& f = Family("gemm.wgmma");
  const Problem p =
      Padded(Gemm(1000, 1023, 515, Layout::kT, Layout::kN, DType::kBf16), 8);
  const Params params = f.Default(p, H100()).value();
  for (const char* arch : {"sm_90", "sm_90a"}) {
    auto k = f.Generate(p, params, arch);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    EXPECT_EQ(k->target, "sm_90a");
    EXPECT_EQ(TargetOf(*k, arch), "sm_90a");
    EXPECT_THAT(k->ptx, HasSubstr(".target sm_90a"));
    ASSERT_EQ(k->tensor_maps.size(), 3u);
    EXPECT_EQ(k->tensor_maps[0].operand, 'A');
    EXPECT_EQ(k->tensor_maps[1].operand, 'B');
    EXPECT_EQ(k->tensor_maps[2].operand, 'C');
    EXPECT_EQ(k->align_c, 8);
    for (const TensorMapParam& t : k->tensor_maps) {
      ASSERT_GE(t.param_index, 0);
      ASSERT_LT(t.param_index, static_cast<int>(k->entry_params.size()));
      const KernelParam& param = k->entry_params[t.param_index];
      EXPECT_EQ(param.size, 128);
      EXPECT_EQ(param.offset % 64, 0);
      // The maps cover the stored operands: A T is K x M (rows of lda).
      EXPECT_TRUE(CheckTensorMap(t.map, 0).ok())
          << ToString(t.map) << ": " << CheckTensorMap(t.map, 0).ToString();
    }
    const TensorMapSpec& a = k->tensor_maps[0].map;
    EXPECT_EQ(a.type, TensorMapType::kBf16);
    EXPECT_EQ(a.dims[0], 1000u);
    EXPECT_EQ(a.dims[1], 515u);
    EXPECT_EQ(a.strides[0], 2u * 1000);
    const TensorMapSpec& b = k->tensor_maps[1].map;
    EXPECT_EQ(b.dims[0], 1023u);
    EXPECT_EQ(b.dims[1], 515u);
    EXPECT_EQ(b.strides[0], 2u * 1024);
    // C: M rows of N, stored in boxes of 64 columns by an m64 tile's rows.
    const TensorMapSpec& c = k->tensor_maps[2].map;
    EXPECT_EQ(c.dims[0], 1023u);
    EXPECT_EQ(c.dims[1], 1000u);
    EXPECT_EQ(c.strides[0], 2u * 1024);
    EXPECT_EQ(c.box[0], 64u);
    EXPECT_EQ(c.box[1], 64u);
  }
  EXPECT_FALSE(f.Generate(p, params, "sm_80").ok());
  // The other families leave both empty: their PTX is for the arch asked.
  for (const char* name : {"gemm.ffma", "gemm.mma"}) {
    const KernelFamily& g = Family(name);
    const Problem q(Gemm(64, 64, 64, Layout::kN, Layout::kN,
                         g.precisions().front()));
    auto k = g.Generate(q, g.DefaultCandidates().front(), "sm_90");
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    EXPECT_TRUE(k->tensor_maps.empty());
    EXPECT_TRUE(k->target.empty());
    EXPECT_EQ(TargetOf(*k, "sm_90"), "sm_90");
  }
}

// gemm.wgmma_ps and conv.wgmma_ps are their base family's kernel, byte for
// byte, launched as a persistent grid: same parameters, rules and PTX.
TEST(WgmmaFamilyTest, PersistentFamiliesEmitTheirBaseFamilysKernel) {
  const Problem gemm(Padded(
      Gemm(2048, 11008, 4096, Layout::kN, Layout::kT, DType::kBf16), 8));
  auto conv = ContextFromString(
      "conv n=32 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1 "
      "dtype=bf16");
  ASSERT_TRUE(conv.ok()) << conv.status().ToString();
  const std::pair<const char*, Problem> cases[] = {
      {"gemm.wgmma", gemm}, {"conv.wgmma", Problem(*conv)}};
  for (const auto& [base_name, problem] : cases) {
    const KernelFamily& base = Family(base_name);
    const KernelFamily& ps = Family(std::string(base_name) + "_ps");
    EXPECT_EQ(ps.op(), base.op());
    EXPECT_EQ(ps.precisions(), base.precisions());
    // The base family's rules, then several_waves.
    std::vector<std::string> rules = base.rules();
    rules.push_back("several_waves");
    EXPECT_EQ(ps.rules(), rules);
    ASSERT_EQ(ps.params().size(), base.params().size());
    for (const Params& params : base.DefaultCandidates()) {
      if (!base.CanImplement(problem, params, H100()).ok()) continue;
      EXPECT_TRUE(ps.CanImplement(problem, params, H100()).ok());
      auto b = base.Generate(problem, params, "sm_90");
      auto k = ps.Generate(problem, params, "sm_90");
      ASSERT_TRUE(b.ok() && k.ok()) << base.Format(params);
      EXPECT_EQ(k->ptx, b->ptx);
      EXPECT_EQ(k->grid, b->grid);
      EXPECT_EQ(k->cluster, b->cluster);
      EXPECT_EQ(k->family, ps.name());
      EXPECT_EQ(k->version, ps.version());
      EXPECT_TRUE(k->persistent);
      EXPECT_FALSE(b->persistent);
    }
  }
  // several_waves: with the SM count known, a configuration with no more
  // work units than SMs is the base family's launch, refused by name.
  KernelLimits h100 = H100();
  h100.sm_count = 132;
  for (const auto& [base_name, problem] : cases) {
    const KernelFamily& ps = Family(std::string(base_name) + "_ps");
    const int rule = static_cast<int>(ps.rules().size()) - 1;
    int passed = 0;
    for (const Params& params : ps.DefaultCandidates()) {
      if (!Family(base_name).CanImplement(problem, params, h100).ok()) continue;
      const int64_t units = ps.Shape(problem, params).programs;
      const Status s = ps.CanImplement(problem, params, h100);
      EXPECT_EQ(ps.Passes(rule, problem, params, h100), units > 132);
      EXPECT_EQ(s.ok(), units > 132) << units << " " << s.ToString();
      if (!s.ok()) {
        EXPECT_THAT(s.message(), HasSubstr("several_waves"));
      } else {
        ++passed;
      }
    }
    EXPECT_GT(passed, 0) << base_name;
    // A problem of one tile.
    const Problem small(Padded(
        Gemm(64, 64, 4096, Layout::kN, Layout::kT, DType::kBf16), 8));
    if (ps.op() == Op::kGemm) {
      const Params one = ps.DefaultCandidates().front();
      EXPECT_FALSE(ps.CanImplement(small, one, h100).ok());
      EXPECT_TRUE(ps.CanImplement(small, one, H100()).ok()) << "sm_count 0: unknown";
    }
  }
  // The launch: at most the programs asked for and the grid, whole
  // clusters, at least one cluster.
  EXPECT_EQ(ClampedPrograms(512, 132, 1), 132u);
  EXPECT_EQ(ClampedPrograms(100, 132, 1), 100u);
  EXPECT_EQ(ClampedPrograms(512, 133, 2), 132u);
  EXPECT_EQ(ClampedPrograms(512, 1, 2), 2u);
  EXPECT_EQ(ClampedPrograms(512, 264, 0), 264u);
  // A cluster pair's grid is whole pairs.
  const KernelFamily& ps = Family("gemm.wgmma_ps");
  auto pair = ps.Parse("bm=128 bn=128 bk=64 st=4 wg=1 gm=8 kg=1 cm=2");
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  auto k = ps.Generate(gemm, *pair, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->cluster, 2u);
  EXPECT_EQ(k->grid[0] % 2, 0u);
}

// conv.wgmma_sk is conv.wgmma with kg = 2..32: conv.wgmma's rules, then
// split_has_work and few_tiles; its PTX is conv.wgmma's but for the
// split's start, the workspace parameter, the partial-sum epilogue and
// the reduce entry; conv.wgmma's own PTX is what it was (the golden test).
TEST(WgmmaFamilyTest, ConvSplitFamilySplitsTheReductionWhereTilesAreFew) {
  const KernelFamily& base = Family("conv.wgmma");
  const KernelFamily& sk = Family("conv.wgmma_sk");
  EXPECT_EQ(sk.op(), Op::kConv);
  EXPECT_EQ(sk.precisions(), base.precisions());
  std::vector<std::string> rules = base.rules();
  rules.push_back("split_has_work");
  rules.push_back("few_tiles");
  rules.push_back("tile_fits_layer");
  EXPECT_EQ(sk.rules(), rules);
  ASSERT_EQ(sk.params().size(), base.params().size() + 1);
  EXPECT_EQ(sk.params().back().name, "kg");
  EXPECT_EQ(sk.params().back().values,
            (std::vector<int64_t>{2, 3, 4, 6, 8, 12, 16, 24, 32}));
  EXPECT_EQ(sk.min_compute_capability(), 90);
  // kg = 1 is conv.wgmma's kernel, so it is not this family's; past 32
  // neither. The message names the field and the values.
  for (const char* bad : {"bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=1",
                          "bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=64"}) {
    auto p = sk.Parse(bad);
    const Status s = p.ok() ? sk.ValidateParams(*p) : p.status();
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_THAT(s.message(), HasSubstr("kg")) << s.ToString();
  }
  // Two consumer warpgroups still need bm a multiple of 128.
  EXPECT_FALSE(sk.Parse("bm=64 bn=64 bk=64 st=4 wg=2 gm=1 kg=4").ok());

  auto layer = ContextFromString(
      "conv n=1 h=8 w=8 c=256 k=256 r=3 s=3 pad=1 stride=1 dilation=1 "
      "dtype=bf16");
  ASSERT_TRUE(layer.ok()) << layer.status().ToString();
  const Problem problem(*layer);
  KernelLimits h100 = H100();
  h100.sm_count = 132;
  auto params = sk.Parse("bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=8");
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  ASSERT_TRUE(sk.CanImplement(problem, *params, h100).ok());
  const ConfigShape shape = sk.Shape(problem, *params);
  EXPECT_EQ(shape.split_k, 8);
  EXPECT_EQ(shape.programs, 4 * 8);  // 1 x 4 tiles, 8 splits each
  EXPECT_EQ(shape.workspace_bytes, 8 * 64 * 256 * 4);
  auto k = sk.Generate(problem, *params, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->family, "conv.wgmma_sk");
  EXPECT_EQ(k->target, "sm_90a");
  EXPECT_EQ(k->grid[0], 32u);
  EXPECT_EQ(k->workspace_bytes, shape.workspace_bytes);
  EXPECT_EQ(k->reduce_entry, "blocktune_gemm_mma_reduce");
  EXPECT_TRUE(k->reduce_dependent);
  EXPECT_FALSE(k->reduce_params.empty());
  ASSERT_FALSE(k->entry_params.empty());
  EXPECT_EQ(std::string(k->entry_params.back().name), "W");
  EXPECT_EQ(k->entry_params.back().offset, 456);
  EXPECT_THAT(k->ptx, HasSubstr(".param .u64 param_W)"));
  EXPECT_THAT(k->ptx, HasSubstr("div.u32 %tr, %tmp, %Sf;"));
  EXPECT_THAT(k->ptx, HasSubstr(".visible .entry blocktune_gemm_mma_reduce"));
  // conv.wgmma's kernel for the same tile takes no workspace.
  Params unsplit = *params;
  unsplit.size = static_cast<int>(base.params().size());
  auto b = base.Generate(problem, unsplit, "sm_90");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->workspace_bytes, 0);
  EXPECT_TRUE(b->reduce_entry.empty());
  EXPECT_THAT(b->ptx, ::testing::Not(HasSubstr("param_W")));
  EXPECT_EQ(b->grid[0], 4u);

  // split_has_work: 9 taps of 4 channel steps are 36 k tiles; a 1x1 over
  // 64 channels with bk = 64 is one.
  auto one = ContextFromString(
      "conv n=1 h=8 w=8 c=64 k=64 r=1 s=1 pad=0 stride=1 dilation=1 "
      "dtype=bf16");
  ASSERT_TRUE(one.ok());
  const Status no_work = sk.CanImplement(Problem(*one), *params, h100);
  EXPECT_FALSE(no_work.ok());
  EXPECT_THAT(no_work.message(), HasSubstr("split_has_work"));
  // few_tiles: a layer with as many tiles as SMs or more is refused by
  // name where the SM count is known, and passes where it is not.
  auto big = ContextFromString(
      "conv n=32 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1 "
      "dtype=bf16");
  ASSERT_TRUE(big.ok());
  const Status many = sk.CanImplement(Problem(*big), *params, h100);
  EXPECT_FALSE(many.ok());
  EXPECT_THAT(many.message(), HasSubstr("few_tiles"));
  EXPECT_TRUE(sk.CanImplement(Problem(*big), *params, H100()).ok());
  const int few_tiles = static_cast<int>(sk.rules().size()) - 2;
  EXPECT_FALSE(sk.Passes(few_tiles, Problem(*big), *params, h100));
  EXPECT_TRUE(sk.Passes(few_tiles, problem, *params, h100));
  // ... and at most 4 waves of split units: 4 tiles x 32 splits = 128
  // units pass on 132 SMs; 49 tiles (bm = 64 over 3136 pixels, bn = 64;
  // 18 k tiles of 64 channels) x 12 = 588 do not, x 8 = 392 do.
  auto k32 = sk.Parse("bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=32");
  ASSERT_TRUE(k32.ok());
  EXPECT_TRUE(sk.Passes(few_tiles, problem, *k32, h100));
  auto c56 = ContextFromString(
      "conv n=1 h=56 w=56 c=128 k=64 r=3 s=3 pad=1 stride=1 dilation=1 "
      "dtype=bf16");
  ASSERT_TRUE(c56.ok());
  auto k12 = sk.Parse("bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=12");
  ASSERT_TRUE(k12.ok());
  EXPECT_FALSE(sk.Passes(few_tiles, Problem(*c56), *k12, h100));
  EXPECT_THAT(sk.CanImplement(Problem(*c56), *k12, h100).message(),
              HasSubstr("4 waves"));
  EXPECT_TRUE(sk.Passes(few_tiles, Problem(*c56), *params, h100));
  // tile_fits_layer: the 8x8 layer's 64 pixels fill one m64 tile; bm = 128
  // (one warpgroup or two) would hold 64 rows of no pixel, by name; on a
  // batch of 2 (128 pixels) it passes, and bm = 64 passes everywhere.
  const int fits = static_cast<int>(sk.rules().size()) - 1;
  EXPECT_EQ(sk.rules()[fits], "tile_fits_layer");
  for (const char* tall : {"bm=128 bn=64 bk=64 st=4 wg=1 gm=1 kg=8",
                           "bm=128 bn=64 bk=64 st=4 wg=2 gm=1 kg=8"}) {
    auto t = sk.Parse(tall);
    ASSERT_TRUE(t.ok()) << tall;
    EXPECT_FALSE(sk.Passes(fits, problem, *t, h100)) << tall;
    const Status s = sk.CanImplement(problem, *t, h100);
    EXPECT_FALSE(s.ok()) << tall;
    EXPECT_THAT(s.message(), HasSubstr("tile_fits_layer: bm = 128"));
    EXPECT_THAT(s.message(), HasSubstr("at most 64"));
    auto two = ContextFromString(
        "conv n=2 h=8 w=8 c=256 k=256 r=3 s=3 pad=1 stride=1 dilation=1 "
        "dtype=bf16");
    ASSERT_TRUE(two.ok());
    EXPECT_TRUE(sk.Passes(fits, Problem(*two), *t, h100)) << tall;
  }
  EXPECT_TRUE(sk.Passes(fits, problem, *params, h100));
  // The default candidates are conv.wgmma's, split four ways.
  for (const Params& d : sk.DefaultCandidates()) {
    EXPECT_EQ(d.size, 7);
    EXPECT_EQ(d[6], 4);
    EXPECT_TRUE(sk.ValidateParams(d).ok()) << sk.Format(d);
  }
}

// conv.wgmma_sc is conv.wgmma_sk's split with the kg = 2..8 programs of a
// tile in one cluster: the same rules, no workspace and no reduce entry,
// the cluster fixed in the PTX, the slots of partial sums counted in the
// shared memory (rule shared_memory).
TEST(WgmmaFamilyTest, ConvClusterSplitAddsTheSumsInsideTheCluster) {
  const KernelFamily& sk = Family("conv.wgmma_sk");
  const KernelFamily& sc = Family("conv.wgmma_sc");
  EXPECT_EQ(sc.op(), Op::kConv);
  EXPECT_EQ(sc.version(), 1);
  EXPECT_EQ(sc.precisions(), sk.precisions());
  EXPECT_EQ(sc.rules(), sk.rules());
  ASSERT_EQ(sc.params().size(), sk.params().size());
  EXPECT_EQ(sc.params().back().name, "kg");
  EXPECT_EQ(sc.params().back().values,
            (std::vector<int64_t>{2, 3, 4, 5, 6, 7, 8}));
  for (const char* bad : {"bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=1",
                          "bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=12"}) {
    auto p = sc.Parse(bad);
    const Status s = p.ok() ? sc.ValidateParams(*p) : p.status();
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_THAT(s.message(), HasSubstr("kg")) << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr("conv.wgmma_sc")) << s.ToString();
  }

  auto layer = ContextFromString(
      "conv n=1 h=8 w=8 c=256 k=256 r=3 s=3 pad=1 stride=1 dilation=1 "
      "dtype=bf16");
  ASSERT_TRUE(layer.ok()) << layer.status().ToString();
  const Problem problem(*layer);
  KernelLimits h100 = H100();
  h100.sm_count = 132;
  auto params = sc.Parse("bm=64 bn=16 bk=128 st=5 wg=1 gm=1 kg=8");
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  ASSERT_TRUE(sc.CanImplement(problem, *params, h100).ok());
  const ConfigShape shape = sc.Shape(problem, *params);
  EXPECT_EQ(shape.split_k, 8);
  EXPECT_EQ(shape.programs, 16 * 8);  // 1 x 16 tiles, 8 splits each
  EXPECT_EQ(shape.workspace_bytes, 0);
  auto k = sc.Generate(problem, *params, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->family, "conv.wgmma_sc");
  EXPECT_EQ(k->grid[0], 128u);
  EXPECT_EQ(k->cluster, 8u);
  EXPECT_EQ(k->workspace_bytes, 0);
  EXPECT_TRUE(k->reduce_entry.empty());
  ASSERT_FALSE(k->entry_params.empty());
  EXPECT_EQ(std::string(k->entry_params.back().name), "dilation_w");
  EXPECT_THAT(k->ptx, ::testing::Not(HasSubstr("param_W")));
  EXPECT_THAT(k->ptx, HasSubstr(".reqnctapercluster 8, 1, 1"));
  EXPECT_THAT(k->ptx, HasSubstr("mov.u32 %z, %cluster_ctarank;"));
  EXPECT_THAT(k->ptx, HasSubstr("st.shared::cluster.v4.f32"));
  EXPECT_THAT(k->ptx, HasSubstr(
      "mbarrier.arrive.release.cluster.shared::cluster.b64"));
  // 7 slots of 64 x 16 fp32 past conv.wgmma_sk's shared memory, and the
  // mbarrier's 16 bytes.
  auto s = sk.Generate(problem, *params, "sm_90");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(k->dynamic_shared_bytes,
            s->dynamic_shared_bytes + 16 + 7 * 64 * 16 * 4);
  EXPECT_FALSE(s->reduce_entry.empty());
  EXPECT_EQ(s->cluster, 1u);
  // Rule shared_memory counts the slots: 7 of 128 x 128 fp32 do not fit
  // where conv.wgmma_sk's kernel of the same tile does.
  auto wide = sc.Parse("bm=128 bn=128 bk=64 st=3 wg=1 gm=1 kg=8");
  ASSERT_TRUE(wide.ok());
  auto two = ContextFromString(
      "conv n=2 h=8 w=8 c=256 k=256 r=3 s=3 pad=1 stride=1 dilation=1 "
      "dtype=bf16");
  ASSERT_TRUE(two.ok());
  EXPECT_TRUE(sk.CanImplement(Problem(*two), *wide, h100).ok());
  const Status big = sc.CanImplement(Problem(*two), *wide, h100);
  EXPECT_FALSE(big.ok());
  EXPECT_THAT(big.message(), HasSubstr("shared_memory"));
}

// gemm.wgmma_sc is gemm.wgmma with each tile's K split inside a cluster:
// gemm.wgmma's rules and few_tiles; kg = 2..8 from gemm.wgmma's domain,
// cm = 1; no workspace or reduce entry (gemm.wgmma's split of the same
// parameters has both); the slots counted in shared memory; PTX of its own.
TEST(WgmmaFamilyTest, GemmClusterSplitAddsTheSumsInsideTheCluster) {
  const KernelFamily& wg = Family("gemm.wgmma");
  const KernelFamily& sc = Family("gemm.wgmma_sc");
  EXPECT_EQ(sc.op(), Op::kGemm);
  EXPECT_EQ(sc.version(), 3);
  EXPECT_EQ(sc.precisions(), wg.precisions());
  std::vector<std::string> rules = wg.rules();
  rules.push_back("few_tiles");
  EXPECT_EQ(sc.rules(), rules);
  ASSERT_EQ(sc.params().size(), wg.params().size());
  EXPECT_EQ(sc.params()[6].name, "kg");
  EXPECT_EQ(sc.params()[6].values, (std::vector<int64_t>{2, 3, 4, 6, 8}));
  EXPECT_EQ(sc.params()[7].name, "cm");
  EXPECT_EQ(sc.params()[7].values, (std::vector<int64_t>{1}));
  for (const char* bad : {"bm=128 bn=128 bk=64 st=4 wg=1 gm=8 kg=1 cm=1",
                          "bm=128 bn=128 bk=64 st=4 wg=1 gm=8 kg=5 cm=1",
                          "bm=128 bn=128 bk=64 st=4 wg=1 gm=8 kg=2 cm=2"}) {
    auto p = sc.Parse(bad);
    const Status s = p.ok() ? sc.ValidateParams(*p) : p.status();
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_THAT(s.message(), HasSubstr("gemm.wgmma_sc")) << s.ToString();
  }

  KernelLimits h100 = H100();
  h100.sm_count = 132;
  // 1000^3 NT: 8 x 8 = 64 tiles of 128 x 128, split in clusters of 2.
  const Problem odd(
      Padded(Gemm(1000, 1000, 1000, Layout::kN, Layout::kT, DType::kBf16), 8));
  auto params = sc.Parse("bm=128 bn=128 bk=64 st=4 wg=1 gm=8 kg=2 cm=1");
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  ASSERT_TRUE(sc.CanImplement(odd, *params, h100).ok());
  const ConfigShape shape = sc.Shape(odd, *params);
  EXPECT_EQ(shape.split_k, 2);
  EXPECT_EQ(shape.programs, 64 * 2);
  EXPECT_EQ(shape.workspace_bytes, 0);
  auto k = sc.Generate(odd, *params, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->family, "gemm.wgmma_sc");
  EXPECT_EQ(k->target, "sm_90a");
  EXPECT_EQ(k->grid[0], 128u);
  EXPECT_EQ(k->cluster, 2u);
  EXPECT_EQ(k->workspace_bytes, 0);
  EXPECT_TRUE(k->reduce_entry.empty());
  EXPECT_THAT(k->ptx, HasSubstr("// blocktune gemm.wgmma_sc v3: bf16"));
  EXPECT_THAT(k->ptx, HasSubstr(".reqnctapercluster 2, 1, 1"));
  EXPECT_THAT(k->ptx, HasSubstr("mov.u32 %unit, %clusterid.x;"));
  EXPECT_THAT(k->ptx, HasSubstr("mov.u32 %z, %cluster_ctarank;"));
  EXPECT_THAT(k->ptx, HasSubstr("st.shared::cluster.v4.f32"));
  EXPECT_THAT(k->ptx, HasSubstr(
      "mbarrier.arrive.release.cluster.shared::cluster.b64"));
  EXPECT_THAT(k->ptx, HasSubstr("// ---- gemm.wgmma_sc: the splits add"));
  EXPECT_THAT(k->ptx, ::testing::Not(HasSubstr("conv.wgmma_sc")));
  // gemm.wgmma's split of the same parameters: the workspace and the
  // reduce entry, no cluster; the slot past its shared memory.
  auto w = wg.Generate(odd, *params, "sm_90");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->workspace_bytes, 2 * 1000 * 1000 * 4);
  EXPECT_FALSE(w->reduce_entry.empty());
  EXPECT_EQ(w->cluster, 1u);
  EXPECT_EQ(k->dynamic_shared_bytes,
            w->dynamic_shared_bytes + 16 + 128 * 128 * 4);
  // Rule shared_memory counts the slots: 7 of 128 x 128 fp32 do not fit.
  auto wide = sc.Parse("bm=128 bn=128 bk=64 st=2 wg=1 gm=8 kg=8 cm=1");
  ASSERT_TRUE(wide.ok());
  const Status big = sc.CanImplement(odd, *wide, h100);
  EXPECT_FALSE(big.ok());
  EXPECT_THAT(big.message(), HasSubstr("shared_memory"));
  // Rule few_tiles: 4096^3 has 1024 tiles of 128 x 128.
  const Problem square(
      Gemm(4096, 4096, 4096, Layout::kN, Layout::kT, DType::kBf16));
  const Status many = sc.CanImplement(square, *params, h100);
  EXPECT_FALSE(many.ok());
  EXPECT_THAT(many.message(), HasSubstr("few_tiles"));
  EXPECT_THAT(many.message(), HasSubstr("1024 tiles"));
  EXPECT_TRUE(wg.CanImplement(square, *params, h100).ok());
  // Rule cluster_box (v3): N-major B (layout NN) of two TMA boxes per stage
  // (bn = 128 in bf16) gets a wgmma of N = 64 per box, which the cluster
  // computes right; K-major B keeps one wgmma across the tile.
  const Problem nn(
      Padded(Gemm(1000, 1000, 1000, Layout::kN, Layout::kN, DType::kBf16), 8));
  EXPECT_TRUE(sc.CanImplement(nn, *params, h100).ok());
  EXPECT_TRUE(wg.CanImplement(nn, *params, h100).ok());
  auto per_box = sc.Generate(nn, *params, "sm_90");
  ASSERT_TRUE(per_box.ok()) << per_box.status().ToString();
  EXPECT_THAT(per_box->ptx, HasSubstr(".reg .b64 %dbj;"));
  EXPECT_THAT(per_box->ptx, HasSubstr("wgmma.mma_async.sync.aligned.m64n64k16"));
  EXPECT_THAT(per_box->ptx,
              ::testing::Not(HasSubstr("wgmma.mma_async.sync.aligned.m64n128k16")));
  EXPECT_THAT(k->ptx, ::testing::Not(HasSubstr("%dbj")));
  EXPECT_THAT(k->ptx, HasSubstr("wgmma.mma_async.sync.aligned.m64n128k16"));
  // gemm.wgmma's cluster pair keeps the rule: N-major B in one box.
  auto pair = wg.Parse("bm=128 bn=128 bk=64 st=4 wg=1 gm=8 kg=1 cm=2");
  ASSERT_TRUE(pair.ok());
  const Status two_boxes = wg.CanImplement(nn, *pair, h100);
  EXPECT_FALSE(two_boxes.ok());
  EXPECT_THAT(two_boxes.message(), HasSubstr("cluster_box"));
  EXPECT_THAT(two_boxes.message(), HasSubstr("bn * element bytes"));
  // Rule split_has_work: 2 splits of 64-wide k tiles need K >= 128.
  const Problem shallow(Gemm(1024, 1024, 64, Layout::kN, Layout::kN,
                             DType::kBf16));
  EXPECT_FALSE(sc.CanImplement(shallow, *params, h100).ok());
}

// gemm.wgmma_ts is gemm.wgmma_ps with the tail split: its rules; tl = 2..4
// with kg = 1 and cm = 1; the workspace's slots and counters; PTX of its
// own.
TEST(WgmmaFamilyTest, TailSplitFamilySplitsThePersistentGridsLastRound) {
  const KernelFamily& ps = Family("gemm.wgmma_ps");
  const KernelFamily& ts = Family("gemm.wgmma_ts");
  EXPECT_EQ(ts.op(), Op::kGemm);
  EXPECT_EQ(ts.precisions(), ps.precisions());
  EXPECT_EQ(ts.rules(), ps.rules());
  ASSERT_EQ(ts.params().size(), ps.params().size() + 1);
  EXPECT_EQ(ts.params().back().name, "tl");
  const Problem prefill(Padded(
      Gemm(2048, 11008, 4096, Layout::kN, Layout::kT, DType::kBf16), 8));
  KernelLimits h100 = H100();
  h100.sm_count = 132;
  struct Bad {
    const char* change;
    int index;
    int64_t value;
    const char* message;
  };
  const Bad bad[] = {
      {"tl=1", 8, 1, "params.tl must be one of {2, 3, 4} in gemm.wgmma_ts, got 1"},
      {"kg=2", 6, 2, "params.kg must be one of {1} in gemm.wgmma_ts, got 2"},
      {"cm=2", 7, 2, "params.cm must be one of {1} in gemm.wgmma_ts, got 2"}};
  auto small = ts.Parse("bm=128 bn=128 bk=64 st=4 wg=1 gm=16 kg=1 cm=1 tl=2");
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  for (const Bad& b : bad) {
    EXPECT_EQ(ts.Parse(b.change, &*small).status().message(), b.message);
    Params q = *small;
    q[b.index] = b.value;
    EXPECT_EQ(ts.CanImplement(prefill, q, h100).message(), b.message);
  }
  auto p = ts.Parse("bm=128 bn=256 bk=64 st=4 wg=2 gm=16 kg=1 cm=1 tl=4");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(ts.CanImplement(prefill, *p, h100).ok());
  auto k = ts.Generate(prefill, *p, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_TRUE(k->persistent);
  EXPECT_EQ(k->grid[0], 16u * 43u);  // one per tile; the launch clamps
  // 688 tiles: 256 slots of 128 x 256 floats, then 256 counters.
  EXPECT_EQ(k->counter_offset, int64_t{256} * 128 * 256 * 4);
  EXPECT_EQ(k->workspace_bytes, k->counter_offset + 256 * 4);
  EXPECT_EQ(ts.Shape(prefill, *p).workspace_bytes, k->workspace_bytes);
  EXPECT_THAT(k->ptx, HasSubstr("red.release.gpu.global.add.u32"));
  EXPECT_THAT(k->ptx, HasSubstr("ld.acquire.gpu.global.u32"));
  EXPECT_THAT(k->ptx, HasSubstr("mov.u32 %tP, %nctaid.x"));
  Params base = *p;
  base.size = static_cast<int>(ps.params().size());
  auto b = ps.Generate(prefill, base, "sm_90");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_NE(k->ptx, b->ptx);
  EXPECT_EQ(b->counter_offset, -1);
  EXPECT_EQ(b->workspace_bytes, 0);
  for (const Params& d : ts.DefaultCandidates()) {
    EXPECT_TRUE(ts.ValidateParams(d, "params").ok()) << ts.Format(d);
    EXPECT_EQ(d[d.size - 1], 4);
  }
}

// CanImplement refuses (problem, params) with FAILED_PRECONDITION whose
// message holds `message`, and FirstFailingRule names `rule`.
void ExpectRefusedBy(const KernelFamily& f, const KernelLimits& limits,
                     const Problem& problem, const Params& params,
                     const std::string& rule, const std::string& message) {
  const Status s = f.CanImplement(problem, params, limits);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_THAT(std::string(s.message()), HasSubstr(message));
  const int r = f.FirstFailingRule(problem, params, limits);
  ASSERT_GE(r, 0) << ToString(problem.ctx);
  EXPECT_EQ(f.rules()[r], rule);
}

// gemm.gemv: offered for fp32 NT with N <= 128, or NN of one column with
// ldb 1; its named rules refuse the rest, naming the field and the allowed
// values, and agree with FirstFailingRule.
TEST(GemvFamilyTest, RulesOfferSkinnyShapesOnly) {
  const KernelFamily& f = Family("gemm.gemv");
  EXPECT_EQ(f.op(), Op::kGemm);
  EXPECT_EQ(f.version(), 3);
  EXPECT_EQ(f.precisions(), std::vector<DType>{DType::kFp32});
  EXPECT_EQ(f.rules(),
            (std::vector<std::string>{"layout", "columns", "column_tile",
                                      "threads", "vector_ld", "registers"}));
  const KernelLimits h100 = H100();
  auto p = f.Parse("R=2 NC=1 W=4 WN=1 V=4 U=2 KG=1");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto refused = [&](const Problem& problem, const Params& params,
                     const std::string& rule, const std::string& message) {
    ExpectRefusedBy(f, h100, problem, params, rule, message);
  };
  // Accepted: NT of 1 .. 128 columns (one column per warp), NN of one.
  for (int64_t n : {1, 2, 7, 8, 16, 64, 100, 128}) {
    const Problem nt(Gemm(4096, n, 4096, Layout::kN, Layout::kT, DType::kFp32));
    EXPECT_TRUE(f.CanImplement(nt, *p, h100).ok()) << n;
  }
  const Problem nn1(Gemm(4096, 1, 4096, Layout::kN, Layout::kN, DType::kFp32));
  EXPECT_TRUE(f.CanImplement(nn1, *p, h100).ok());
  // NN of several columns; NN of one with ldb > 1 (B not contiguous); A T.
  refused(Problem(Gemm(4096, 2, 4096, Layout::kN, Layout::kN, DType::kFp32)),
          *p, "layout",
          "layout: gemm.gemv reads A's rows and B's columns along K: "
          "layout_a must be N and layout_b T (or N with n 1 and ldb 1), got "
          "layout NN with n 2 and ldb 2");
  Problem strided = nn1;
  strided.ldb = 4;
  refused(strided, *p, "layout", "got layout NN with n 1 and ldb 4");
  refused(Problem(Gemm(4096, 1, 4096, Layout::kT, Layout::kT, DType::kFp32)),
          *p, "layout", "got layout TT");
  // More than 128 columns.
  refused(Problem(Gemm(4096, 129, 4096, Layout::kN, Layout::kT, DType::kFp32)),
          *p, "columns",
          "columns: gemm.gemv reads all of A once per column tile: n must "
          "be in [1, 128], got 129");
  // A column tile wider than N's power of two; warps along N without a
  // column.
  const Problem n3(Gemm(4096, 3, 4096, Layout::kN, Layout::kT, DType::kFp32));
  auto wide = f.Parse("R=2 NC=8 W=4 WN=1 V=4 U=2 KG=1");
  ASSERT_TRUE(wide.ok());
  refused(n3, *wide, "column_tile",
          "column_tile: NC=8 is wider than n 3 needs (it would repeat a "
          "narrower NC): NC must be below 6");
  auto four = f.Parse("R=2 NC=4 W=4 WN=1 V=4 U=2 KG=1");
  ASSERT_TRUE(four.ok());
  EXPECT_TRUE(f.CanImplement(n3, *four, h100).ok());
  auto idle = f.Parse("R=2 NC=2 W=4 WN=4 V=4 U=2 KG=1");
  ASSERT_TRUE(idle.ok());
  refused(n3, *idle, "column_tile",
          "column_tile: WN=4 warps of 2 columns leave a warp without one of "
          "n 3: (WN - 1) * min(NC, n) must be below n");
  // 8 x 8 warps are 2048 threads.
  auto many = f.Parse("R=1 NC=1 W=8 WN=8 V=4 U=1 KG=1");
  ASSERT_TRUE(many.ok());
  refused(Problem(Gemm(4096, 64, 4096, Layout::kN, Layout::kT, DType::kFp32)),
          *many, "threads",
          "threads: W=8 x WN=8 warps are 2048 threads, more than 1024 per "
          "program");
  // Rows that are no multiple of V.
  Problem odd(Gemm(4096, 4, 4098, Layout::kN, Layout::kT, DType::kFp32));
  refused(odd, *p, "vector_ld",
          "vector_ld: V=4 reads 4 floats at a time: lda must be a multiple of "
          "4, got 4098");
  odd.lda = 4100;
  refused(odd, *p, "vector_ld", "ldb must be a multiple of 4, got 4098");
  auto v2 = f.Parse("R=2 NC=1 W=4 WN=1 V=2 U=2 KG=1");
  ASSERT_TRUE(v2.ok());
  EXPECT_TRUE(f.CanImplement(odd, *v2, h100).ok());
  // One column: ldb does not matter (only column 0 is read).
  Problem one(Gemm(4096, 1, 4096, Layout::kN, Layout::kT, DType::kFp32));
  one.ldb = 4097;
  EXPECT_TRUE(f.CanImplement(one, *p, h100).ok());
  // The register estimate refuses the largest tiles per thread, and tiles
  // whose program would not fit the SM's registers.
  auto big = f.Parse("R=8 NC=16 W=1 WN=1 V=4 U=2 KG=1");
  ASSERT_TRUE(big.ok());
  refused(Problem(Gemm(4096, 16, 4096, Layout::kN, Layout::kT, DType::kFp32)),
          *big, "registers", "registers: an estimated");
  auto wide_program = f.Parse("R=8 NC=8 W=4 WN=4 V=4 U=1 KG=1");
  ASSERT_TRUE(wide_program.ok());
  EXPECT_LE(GemvRegisterEstimate(
                GemvParams{8, 8, 4, 4, 4, 1, 0, 1}, 64),
            255);
  refused(Problem(Gemm(64, 64, 65536, Layout::kN, Layout::kT, DType::kFp32)),
          *wide_program, "registers", "threads reach the SM's 65536");
  // Exactly the register file (128 x 512) failed to launch on an H200.
  auto edge = f.Parse("R=8 NC=4 W=8 WN=2 V=1 U=2 PF=1 KG=1");
  ASSERT_TRUE(edge.ok());
  EXPECT_EQ(GemvRegisterEstimate(GemvParams{8, 4, 8, 2, 1, 2, 1, 1}, 16) * 512, 65536);
  refused(Problem(Gemm(4096, 16, 4096, Layout::kN, Layout::kT, DType::kFp32)),
          *edge, "registers", "threads reach the SM's 65536");
  // Not fp32: the precision is the context's field.
  const Status bf16 = f.CanImplement(
      Problem(Gemm(4096, 1, 4096, Layout::kN, Layout::kT, DType::kBf16)), *p,
      h100);
  EXPECT_EQ(bf16.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bf16.message()), HasSubstr("context.dtype"));
  EXPECT_THAT(std::string(bf16.message()), HasSubstr("bf16"));
  // Out of the domains: the field named.
  auto bad = f.Parse("R=3");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("params.R must be one of {1, 2, 4, 8}"));
  auto bad_nc = f.Parse("R=2 NC=3 W=4 WN=1 V=4 U=2 KG=1");
  ASSERT_FALSE(bad_nc.ok());
  EXPECT_THAT(std::string(bad_nc.status().message()),
              HasSubstr("params.NC must be one of {1, 2, 4, 8, 16}"));
  EXPECT_TRUE(f.Default(nn1, h100).ok());
  // The default takes the widest tile N allows, and V = 1 is the fallback
  // for rows of any length.
  auto fallback =
      f.Default(Problem(Gemm(1000, 3, 1001, Layout::kN, Layout::kT,
                             DType::kFp32)),
                h100);
  ASSERT_TRUE(fallback.ok()) << fallback.status().ToString();
  EXPECT_EQ((*fallback)[f.ParamIndex("V")], 1);
  EXPECT_EQ((*fallback)[f.ParamIndex("NC")], 4);
  auto cov = f.Default(
      Problem(Gemm(64, 64, 65536, Layout::kN, Layout::kT, DType::kFp32)), h100);
  ASSERT_TRUE(cov.ok()) << cov.status().ToString();
  EXPECT_EQ((*cov)[f.ParamIndex("NC")], 8);
}

// The sampling rule power_of_two rejects every draw of a value that is not
// a power of two. That is its purpose for block sizes (thesis 4.2: gemm.ffma
// draws ML = 12 or MS = 3 only where another rule set leaves it out), but a
// switch whose values are 0 and 1 would then never be drawn off: gemm.gemv's
// PF = 0 was not (campaign run26, 45,824 samples, every one PF = 1).
TEST(FamilyRegistryTest, PowerOfTwoRuleLeavesSwitchesAlone) {
  for (const KernelFamily* f : Families()) {
    for (const ParamSpec& p : f->params()) {
      if (p.log_feature) continue;  // a switch: its value is the feature
      EXPECT_FALSE(p.power_of_two)
          << f->name() << " " << p.name
          << ": a switch under power_of_two is never drawn at 0";
    }
  }
  // And gemm.ffma_k's stages (2, 3, 4), as gemm.ffma's.
  const KernelFamily& k = Family("gemm.ffma_k");
  EXPECT_FALSE(k.params()[k.ParamIndex("ST")].power_of_two);
}

// gemm.ffma_k: offered for fp32 NT with rows of whole 16-byte units; its
// named rules refuse the rest, naming the field and the allowed values.
TEST(FfmaKFamilyTest, RulesOfferNtOnly) {
  const KernelFamily& f = Family("gemm.ffma_k");
  EXPECT_EQ(f.op(), Op::kGemm);
  EXPECT_EQ(f.version(), 5);
  EXPECT_EQ(f.precisions(), std::vector<DType>{DType::kFp32});
  EXPECT_EQ(f.rules(), (std::vector<std::string>{"layout", "tile", "threads",
                                                 "k_warps", "vector_ld",
                                                 "shared", "registers",
                                                 "cluster"}));
  const KernelLimits h100 = H100();
  auto p = f.Parse("LM=8 TM=4 TN=4 WM=2 WN=4 KC=32 ST=3 KG=16");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto refused = [&](const Problem& problem, const Params& params,
                     const std::string& rule, const std::string& message) {
    ExpectRefusedBy(f, h100, problem, params, rule, message);
  };
  const Problem cov(Gemm(64, 64, 65536, Layout::kN, Layout::kT, DType::kFp32));
  EXPECT_TRUE(f.CanImplement(cov, *p, h100).ok());
  // A 64 x 64 tile, 256 threads, three stages of (64 + 64) rows of 36
  // floats.
  const ConfigShape shape = f.Shape(cov, *p);
  EXPECT_EQ(shape.tile_m, 64);
  EXPECT_EQ(shape.tile_n, 64);
  EXPECT_EQ(shape.threads, 256);
  EXPECT_EQ(shape.programs, 16);
  EXPECT_EQ(shape.workspace_bytes, 16 * 64 * 64 * 4);
  for (Layout a : {Layout::kN, Layout::kT})
    for (Layout b : {Layout::kN, Layout::kT}) {
      if (a == Layout::kN && b == Layout::kT) continue;
      refused(Problem(Gemm(64, 64, 4096, a, b, DType::kFp32)), *p, "layout",
              "layout: gemm.ffma_k stages both operands K-major: layout "
              "must be NT (A M rows of K, B N rows of K), got ");
    }
  // A tile twice the product's rows or columns repeats a narrower one.
  refused(Problem(Gemm(32, 64, 4096, Layout::kN, Layout::kT, DType::kFp32)),
          *p, "tile",
          "tile: the program's tile of 64 rows (LM*TM*WM) is at least twice "
          "m 32 (a narrower one does the same work): it must be below 64");
  refused(Problem(Gemm(64, 16, 4096, Layout::kN, Layout::kT, DType::kFp32)),
          *p, "tile", "tile of 64 columns (LN*TN*WN) is at least twice n 16");
  EXPECT_TRUE(f.CanImplement(Problem(Gemm(33, 33, 100, Layout::kN,
                                          Layout::kT, DType::kFp32)),
                             *p, h100)
                  .ok());
  auto many = f.Parse("LM=8 TM=1 TN=1 WM=8 WN=8 KC=16 ST=2 KG=1");
  ASSERT_TRUE(many.ok());
  refused(Problem(Gemm(4096, 4096, 4096, Layout::kN, Layout::kT,
                       DType::kFp32)),
          *many, "threads",
          "threads: WM=8 x WN=8 x WK=1 warps are 2048 threads, more than "
          "1024 per program");
  // WK groups split each stage in whole 16-byte vectors: KC = 16 is four,
  // so WK = 8 is refused, WK = 4 taken (16 warps).
  auto sliced = f.Parse("LM=8 TM=4 TN=4 WM=1 WN=2 KC=16 ST=3 KG=1 WK=8");
  ASSERT_TRUE(sliced.ok());
  refused(cov, *sliced, "k_warps",
          "k_warps: WK=8 groups split each stage's KC=16 elements in whole "
          "16-byte vectors: WK must divide KC / 4 = 4");
  auto four = f.Parse("LM=8 TM=4 TN=4 WM=1 WN=2 KC=16 ST=3 KG=1 WK=4");
  ASSERT_TRUE(four.ok());
  EXPECT_TRUE(f.CanImplement(cov, *four, h100).ok());
  EXPECT_EQ(f.Shape(cov, *four).threads, 256);
  EXPECT_FALSE(f.Parse("LM=8 TM=4 TN=4 WM=1 WN=2 KC=16 ST=3 KG=1 WK=3").ok());
  Problem odd(Gemm(64, 64, 4098, Layout::kN, Layout::kT, DType::kFp32));
  refused(odd, *p, "vector_ld",
          "vector_ld: gemm.ffma_k copies 16 bytes (4 floats) at a time: lda "
          "must be a multiple of 4, got 4098");
  odd.lda = 4100;
  refused(odd, *p, "vector_ld", "ldb must be a multiple of 4, got 4098");
  odd.ldb = 4100;
  EXPECT_TRUE(f.CanImplement(odd, *p, h100).ok());
  // 4 stages of (256 + 256) rows of 68 floats: 557,056 bytes.
  auto huge = f.Parse("LM=8 TM=8 TN=8 WM=4 WN=8 KC=64 ST=4 KG=1");
  ASSERT_TRUE(huge.ok());
  refused(Problem(Gemm(4096, 4096, 4096, Layout::kN, Layout::kT,
                       DType::kFp32)),
          *huge, "shared",
          "shared: ST=4 stages of (256 + 256) rows of KC=64 (+4) floats, or "
          "WK-1=0 groups' (with CL > 1 at least one) 256 x 256 sums, are "
          "557056 bytes of shared memory, more than the 232448");
  // CL splits per cluster add their sums in distributed shared memory:
  // 512 splits in clusters of 8 leave 64 partial sums; K_G = CL none (the
  // cluster writes C). Clusters need sm_90, and no more splits than K_G.
  auto clustered = f.Parse("LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=512 CL=8");
  ASSERT_TRUE(clustered.ok()) << clustered.status().ToString();
  EXPECT_TRUE(f.CanImplement(cov, *clustered, h100).ok());
  EXPECT_EQ(f.Shape(cov, *clustered).programs, 512);
  EXPECT_EQ(f.Shape(cov, *clustered).split_k, 512);
  EXPECT_EQ(f.Shape(cov, *clustered).workspace_bytes, 64 * 64 * 64 * 4);
  auto gk = f.Generate(cov, *clustered, "sm_90");
  ASSERT_TRUE(gk.ok()) << gk.status().ToString();
  EXPECT_THAT(gk->ptx, HasSubstr(".reqnctapercluster 1, 1, 8"));
  EXPECT_THAT(gk->ptx, HasSubstr("ld.shared::cluster.f32"));
  EXPECT_THAT(gk->ptx, HasSubstr("mov.u32 %kg, 64;"));
  EXPECT_EQ(gk->workspace_bytes, 64 * 64 * 64 * 4);
  auto whole = f.Parse("LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=8 CL=8");
  ASSERT_TRUE(whole.ok());
  auto wk8 = f.Generate(cov, *whole, "sm_90");
  ASSERT_TRUE(wk8.ok()) << wk8.status().ToString();
  EXPECT_TRUE(wk8->reduce_entry.empty());
  EXPECT_EQ(wk8->workspace_bytes, 0);
  EXPECT_EQ(f.Shape(cov, *whole).workspace_bytes, 0);
  KernelLimits a100 = h100;
  a100.compute_capability = 80;
  ExpectRefusedBy(f, a100, cov, *clustered, "cluster",
                  "cluster: CL=8 splits per cluster need thread-block "
                  "clusters (compute capability 9.0 or later), got 8.0");
  auto over = f.Parse("LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=4 CL=8");
  ASSERT_TRUE(over.ok());
  refused(cov, *over, "cluster", "cluster: CL=8 splits per cluster need CL <= KG=4");
  // K_G that is no power of two (v5): its share of K divided, not shifted;
  // clusters only of a divisor of it.
  auto seven = f.Parse("LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=7");
  ASSERT_TRUE(seven.ok()) << seven.status().ToString();
  EXPECT_EQ(f.Shape(cov, *seven).programs, 7);
  auto g7 = f.Generate(cov, *seven, "sm_90");
  ASSERT_TRUE(g7.ok()) << g7.status().ToString();
  EXPECT_THAT(g7->ptx, HasSubstr("div.u32 %r, %r, 7;"));
  EXPECT_EQ(g7->workspace_bytes, 7 * 64 * 64 * 4);
  EXPECT_THAT(gk->ptx, ::testing::Not(HasSubstr("div.u32 %r, %r,")));
  auto six = f.Parse("LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=6 CL=2");
  ASSERT_TRUE(six.ok());
  EXPECT_TRUE(f.CanImplement(cov, *six, h100).ok());
  auto uneven = f.Parse("LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=6 CL=4");
  ASSERT_TRUE(uneven.ok());
  refused(cov, *uneven, "cluster",
          "cluster: CL=4 splits per cluster need CL <= KG=6 and a divisor of it");
  EXPECT_EQ(f.Generate(cov, *clustered, "sm_80").status().code(),
            StatusCode::kFailedPrecondition);
  // 8 x 8 outputs per lane at 512 threads pass the per-thread estimate but
  // not the SM's register file.
  auto wide = f.Parse("LM=8 TM=8 TN=8 WM=4 WN=4 KC=16 ST=2 KG=1");
  ASSERT_TRUE(wide.ok());
  EXPECT_LE(FfmaKRegisterEstimate(FfmaKParams{8, 8, 8, 4, 4, 16, 2, 1}), 255);
  refused(Problem(Gemm(4096, 4096, 4096, Layout::kN, Layout::kT,
                       DType::kFp32)),
          *wide, "registers", "threads reach the SM's 65536");
  const Status bf16 = f.CanImplement(
      Problem(Gemm(64, 64, 4096, Layout::kN, Layout::kT, DType::kBf16)), *p,
      h100);
  EXPECT_EQ(bf16.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bf16.message()), HasSubstr("context.dtype"));
  auto bad = f.Parse("LM=2");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("params.LM must be one of {4, 8, 16, 32}"));
  auto bad_kc = f.Parse("LM=8 TM=4 TN=4 WM=2 WN=4 KC=8 ST=3 KG=16");
  ASSERT_FALSE(bad_kc.ok());
  EXPECT_THAT(std::string(bad_kc.status().message()),
              HasSubstr("params.KC must be one of {16, 32, 64}"));
  // Defaults for a covariance, an MLP layer and a decode product.
  EXPECT_TRUE(f.Default(cov, h100).ok());
  EXPECT_TRUE(f.Default(Problem(Gemm(4096, 16, 4096, Layout::kN, Layout::kT,
                                     DType::kFp32)),
                        h100)
                  .ok());
  EXPECT_TRUE(f.Default(Problem(Gemm(4096, 1, 4096, Layout::kN, Layout::kT,
                                     DType::kFp32)),
                        h100)
                  .ok());
}

// The kernel: 16-byte cp.async copies into a ring of ST stages, 16-byte
// shared reads, the FMAs, gemm.ffma's entry parameters and, for K_G > 1,
// its reduce entry and workspace; its dynamic shared memory.
// gemm.ffma_kpk: gemm.ffma_k's parameters; offered for NT where lda or
// ldb is not a multiple of 4 (else gemm.ffma_k reads the rows in place);
// gemm.ffma_k's other rules on the packed problem; a pack entry before the
// main one, the packs after the partial sums in the workspace.
TEST(FfmaKPackedFamilyTest, OfferedWhereRowsAreNotWhole16ByteUnits) {
  const KernelFamily& f = Family("gemm.ffma_kpk");
  EXPECT_EQ(f.version(), 2);
  EXPECT_EQ(f.precisions(), std::vector<DType>{DType::kFp32});
  EXPECT_EQ(f.rules(), (std::vector<std::string>{"layout", "unaligned_rows",
                                                 "tile", "threads", "k_warps",
                                                 "vector_ld", "shared",
                                                 "registers", "cluster"}));
  const KernelLimits h100 = H100();
  auto p = f.Parse("LM=8 TM=4 TN=4 WM=2 WN=4 KC=32 ST=3 KG=4");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto refused = [&](const Problem& problem, const Params& params,
                     const std::string& rule, const std::string& message) {
    ExpectRefusedBy(f, h100, problem, params, rule, message);
  };
  refused(Problem(Gemm(777, 333, 1555, Layout::kN, Layout::kN, DType::kFp32)),
          *p, "layout", "layout: gemm.ffma_k stages both operands K-major");
  refused(Problem(Gemm(777, 333, 1556, Layout::kN, Layout::kT, DType::kFp32)),
          *p, "unaligned_rows",
          "unaligned_rows: gemm.ffma_kpk packs operands whose rows are not "
          "whole 16-byte units, and lda=1556 and ldb=1556 are multiples of 4 "
          "floats: gemm.ffma_k reads them in place");
  refused(Problem(Gemm(32, 64, 1555, Layout::kN, Layout::kT, DType::kFp32)),
          *p, "tile", "tile: the program's tile of 64 rows");
  // Both packed: 777 and 333 rows of 1556 floats after 4 partial sums.
  const Problem odd(Gemm(777, 333, 1555, Layout::kN, Layout::kT, DType::kFp32));
  ASSERT_TRUE(f.CanImplement(odd, *p, h100).ok());
  auto k = f.Generate(odd, *p, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->entry, "blocktune_ffma_k");
  EXPECT_EQ(k->pack_entry, "blocktune_gemm_mma_pack");
  EXPECT_EQ(k->pack_block[0], 256u);
  const int64_t partials = 4 * 777 * 333 * 4;  // 4,139,856: 256-byte aligned
  const int64_t a_at = (partials + 255) / 256 * 256;
  const int64_t b_at = a_at + (777 * 1556 * 4 + 255) / 256 * 256;
  const int64_t end = b_at + (333 * 1556 * 4 + 255) / 256 * 256;
  EXPECT_EQ(k->workspace_bytes, end);
  EXPECT_EQ(f.Shape(odd, *p).workspace_bytes, end);
  EXPECT_THAT(k->ptx, HasSubstr("add.u64 %A, %W, " + std::to_string(a_at)));
  EXPECT_THAT(k->ptx, HasSubstr("add.u64 %B, %W, " + std::to_string(b_at)));
  EXPECT_THAT(k->ptx, HasSubstr("mov.u32 %lda, 1556;"));
  EXPECT_THAT(k->ptx, HasSubstr(".entry blocktune_gemm_mma_pack("));
  EXPECT_FALSE(k->reduce_entry.empty());
  // The packed operands need no alignment of their own.
  EXPECT_EQ(k->align_a, 1);
  EXPECT_EQ(k->align_b, 1);
  // Only B's rows unaligned: A is read in place, with gemm.ffma_k's copies.
  Problem b_only = odd;
  std::get<GemmContext>(b_only.ctx).k = 1556;
  b_only.ldb = 1557;
  auto kb = f.Generate(b_only, *p, "sm_90");
  ASSERT_TRUE(kb.ok()) << kb.status().ToString();
  EXPECT_EQ(kb->align_a, 4);
  EXPECT_EQ(kb->align_b, 1);
  EXPECT_THAT(kb->ptx, Not(HasSubstr("add.u64 %A, %W")));
  EXPECT_THAT(kb->ptx, HasSubstr("add.u64 %B, %W, " + std::to_string(a_at)));
  // gemm.ffma_k's main entry is the same PTX but for where it reads A and
  // B: the packed main entry less the packs' lines, and less the pack
  // entry, is gemm.ffma_k's kernel for the packed problem.
  const KernelFamily& base = Family("gemm.ffma_k");
  Problem aligned = odd;
  aligned.lda = aligned.ldb = 1556;
  auto kk = base.Generate(aligned, *p, "sm_90");
  ASSERT_TRUE(kk.ok()) << kk.status().ToString();
  std::string main = k->ptx.substr(0, k->ptx.find("\n// ---- packing"));
  for (const char* x : {"A", "B"}) {
    const size_t at = main.find(std::string("\t// ---- ") + x + " packed");
    ASSERT_NE(at, std::string::npos) << x;
    size_t end_line = at;
    for (int i = 0; i < 3; ++i) end_line = main.find('\n', end_line) + 1;
    main.erase(at, end_line - at);
  }
  EXPECT_EQ(main, kk->ptx);
}

TEST(FfmaKFamilyTest, GenerateStagesKMajorThroughCpAsync) {
  const KernelFamily& f = Family("gemm.ffma_k");
  Problem problem(Gemm(1000, 50, 1001, Layout::kN, Layout::kT, DType::kFp32));
  problem.lda = problem.ldb = 1004;
  auto p = f.Parse("LM=8 TM=4 TN=4 WM=2 WN=1 KC=32 ST=3 KG=4");
  ASSERT_TRUE(p.ok());
  auto k = f.Generate(problem, *p, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->entry, "blocktune_ffma_k");
  EXPECT_THAT(k->ptx, HasSubstr("// blocktune gemm.ffma_k v5"));
  EXPECT_THAT(k->ptx, HasSubstr("cp.async.cg.shared.global"));
  EXPECT_THAT(k->ptx, HasSubstr("cp.async.wait_group 1;"));
  EXPECT_THAT(k->ptx, HasSubstr("ld.shared.v4.f32"));
  // A 64 x 16 tile: grid 16 x 4 x 4, 64 threads; 3 stages of 80 rows of
  // 36 floats.
  EXPECT_EQ(k->grid, (std::array<unsigned, 3>{16, 4, 4}));
  EXPECT_EQ(k->block, (std::array<unsigned, 3>{64, 1, 1}));
  EXPECT_EQ(k->dynamic_shared_bytes, 3u * 80 * 36 * 4);
  EXPECT_EQ(k->reduce_entry, "blocktune_gemm_reduce");
  EXPECT_EQ(k->workspace_bytes, 4 * 1000 * 50 * 4);
  EXPECT_EQ(k->align_a, 4);
  EXPECT_EQ(k->align_b, 4);
  EXPECT_EQ(k->align_bytes, 16);
  // Counted in the main entry (the reduce entry follows it).
  const std::string main = k->ptx.substr(0, k->ptx.find("blocktune_gemm_reduce"));
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = main.find(what); at != std::string::npos;
         at = main.find(what, at + 1))
      ++n;
    return n;
  };
  // Per stage: 4*4*4 FMAs per four elements of K, 8 of them; 4 + 4
  // shared reads per four elements.
  EXPECT_EQ(count("fma.rn.f32"), 8u * 64);
  EXPECT_EQ(count("ld.shared.v4.f32"), 8u * 8);
  // The copies: 64 x 8 chunks of A over 64 threads (8 each), 16 x 8 of B
  // (2 each), in each of the two prologue stages and the main loop's.
  EXPECT_EQ(count("cp.async.cg.shared.global"), 3u * (8 + 2));
  // The same parameters give the same text for any shape (only the
  // geometry changes).
  Problem other(Gemm(4096, 64, 8192, Layout::kN, Layout::kT, DType::kFp32));
  auto k2 = f.Generate(other, *p, "sm_90");
  ASSERT_TRUE(k2.ok()) << k2.status().ToString();
  EXPECT_EQ(k2->ptx, k->ptx);
  // On sm_90 the reduce entry is a programmatic dependent launch: the main
  // entry lets it be scheduled, the reduce entry waits before it reads W.
  EXPECT_TRUE(k->reduce_dependent);
  EXPECT_EQ(count("griddepcontrol.launch_dependents;"), 1u);
  const std::string reduce = k->ptx.substr(main.size());
  EXPECT_LT(reduce.find("griddepcontrol.wait;"), reduce.find("ld.global"));
  // sm_80 has neither; nor a kernel without a reduce entry.
  auto k80 = f.Generate(problem, *p, "sm_80");
  ASSERT_TRUE(k80.ok()) << k80.status().ToString();
  EXPECT_FALSE(k80->reduce_dependent);
  EXPECT_EQ(k80->ptx.find("griddepcontrol"), std::string::npos);
  auto one = f.Parse("LM=8 TM=4 TN=4 WM=2 WN=1 KC=32 ST=3 KG=1");
  ASSERT_TRUE(one.ok());
  auto k1 = f.Generate(problem, *one, "sm_90");
  ASSERT_TRUE(k1.ok()) << k1.status().ToString();
  EXPECT_TRUE(k1->reduce_entry.empty());
  EXPECT_EQ(k1->ptx.find("griddepcontrol"), std::string::npos);
}

// The kernel: vector loads of A past L1 (through it where WN warps share
// the rows), the read-only path for B, the warp's butterfly, gemm.ffma's
// entry parameters and, for K_G > 1, its reduce entry and workspace; the
// grid's y walks the column tiles.
TEST(GemvFamilyTest, GenerateStreamsAAndReducesOverTheWarp) {
  const KernelFamily& f = Family("gemm.gemv");
  Problem problem(Gemm(4104, 3, 4100, Layout::kN, Layout::kT, DType::kFp32));
  problem.ldc = 4;
  auto p = f.Parse("R=2 NC=4 W=4 WN=1 V=4 U=2 KG=1");
  ASSERT_TRUE(p.ok());
  auto k = f.Generate(problem, *p, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->entry, "blocktune_gemv");
  EXPECT_THAT(k->ptx, HasSubstr("// blocktune gemm.gemv v3"));
  EXPECT_THAT(k->ptx, HasSubstr("ld.global.nc.L1::no_allocate.v4.f32"));
  EXPECT_THAT(k->ptx, HasSubstr("ld.global.nc.v4.f32"));
  EXPECT_THAT(k->ptx, HasSubstr("shfl.sync.bfly.b32"));
  EXPECT_THAT(k->ptx, HasSubstr("fma.rn.f32"));
  // R*c = 6 sums (c = min(4, 3)), 5 butterfly steps each; 2 rows x 2 loads
  // of A per chunk.
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = k->ptx.find(what); at != std::string::npos;
         at = k->ptx.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("shfl.sync.bfly.b32"), 30u);
  EXPECT_EQ(count("ld.global.nc.L1::no_allocate.v4.f32"), 4u);
  EXPECT_EQ(count("ld.global.nc.v4.f32"), 6u);
  EXPECT_EQ(k->grid, (std::array<unsigned, 3>{513, 1, 1}));
  EXPECT_EQ(k->block, (std::array<unsigned, 3>{128, 1, 1}));
  EXPECT_EQ(k->align_a, 4);
  EXPECT_EQ(k->align_b, 4);
  EXPECT_EQ(k->align_bytes, 16);
  EXPECT_EQ(k->workspace_bytes, 0);
  EXPECT_TRUE(k->reduce_entry.empty());
  std::vector<std::string> names, want;
  for (const KernelParam& q : k->entry_params) names.push_back(q.name);
  for (const KernelParam& q : EntryParams(Op::kGemm)) want.push_back(q.name);
  EXPECT_EQ(names, want);
  ConfigShape shape = f.Shape(problem, *p);
  EXPECT_EQ(shape.tile_m, 8);
  EXPECT_EQ(shape.tile_n, 3);
  EXPECT_EQ(shape.step_k, 256);
  EXPECT_EQ(shape.threads, 128);
  EXPECT_EQ(shape.programs, 513);

  // One column: B's rows need no alignment but its address does.
  Problem one(Gemm(4096, 1, 4096, Layout::kN, Layout::kN, DType::kFp32));
  auto split = f.Parse("R=1 NC=1 W=8 WN=1 V=2 U=4 KG=4");
  ASSERT_TRUE(split.ok());
  k = f.Generate(one, *split, "sm_80");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_THAT(k->ptx, HasSubstr(".target sm_80"));
  EXPECT_THAT(k->ptx, HasSubstr("ld.global.nc.L1::no_allocate.v2.f32"));
  EXPECT_EQ(k->align_a, 2);
  EXPECT_EQ(k->align_b, 1);
  EXPECT_EQ(k->align_bytes, 8);
  EXPECT_EQ(k->reduce_entry, "blocktune_gemm_reduce");
  EXPECT_THAT(k->ptx, HasSubstr(".entry blocktune_gemm_reduce("));
  EXPECT_EQ(k->workspace_bytes, 4 * 4096 * 1 * 4);
  EXPECT_EQ(k->grid, (std::array<unsigned, 3>{512, 1, 4}));
  std::vector<std::string> reduce;
  for (const KernelParam& q : k->reduce_params) reduce.push_back(q.name);
  std::vector<std::string> ffma_reduce;
  for (const KernelParam& q : ReduceParams()) ffma_reduce.push_back(q.name);
  EXPECT_EQ(reduce, ffma_reduce);

  // A 64x64 covariance: 8x8 tiles per warp, 2 x 4 warps per program share
  // A's rows through L1, 64 programs split K; 4 x 2 column-row tiles.
  Problem cov(Gemm(64, 64, 65536, Layout::kN, Layout::kT, DType::kFp32));
  auto tiles = f.Parse("R=8 NC=8 W=2 WN=4 V=4 U=1 KG=64");
  ASSERT_TRUE(tiles.ok());
  k = f.Generate(cov, *tiles, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(count("ld.global.nc.L1::no_allocate"), 0u);
  EXPECT_EQ(count("ld.global.nc.v4.f32"), 16u);
  EXPECT_EQ(count("shfl.sync.bfly.b32"), 64u * 5);
  // Sum 37 (row 4, column 5) is lane 5's.
  EXPECT_THAT(k->ptx, HasSubstr("setp.eq.and.u32 %pw, %lane, 5, %pv;"));
  EXPECT_EQ(k->grid, (std::array<unsigned, 3>{4, 2, 64}));
  EXPECT_EQ(k->block, (std::array<unsigned, 3>{256, 1, 1}));
  EXPECT_EQ(k->workspace_bytes, 64 * 64 * 64 * 4);
  // PF = 1: the next chunk's loads, predicated on there being one, into
  // the second register set (%a32.., %b32..), twice per unrolled loop.
  auto ahead = f.Parse("R=4 NC=8 W=2 WN=4 V=4 U=1 PF=1 KG=16");
  ASSERT_TRUE(ahead.ok());
  auto pk = f.Generate(cov, *ahead, "sm_90");
  ASSERT_TRUE(pk.ok()) << pk.status().ToString();
  EXPECT_THAT(pk->ptx, HasSubstr("@%pn ld.global.nc.v4.f32 {%a16, %a17, %a18, "
                                 "%a19}, [%pa0+512];"));
  EXPECT_THAT(pk->ptx, HasSubstr("@%pn ld.global.nc.v4.f32 {%b0, %b1, %b2, "
                                 "%b3}, [%pb0+512];"));
  EXPECT_THAT(pk->ptx, HasSubstr("fma.rn.f32 %acc0, %a16, %b32, %acc0;"));
  EXPECT_THAT(pk->ptx, HasSubstr(".reg .f32 %alpha, %beta, %v, %old, %s, "
                                 "%acc<32>, %a<32>, %b<64>;"));
  shape = f.Shape(cov, *tiles);
  EXPECT_EQ(shape.tile_m, 16);
  EXPECT_EQ(shape.tile_n, 32);
  EXPECT_EQ(shape.programs, 4 * 2 * 64);
  // Refused problems are refused by Generate too.
  EXPECT_EQ(f.Generate(Problem(Gemm(64, 256, 64, Layout::kN, Layout::kT,
                                    DType::kFp32)),
                       *p, "sm_90")
                .status()
                .code(),
            StatusCode::kFailedPrecondition);
}

TEST(FamilyTest, DefaultFitsConvolutions) {
  const KernelFamily& f = Family("conv.ffma");
  int checked = 0;
  for (const KernelLimits& limits : {H100(), Sm80()})
    for (const ConvContext& c : ConvContexts())
      ExpectDefaultFits(f, Problem(c), limits, &checked);
}

TEST(FamilyTest, MmaNarrowsItsCopiesForUnalignedRows) {
  const KernelFamily& f = Family("gemm.mma");
  // lda 515, ldb 4097 bf16: rows of odd bytes, so 2-byte copies.
  Problem p(Gemm(1023, 4097, 515, Layout::kN, Layout::kN, DType::kBf16));
  auto d = f.Default(p, H100());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  auto k = f.Generate(p, *d, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->align_a, 1);
  EXPECT_EQ(k->align_b, 1);
  EXPECT_EQ(k->align_bytes, 2);
  // Padded to 16-byte rows: the 16-byte copies again.
  p.lda = 520;
  p.ldb = 4104;
  k = f.Generate(p, *d, "sm_90");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->align_a, 8);
  EXPECT_EQ(k->align_b, 8);
  EXPECT_EQ(k->align_bytes, 16);
}

// --- Format and Parse ----------------------------------------------------

TEST(FamilyTest, FormatParseRoundTrips) {
  std::mt19937 rng(17);
  for (const KernelFamily* f : Families()) {
    SCOPED_TRACE(std::string(f->name()));
    std::vector<Params> all = f->DefaultCandidates();
    for (int i = 0; all.size() < 200 && i < 100000; ++i) {
      Params p = SampleParams(*f, rng);
      if (f->ValidateParams(p).ok()) all.push_back(p);
    }
    ASSERT_GE(all.size(), 100u);
    for (const Params& p : all) {
      const std::string text = f->Format(p);
      auto q = f->Parse(text);
      ASSERT_TRUE(q.ok()) << text << ": " << q.status().ToString();
      EXPECT_EQ(*q, p) << text;
      // Keys in any order and any case.
      std::vector<std::string_view> words;
      std::string upper = text;
      for (char& c : upper) c = static_cast<char>(std::toupper(c));
      std::string reversed;
      for (size_t e = upper.size(); e > 0;) {
        size_t b = upper.rfind(' ', e - 1);
        b = b == std::string::npos ? 0 : b + 1;
        reversed += upper.substr(b, e - b) + " ";
        e = b == 0 ? 0 : b - 1;
      }
      auto r = f->Parse(reversed);
      ASSERT_TRUE(r.ok()) << reversed << ": " << r.status().ToString();
      EXPECT_EQ(*r, p);
    }
    // Keys left out take the base's values (the first default without one).
    const Params base = all.back();
    const std::string& first = f->params()[0].name;
    auto partial = f->Parse(first + "=" + std::to_string(base[0]), &base);
    ASSERT_TRUE(partial.ok());
    EXPECT_EQ(*partial, base);
    auto empty = f->Parse("");
    ASSERT_TRUE(empty.ok());
    EXPECT_EQ(*empty, f->DefaultCandidates().front());
  }
}

TEST(FamilyTest, ParseErrorsNameTheKey) {
  for (const KernelFamily* f : Families()) {
    SCOPED_TRACE(std::string(f->name()));
    const std::string first = f->params()[0].name;
    // An unknown key lists every name.
    auto r = f->Parse("zz=3");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("'zz=3'"));
    EXPECT_THAT(r.status().message(), HasSubstr(std::string(f->name())));
    for (const ParamSpec& s : f->params())
      EXPECT_THAT(r.status().message(), HasSubstr(s.name));
    // A word without '=' and a key given twice.
    EXPECT_FALSE(f->Parse(first).ok());
    r = f->Parse(first + "=" + std::to_string(f->params()[0].values[0]) + " " +
                 first + "=" + std::to_string(f->params()[0].values[0]));
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("each once"));
    // A value that is not an integer names the key.
    r = f->Parse(first + "=x12");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(Lower(r.status().message()),
                HasSubstr("params." + Lower(first) + " must be an integer"));
    // A value out of range names the key.
    r = f->Parse(first + "=0");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(Lower(r.status().message()),
                HasSubstr("params." + Lower(first)));
  }
}

TEST(FamilyTest, ValidateParamsNamesTheCallersField) {
  for (const KernelFamily* f : Families()) {
    SCOPED_TRACE(std::string(f->name()));
    Params p = f->DefaultCandidates().front();
    p[0] = 0;
    Status s = f->ValidateParams(p, "request.params");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(Lower(s.message()),
                HasSubstr("request.params." + Lower(f->params()[0].name)));
    p.size = 2;
    s = f->ValidateParams(p, "request.params");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("request.params"));
  }
}

// --- gemm.mma's parameter table ------------------------------------------

// The family's table and the generator's own list (MmaParamDomains, and
// ToString(MmaParams)) must agree name by name and in order: a parameter
// added to MmaParams but not to the family fails here.
TEST(MmaFamilyTest, FieldTableAgreesWithMmaParamDomains) {
  const KernelFamily& f = Family("gemm.mma");
  const std::vector<MmaParamDomain> domains = MmaParamDomains();
  ASSERT_EQ(f.params().size(), domains.size())
      << "MmaParamDomains and family_mma.cc's kFields differ in length";
  for (size_t i = 0; i < domains.size(); ++i) {
    EXPECT_EQ(f.params()[i].name, domains[i].name) << "parameter " << i;
    EXPECT_EQ(f.params()[i].values, domains[i].values) << domains[i].name;
  }
  // Every field of MmaParams reaches the family: ToString names them all,
  // and Format of the parse prints the same text.
  MmaParams m;
  m.bm = 64;
  m.bn = 32;
  m.bk = 64;
  m.warps_m = 4;
  m.warps_n = 1;
  m.stages = 5;
  m.kg = 16;
  m.group_m = 2;
  m.split_reduce = 1;
  const std::string text = ToString(m);
  auto p = f.Parse(text);
  ASSERT_TRUE(p.ok()) << text << ": " << p.status().ToString();
  EXPECT_EQ(f.Format(*p), text);
  // And back: the family's defaults print as MmaParams would.
  for (const Params& d : f.DefaultCandidates()) {
    auto back = MmaParamsFromString(f.Format(d));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(ToString(*back), f.Format(d));
  }
}

// --- CanImplement --------------------------------------------------------

TEST(FamilyTest, CanImplementRefusesTheWrongOpOrPrecisionNamingTheField) {
  const GemmContext gemm = Gemm(64, 64, 64, Layout::kN, Layout::kN, DType::kFp32);
  const ConvContext conv = ConvContexts().front();
  for (const KernelFamily* f : Families()) {
    SCOPED_TRACE(std::string(f->name()));
    const Params p = f->DefaultCandidates().front();
    // The other op.
    Problem other = f->op() == Op::kGemm ? Problem(conv) : Problem(gemm);
    Status s = f->CanImplement(other, p, H100());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("context"));
    EXPECT_EQ(f->Generate(other, p, "sm_90").status().code(),
              StatusCode::kInvalidArgument);
    // Every precision it does not implement.
    for (DType d : {DType::kFp32, DType::kTf32, DType::kBf16, DType::kFp16,
                    DType::kFp64}) {
      if (f->Implements(d)) continue;
      Problem wrong = f->op() == Op::kGemm ? Problem(gemm) : Problem(conv);
      if (f->op() == Op::kGemm)
        std::get<GemmContext>(wrong.ctx).dtype = d;
      else
        std::get<ConvContext>(wrong.ctx).dtype = d;
      s = f->CanImplement(wrong, p, H100());
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << ToString(d);
      EXPECT_THAT(s.message(), HasSubstr("context.dtype"));
      EXPECT_THAT(s.message(), HasSubstr(std::string(ToString(d))));
      EXPECT_EQ(f->Generate(wrong, p, "sm_90").status().code(),
                StatusCode::kInvalidArgument);
    }
    // Parameters that do not validate.
    Problem right = f->op() == Op::kGemm ? Problem(gemm) : Problem(conv);
    // gemm.mma_pk and gemm.wgmma_pk take only rows that are not 16- and
    // 128-byte aligned.
    if (f->name() == "gemm.mma_pk" || f->name() == "gemm.wgmma_pk")
      std::get<GemmContext>(right.ctx).k = 63;
    // gemm.wgmma_sc's defaults split K at least twice (a k tile each) in
    // tiles 128 wide, which take K-major B alone (rule cluster_box).
    if (f->name() == "gemm.wgmma_sc") {
      std::get<GemmContext>(right.ctx).k = 256;
      std::get<GemmContext>(right.ctx).layout_b = Layout::kT;
    }
    // gemm.gemv takes NT (NN only of one column), and its first default
    // is a tile of 8 columns (NC < 2N).
    if (f->name() == "gemm.gemv") {
      GemmContext& g = std::get<GemmContext>(right.ctx);
      g.n = 8;
      g.layout_b = Layout::kT;
    }
    // gemm.ffma_k takes NT only; gemm.ffma_kpk NT with rows that are not
    // whole 16-byte units.
    if (f->name() == "gemm.ffma_k" || f->name() == "gemm.ffma_kpk") {
      GemmContext& g = std::get<GemmContext>(right.ctx);
      g.layout_a = Layout::kN;
      g.layout_b = Layout::kT;
      if (f->name() == "gemm.ffma_kpk") g.k = 63;
    }
    if (f->op() == Op::kGemm)
      std::get<GemmContext>(right.ctx).dtype = f->precisions().front();
    else
      std::get<ConvContext>(right.ctx).dtype = f->precisions().front();
    Params bad = p;
    bad[0] = 0;
    s = f->CanImplement(right, bad, H100());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("params."));
    EXPECT_TRUE(f->CanImplement(right, p, H100()).ok());
  }
}

TEST(MmaFamilyTest, RefusedBelowComputeCapability80) {
  const KernelFamily& f = Family("gemm.mma");
  EXPECT_EQ(f.min_compute_capability(), 80);
  const Problem p(Gemm(256, 256, 256, Layout::kN, Layout::kT, DType::kBf16));
  const Params params = f.DefaultCandidates().front();
  KernelLimits turing = Sm80();
  turing.compute_capability = 75;
  Status s = f.CanImplement(p, params, turing);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("8.0"));
  EXPECT_THAT(s.message(), HasSubstr("7.5"));
  // The rules say the same, so that a sampler counts the rejection.
  const int rule = f.FirstFailingRule(p, params, turing);
  ASSERT_GE(rule, 0) << "no rule refuses compute capability 7.5";
  EXPECT_EQ(f.rules()[rule], "compute_capability");
  EXPECT_FALSE(f.Default(p, turing).ok());
  EXPECT_TRUE(f.CanImplement(p, params, Sm80()).ok());
  EXPECT_EQ(f.Generate(p, params, "sm_75").status().code(),
            StatusCode::kInvalidArgument);
}

// CanImplement and the named rules agree: FirstFailingRule is -1 exactly
// where CanImplement accepts (for parameters that validate), on random
// configurations and contexts of every family and precision.
TEST(FamilyTest, RulesAgreeWithCanImplement) {
  std::mt19937 rng(1717);
  for (const KernelFamily* f : Families()) {
    for (DType d : f->precisions()) {
      SCOPED_TRACE(std::string(f->name()) + " " + std::string(ToString(d)));
      int accepted = 0, refused = 0;
      std::vector<int> by_rule(f->rules().size());
      for (int i = 0; i < 4000; ++i) {
        const Params p = SampleParams(*f, rng);
        if (!f->ValidateParams(p).ok()) continue;
        Problem problem;
        if (f->op() == Op::kGemm) {
          GemmContext g =
              Gemm(1 + rng() % 8192, 1 + rng() % 8192, 1 + rng() % 8192,
                   rng() % 2 ? Layout::kT : Layout::kN,
                   rng() % 2 ? Layout::kT : Layout::kN, d);
          // gemm.gemv takes N <= 128 only: N over [1, 140] (the same
          // draws, so the other families' cases stay as they were).
          if (f->name() == "gemm.gemv") g.n = 1 + g.n % 140;
          problem = rng() % 4 ? Padded(g, 8) : Problem(g);
        } else {
          ConvContext cv = ConvContexts()[rng() % ConvContexts().size()];
          cv.dtype = d;
          problem = Problem(cv);
        }
        const KernelLimits limits = rng() % 2 ? H100() : Sm80();
        const int rule = f->FirstFailingRule(problem, p, limits);
        const Status s = f->CanImplement(problem, p, limits);
        ASSERT_EQ(rule < 0, s.ok())
            << f->Format(p) << " " << ToString(problem.ctx) << ": rule "
            << (rule < 0 ? "none" : f->rules()[rule]) << ", " << s.ToString();
        if (rule < 0) {
          ++accepted;
        } else {
          ++refused;
          ++by_rule[rule];
          EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
        }
      }
      EXPECT_GT(accepted, 0);
      EXPECT_GT(refused, 0);
    }
  }
}

// --- Generate ------------------------------------------------------------

bool HasEntry(const std::string& ptx, const std::string& entry) {
  return ptx.find(".entry " + entry + "(") != std::string::npos;
}

void ExpectConsistent(const KernelFamily& f, const Problem& problem,
                      const Params& params, const std::string& arch) {
  const std::string what = std::string(f.name()) + " " + f.Format(params) +
                           " " + ToString(problem.ctx) + " " + arch;
  auto k = f.Generate(problem, params, arch);
  ASSERT_TRUE(k.ok()) << what << ": " << k.status().ToString();
  const ConfigShape shape = f.Shape(problem, params);
  EXPECT_EQ(k->family, f.name()) << what;
  EXPECT_EQ(k->version, f.version()) << what;
  EXPECT_THAT(k->ptx, HasSubstr(".target " + arch)) << what;
  EXPECT_TRUE(HasEntry(k->ptx, k->entry)) << what;
  for (int i = 0; i < 3; ++i) {
    EXPECT_GT(k->grid[i], 0u) << what;
    EXPECT_GT(k->block[i], 0u) << what;
  }
  EXPECT_EQ(int64_t{k->grid[0]} * k->grid[1] * k->grid[2], shape.programs)
      << what;
  EXPECT_EQ(int64_t{k->block[0]} * k->block[1] * k->block[2], shape.threads)
      << what;
  EXPECT_EQ(k->workspace_bytes, shape.workspace_bytes) << what;
  EXPECT_FALSE(k->entry_params.empty());
  // gemm.ffma_k's clusters along the split (1 x 1 x CL) add CL partial
  // sums in distributed shared memory first: K_G / CL in the workspace,
  // none (and no reduce entry) where K_G = CL.
  const bool cluster_sums =
      k->ptx.find(".reqnctapercluster 1, 1, ") != std::string::npos;
  if (f.name() == "gemm.wgmma_sc") {
    // The K_G splits of a tile are one cluster and add their sums in its
    // shared memory: no workspace, no reduce entry.
    EXPECT_EQ(int64_t{k->cluster}, shape.split_k) << what;
    EXPECT_THAT(k->ptx, HasSubstr(".reqnctapercluster " +
                                  std::to_string(shape.split_k) + ", 1, 1"))
        << what;
    EXPECT_EQ(k->workspace_bytes, 0) << what;
    EXPECT_TRUE(k->reduce_entry.empty()) << what;
    EXPECT_THAT(k->ptx, HasSubstr("st.shared::cluster")) << what;
  } else if (shape.split_k > 1 && cluster_sums) {
    const GemmShape g = ImplicitGemm(problem.ctx);
    EXPECT_EQ(k->workspace_bytes % (g.m * g.n * 4), 0) << what;
    EXPECT_LT(k->workspace_bytes, shape.split_k * g.m * g.n * 4) << what;
    EXPECT_EQ(k->reduce_entry.empty(), k->workspace_bytes == 0) << what;
  } else if (shape.split_k > 1) {
    const GemmShape g = ImplicitGemm(problem.ctx);
    EXPECT_GE(k->workspace_bytes, shape.split_k * g.m * g.n * 4) << what;
    // The partial sums are added by a second entry or, with a counter, by
    // the last program of a tile.
    EXPECT_TRUE(!k->reduce_entry.empty() || k->counter_offset >= 0) << what;
  } else {
    // A pack entry's copies and gemm.wgmma_ts's tail split (its slots and
    // counters) are the only workspaces without a split.
    EXPECT_EQ(k->workspace_bytes > 0,
              !k->pack_entry.empty() || k->counter_offset >= 0)
        << what;
    EXPECT_TRUE(k->reduce_entry.empty()) << what;
  }
  if (!k->pack_entry.empty()) {
    EXPECT_TRUE(HasEntry(k->ptx, k->pack_entry)) << what;
    EXPECT_GT(k->workspace_bytes, 0) << what;
    EXPECT_GT(k->pack_grid[0], 0u) << what;
    EXPECT_GT(k->pack_block[0], 0u) << what;
  }
  if (!k->reduce_entry.empty()) {
    EXPECT_TRUE(HasEntry(k->ptx, k->reduce_entry)) << what;
    EXPECT_FALSE(k->reduce_params.empty());
    for (int i = 0; i < 3; ++i) {
      EXPECT_GT(k->reduce_grid[i], 0u) << what;
      EXPECT_GT(k->reduce_block[i], 0u) << what;
    }
    EXPECT_EQ(k->counter_offset, -1) << what;
    // A programmatic dependent launch exactly where the reduce entry waits
    // for the main grid (launched so without the wait, it could read
    // partial sums not yet written).
    const size_t at = k->ptx.find(".entry " + k->reduce_entry);
    const std::string reduce =
        k->ptx.substr(at, k->ptx.find(".entry ", at + 1) - at);
    EXPECT_EQ(k->reduce_dependent,
              reduce.find("griddepcontrol.wait;") != std::string::npos)
        << what;
  } else {
    EXPECT_TRUE(k->reduce_params.empty()) << what;
    EXPECT_FALSE(k->reduce_dependent) << what;
  }
  if (k->counter_offset >= 0) {
    EXPECT_LT(k->counter_offset, k->workspace_bytes) << what;
    EXPECT_EQ(k->counter_offset % 4, 0) << what;
  }
  EXPECT_GE(k->align_a, 1);
  EXPECT_GE(k->align_b, 1);
  if (f.name() == "gemm.wgmma" || f.name() == "gemm.wgmma_pk") {
    EXPECT_THAT(k->ptx, HasSubstr("wgmma.mma_async")) << what;
    EXPECT_THAT(k->ptx, HasSubstr("cp.async.bulk.tensor")) << what;
    EXPECT_EQ(k->target, "sm_90a") << what;
    EXPECT_EQ(k->tensor_maps.size(), 3u) << what;
    EXPECT_GT(k->dynamic_shared_bytes, 0u);
    EXPECT_EQ(k->align_bytes, 16);
  } else if (f.name() == "gemm.mma") {
    const GemmContext& g = std::get<GemmContext>(problem.ctx);
    EXPECT_THAT(k->ptx, HasSubstr("mma.sync.aligned")) << what;
    EXPECT_THAT(k->ptx, HasSubstr("cp.async")) << what;
    // tf32 operands contiguous along M or N are read by words (ldmatrix
    // moves 16-bit elements): only TN reads neither operand with it.
    if (!(g.dtype == DType::kTf32 && g.layout_a == Layout::kT &&
          g.layout_b == Layout::kN)) {
      EXPECT_THAT(k->ptx, HasSubstr("ldmatrix")) << what;
    }
    EXPECT_GT(k->dynamic_shared_bytes, 0u);
    EXPECT_EQ(k->align_bytes, 16);
    EXPECT_EQ(k->align_a, 16 / SizeOf(g.dtype));
  } else {
    EXPECT_THAT(k->ptx, HasSubstr("fma.rn.f32")) << what;
  }
}

TEST(FamilyTest, GenerateIsConsistentWithShapeAndThePtx) {
  std::mt19937 rng(99);
  for (const KernelFamily* f : Families()) {
    for (DType d : f->precisions()) {
      SCOPED_TRACE(std::string(f->name()) + " " + std::string(ToString(d)));
      std::vector<Problem> problems;
      if (f->op() == Op::kGemm) {
        for (int l = 0; l < 4; ++l) {
          const Layout la = l / 2 ? Layout::kT : Layout::kN;
          const Layout lb = l % 2 ? Layout::kT : Layout::kN;
          problems.push_back(Padded(Gemm(100, 72, 300, la, lb, d), 8));
          problems.push_back(Padded(Gemm(1, 8, 4096, la, lb, d), 8));
          problems.push_back(Padded(Gemm(1000, 1023, 515, la, lb, d), 8));
        }
      } else {
        for (const ConvContext& c : ConvContexts()) problems.push_back(Problem(Context(c)));
      }
      // Configurations the family runs on an sm_80 (an H100 for those
      // that need more), generated for every arch it runs on.
      const KernelLimits sampled =
          f->min_compute_capability() > 80 ? H100() : Sm80();
      std::vector<const char*> archs;
      for (const char* arch : {"sm_90", "sm_80"})
        if (std::atoi(arch + 3) >= f->min_compute_capability())
          archs.push_back(arch);
      for (const Problem& problem : problems) {
        std::vector<Params> configs = f->DefaultCandidates();
        // Random accepted configurations, split K among them.
        for (int i = 0; configs.size() < 12 && i < 20000; ++i) {
          Params p = SampleParams(*f, rng);
          if (f->ValidateParams(p).ok() &&
              f->CanImplement(problem, p, sampled).ok() &&
              SplitHasWork(problem, f->Shape(problem, p)) &&
              (configs.size() % 2 == 1 || f->Shape(problem, p).split_k > 1))
            configs.push_back(p);
        }
        for (const Params& p : configs) {
          if (!f->CanImplement(problem, p, H100()).ok()) continue;
          for (const char* arch : archs) {
            // A configuration for sm_90 alone (gemm.ffma_k's clusters).
            if (std::string(arch) == "sm_80" &&
                !f->CanImplement(problem, p, Sm80()).ok())
              continue;
            ExpectConsistent(*f, problem, p, arch);
            if (HasFailure()) return;
          }
        }
      }
    }
  }
}

TEST(FamilyTest, FeaturesMatchTheirNames) {
  for (const KernelFamily* f : Families()) {
    const auto names = f->FeatureNames();
    EXPECT_EQ(names.size(),
              f->params().size() + ContextFeatureNames(f->op()).size());
    std::vector<float> features;
    const Problem p =
        f->op() == Op::kGemm
            ? Problem(Gemm(64, 32, 128, Layout::kT, Layout::kN,
                           f->precisions().front()))
            : Problem(ConvContexts().front());
    f->Features(p, f->DefaultCandidates().front(), &features);
    EXPECT_EQ(features.size(), names.size()) << f->name();
  }
}

// Feature set 2 adds the tiling's five features after the context's, from
// the implicit GEMM and the configuration's ConfigShape.
TEST(FamilyTest, ShapeFeaturesOfATiling) {
  const KernelFamily& f = Family("gemm.mma");
  std::vector<std::string> names = f.FeatureNames(kLogFeatures);
  names.insert(names.end(), ShapeFeatureNames().begin(), ShapeFeatureNames().end());
  EXPECT_EQ(f.FeatureNames(kShapeFeatures), names);
  auto params = f.Parse("bm=128 bn=64 bk=32 kg=2");
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  const Problem p(Gemm(300, 100, 1000, Layout::kN, Layout::kN, DType::kBf16));
  std::vector<float> base, all;
  f.Features(p, *params, &base, kLogFeatures);
  f.Features(p, *params, &all, kShapeFeatures);
  ASSERT_EQ(all.size(), base.size() + 5);
  EXPECT_TRUE(std::equal(base.begin(), base.end(), all.begin()));
  // 3 x 2 tiles x 2 splits; 300 of 384 rows, 100 of 128 columns; each split
  // 500 deep in 16 steps of 32: 1000 of 1024.
  EXPECT_FLOAT_EQ(all[base.size() + 0], std::log2(12.f));
  EXPECT_FLOAT_EQ(all[base.size() + 1], 300.f / 384.f);
  EXPECT_FLOAT_EQ(all[base.size() + 2], 100.f / 128.f);
  EXPECT_FLOAT_EQ(all[base.size() + 3], 1000.f / 1024.f);
  EXPECT_FLOAT_EQ(all[base.size() + 4], 4.f);
  // A convolution's implicit GEMM: M = N P Q, N = K, K = C R S.
  const KernelFamily& conv = Family("conv.mma");
  auto cp = conv.Parse("bm=64 bn=64 bk=32");
  ASSERT_TRUE(cp.ok()) << cp.status().ToString();
  ConvContext c = ConvContexts().front();
  c.dtype = DType::kBf16;
  std::vector<float> cf;
  conv.Features(Problem(c), *cp, &cf, kShapeFeatures);
  const GemmShape g = ImplicitGemm(c);
  ASSERT_EQ(cf.size(), conv.FeatureNames(kShapeFeatures).size());
  EXPECT_FLOAT_EQ(cf[cf.size() - 4],
                  float(double(g.m) / double((g.m + 63) / 64 * 64)));
}

// Feature set 3 adds the rows' alignment after the tiling's: log2 of the
// largest power of two of bytes, at most 16, dividing each row, from the
// problem's leading dimensions (tight when none is given).
// Feature set `set` lists set - 1's names and then `added`, and a model
// listing them is of `set`.
void ExpectSetAdds(const KernelFamily& f, int set,
                   const std::vector<std::string>& added) {
  std::vector<std::string> names = f.FeatureNames(set - 1);
  names.insert(names.end(), added.begin(), added.end());
  EXPECT_EQ(f.FeatureNames(set), names);
  EXPECT_EQ(f.FeatureSetNamed(names), set);
}

// The features that set `set` appends to set - 1's of (problem, params),
// whose own come first unchanged.
std::vector<float> FeaturesAddedBy(const KernelFamily& f, int set,
                                   const Problem& problem,
                                   const Params& params, int sms = 0) {
  std::vector<float> before, all;
  f.Features(problem, params, &before, set - 1, sms);
  f.Features(problem, params, &all, set, sms);
  EXPECT_GE(all.size(), before.size());
  EXPECT_TRUE(std::equal(before.begin(), before.end(), all.begin()));
  return std::vector<float>(all.begin() + before.size(), all.end());
}

// The first test convolution in bf16 with C and K channels.
Problem Bf16Conv(int64_t c, int64_t k) {
  ConvContext conv = ConvContexts().front();
  conv.dtype = DType::kBf16;
  conv.c = c;
  conv.k = k;
  return Problem(conv);
}

TEST(FamilyTest, AlignFeaturesOfTheRows) {
  const KernelFamily& f = Family("gemm.mma");
  ExpectSetAdds(f, kAlignFeatures,
                {"log2_align_a", "log2_align_b", "log2_align_c"});
  auto params = f.Parse("bm=128 bn=64 bk=32");
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  // bf16 NT: A's rows of K = 1555 (2 bytes), B's rows of K, C's of N = 332
  // (664 bytes: 8).
  Problem p(Gemm(777, 332, 1555, Layout::kN, Layout::kT, DType::kBf16));
  EXPECT_EQ(FeaturesAddedBy(f, kAlignFeatures, p, *params),
            (std::vector<float>{1, 1, 3}));
  // Leading dimensions given: 1560 elements (3120 bytes: 16), 1558 (4).
  p.lda = 1560;
  p.ldb = 1558;
  p.ldc = 336;
  EXPECT_EQ(FeaturesAddedBy(f, kAlignFeatures, p, *params),
            (std::vector<float>{4, 2, 4}));
  // tf32 rows of 4-byte elements are 4-byte aligned at least.
  EXPECT_EQ(AlignFeature(1555, 4), 2.f);
  EXPECT_EQ(AlignFeature(1556, 4), 4.f);
  EXPECT_EQ(AlignFeature(1, 2), 1.f);
  // A convolution: its rows of C (input, filter) and K (output).
  const KernelFamily& conv = Family("conv.mma");
  EXPECT_EQ(conv.FeatureNames(kAlignFeatures).back(), "log2_align_k");
  std::vector<float> cf;
  AppendAlignFeatures(Bf16Conv(3, 12), &cf);
  EXPECT_EQ(cf, (std::vector<float>{1, 3}));
}

// Feature set 4 adds the waves': the last wave's fill of the device's SMs
// (programs = tiles * split) and the rows' alignment up to 128 bytes.
TEST(FamilyTest, WaveFeaturesFillTheLastWaveAndAlignTo128Bytes) {
  const KernelFamily& f = Family("gemm.mma");
  ExpectSetAdds(f, kWaveFeatures, {"wave_fill", "log2_align128_a",
                                   "log2_align128_b", "log2_align128_c"});
  auto params = f.Parse("bm=128 bn=64 bk=32 kg=1");
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  // bf16 NN 1000 x 1000 x 1000: 8 x 16 = 128 programs, one wave of 132
  // SMs 128/132 full, of 100 SMs two waves, the second 28/100. Rows of
  // 1000 elements are 2000 bytes: 16-byte aligned, not 32.
  Problem p(Gemm(1000, 1000, 1000, Layout::kN, Layout::kN, DType::kBf16));
  EXPECT_EQ(FeaturesAddedBy(f, kWaveFeatures, p, *params, 132),
            (std::vector<float>{128.f / 132.f, 4, 4, 4}));
  EXPECT_FLOAT_EQ(FeaturesAddedBy(f, kWaveFeatures, p, *params, 100)[0],
                  128.f / 200.f);
  // Padded rows of 1024 (2048 bytes) stop at 128; split K multiplies the
  // programs: kg = 2 makes 256 of 132 SMs, 256 / 264.
  p.lda = p.ldb = p.ldc = 1024;
  auto split = f.Parse("bm=128 bn=64 bk=32 kg=2");
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_EQ(FeaturesAddedBy(f, kWaveFeatures, p, *split, 132),
            (std::vector<float>{256.f / 264.f, 7, 7, 7}));
  EXPECT_EQ(RowAlignFeature(1000, 2, 7), 4.f);
  EXPECT_EQ(RowAlignFeature(96, 2, 7), 6.f);
  EXPECT_EQ(RowAlignFeature(96, 2, 4), AlignFeature(96, 2));
  // A convolution: the implicit GEMM's programs, and its C and K rows.
  const KernelFamily& conv = Family("conv.mma");
  EXPECT_EQ(conv.FeatureNames(kWaveFeatures).back(), "log2_align128_k");
  std::vector<float> cf;
  ConfigShape s;
  s.tile_m = s.tile_n = 1 << 30;  // one program
  AppendWaveFeatures(Bf16Conv(64, 96), s, 132, &cf);
  EXPECT_EQ(cf, (std::vector<float>{1.f / 132.f, 7, 6}));
}

TEST(FamilyTest, WorkingSetCountsTheStorageType) {
  const KernelFamily& f = Family("gemm.mma");
  const Problem bf16(Gemm(64, 32, 128, Layout::kN, Layout::kN, DType::kBf16));
  const Problem tf32(Gemm(64, 32, 128, Layout::kN, Layout::kN, DType::kTf32));
  const Params p = f.DefaultCandidates().front();
  const int64_t elements = 64 * 128 + 128 * 32 + 64 * 32;
  EXPECT_EQ(WorkingSetBytes(bf16, f.Shape(bf16, p)), 2 * elements);
  EXPECT_EQ(WorkingSetBytes(tf32, f.Shape(tf32, p)), 4 * elements);
}

}  // namespace
}  // namespace blocktune
