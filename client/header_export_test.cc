// Exported headers, end to end: `blocktune export` against a real daemon
// holding the shipped H100 models (fp32, gemm.ffma and conv.ffma) and a
// small gemm.mma bf16 model trained here on synthetic rows, the headers
// compiled warning-free by g++ and clang++ (-Wall -Wextra -Werror) into a
// program that answers lookups, and its embedded models checked against
// the daemon's surrogates on 1,000 random (shape, configuration) pairs per
// (op, precision), and its gemm.mma fit rule against the search range.
#include <google/protobuf/util/json_util.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "client/header_export.h"
#include "client/header_export_cmd.h"
#include "models/train.h"
#include "models/search.h"
#include "proto/convert.h"
#include "proto/dataset_file.h"
#include "server/daemon_process.h"
#include "server/store_test_util.h"
#include "tuner/device_profile.h"
#include "tuner/sampler.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using namespace ::blocktune::testing;  // NOLINT

constexpr char kModels[] = "/models/pretrained/h100-sxm/models.json.gz";
// float32 through seven layers, summed in another order than OpenBLAS:
// the two agree to ~1e-6; a wrong feature or weight is off by far more.
constexpr double kTolerance = 1e-4;

using ShellRun = CommandResult;

ShellRun Shell(const std::string& command) { return RunCommand(command); }

// The program the exported headers are compiled into. stdin lines:
//   g M N K LAYOUT DTYPE [FAMILY P...]   lookup, and predict FAMILY P...
//   c N H W C K R S PH PW SH SW DH DW DTYPE [FAMILY P...]
//   F M N K ML NL MS NS U KG   (whether the gemm.ffma block fits: match 1 or 0)
//   M M N K LAYOUT DTYPE       (every model candidate of DTYPE: one line
//                               each, match 1 where it fits, else 0)
// Output, one line each: match, seconds, prediction, family, parameter
// count and parameters of the config. Upper-case G and C lines only
// predict (the config is left empty): each lookup of an unseen shape
// scores every candidate, ~20 ms on 2 CPU cores. fp32 lines go through the
// signatures of headers before precisions (gemm_config(m, n, k, layout),
// the BlockShape predictions).
constexpr char kDriver[] = R"(
#include "tuned_gemm.h"
#include "tuned_conv.h"
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
using namespace blocktune::tuned;
DType ParseDType(const std::string& d) {
  return d == "bf16" ? DType::kBf16 : d == "fp16" ? DType::kFp16
       : d == "tf32" ? DType::kTf32 : DType::kFp32;
}
Layout ParseLayout(const std::string& l) {
  return l == "NN" ? Layout::NN : l == "NT" ? Layout::NT : l == "TN" ? Layout::TN : Layout::TT;
}
void Print(const Config& c, double predicted) {
  std::printf("%d %.17g %.17g %s %d", static_cast<int>(c.match), c.seconds, predicted,
              c.family ? c.family : "none", c.param_count);
  for (int i = 0; i < c.param_count; ++i) std::printf(" %lld", static_cast<long long>(c.params[i]));
  std::printf("\n");
}
// FAMILY P... into `c`; false if the line has none.
bool ReadConfig(std::istream& in, const detail::Family* families, Config* c) {
  std::string family;
  if (!(in >> family)) return false;
  const int f = detail::FamilyIndex(families, family.c_str());
  if (f < 0) return false;
  c->family = families[f].name;
  c->param_count = families[f].param_count;
  c->param_names = families[f].param_names;
  for (int i = 0; i < c->param_count; ++i) {
    long long v = 0;
    in >> v;
    c->params[i] = v;
  }
  return true;
}
BlockShape Block(const Config& c) {
  return {int(c.params[0]), int(c.params[1]), int(c.params[2]), int(c.params[3]),
          int(c.params[4]), int(c.params[5]), int(c.params[6])};
}
int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string op, d, l;
    in >> op;
    Config c{};
    double predicted = 0;
    Config given{};
    if (op == "F") {  // whether a block shape fits a GEMM: the match field
      long long m, n, k;
      in >> m >> n >> k;
      detail::ConfigRow row{detail::FamilyIndex(detail::kGemmFamilies, "gemm.ffma"), {}, ~0ull};
      for (int i = 0; i < 6; ++i) {
        long long v;
        in >> v;
        row.params[i] = v;
      }
      const detail::GemmView view = detail::GemmProblem(m, n, k, Layout::NN, DType::kFp32);
      c.match = static_cast<Match>(detail::Fits(detail::kGemmFamilies[row.family], row,
                                                view, detail::GemmOperandBytes(view)));
      Print(c, 0);
    } else if (op == "M") {
      long long m, n, k;
      in >> m >> n >> k >> l >> d;
      const detail::GemmView view = detail::GemmProblem(m, n, k, ParseLayout(l), ParseDType(d));
      for (const detail::Candidate* x = detail::kGemmCandidates; x->config.family >= 0; ++x) {
        if (x->dtype != view.dtype) continue;
        const bool fits = detail::Fits(detail::kGemmFamilies[x->config.family], x->config,
                                       view, detail::GemmOperandBytes(view));
        Print(detail::MakeConfig(detail::kGemmFamilies, x->config,
                                 static_cast<Match>(fits ? 1 : 0), 0, 0), 0);
      }
    } else if (op == "g" || op == "G") {
      long long m, n, k;
      in >> m >> n >> k >> l >> d;
      const Layout layout = ParseLayout(l);
      const DType dtype = ParseDType(d);
      if (op == "g") c = dtype == DType::kFp32 ? gemm_config(m, n, k, layout)
                                             : gemm_config(m, n, k, layout, dtype);
      if (ReadConfig(in, detail::kGemmFamilies, &given)) {
#ifdef WITH_MODEL
        predicted = dtype == DType::kFp32 ? gemm_predict_seconds(m, n, k, layout, Block(given))
                                          : gemm_predict_seconds(m, n, k, layout, dtype, given);
#endif
      }
      Print(c, predicted);
    } else {
      ConvShape s;
      in >> s.n >> s.h >> s.w >> s.c >> s.k >> s.r >> s.s >> s.pad_h >> s.pad_w >>
          s.stride_h >> s.stride_w >> s.dilation_h >> s.dilation_w >> d;
      const DType dtype = ParseDType(d);
      if (op == "c") c = dtype == DType::kFp32 ? conv_config(s) : conv_config(s, dtype);
      if (ReadConfig(in, detail::kConvFamilies, &given)) {
#ifdef WITH_MODEL
        predicted = dtype == DType::kFp32 ? conv_predict_seconds(s, Block(given))
                                          : conv_predict_seconds(s, dtype, given);
#endif
      }
      Print(c, predicted);
    }
  }
}
)";

std::string Line(const Context& ctx) {
  std::ostringstream out;
  if (const auto* g = std::get_if<GemmContext>(&ctx)) {
    out << "g " << g->m << " " << g->n << " " << g->k << " "
        << (g->layout_a == Layout::kT ? "T" : "N") << (g->layout_b == Layout::kT ? "T" : "N");
  } else {
    const auto& c = std::get<ConvContext>(ctx);
    out << "c " << c.n << " " << c.h << " " << c.w << " " << c.c << " " << c.k << " "
        << c.r << " " << c.s << " " << c.pad_h << " " << c.pad_w << " " << c.stride_h
        << " " << c.stride_w << " " << c.dilation_h << " " << c.dilation_w;
  }
  out << " " << ToString(DTypeOf(ctx));
  return out.str();
}

std::string Line(const Context& ctx, std::string_view family, const Params& p) {
  std::string out = Line(ctx) + " " + std::string(family);
  for (int i = 0; i < p.size; ++i) out += " " + std::to_string(p[i]);
  return out;
}

struct Output {
  int match = -1;  // 0 exact, 1 predicted, 2 nearest, 3 default
  double seconds = 0, predicted = 0;
  std::string family;
  Params params;
  BlockShape block() const { return ToBlockShape(params); }
};

std::vector<Output> ParseOutput(const std::string& text) {
  std::vector<Output> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    Output o;
    if (!(l >> o.match >> o.seconds >> o.predicted >> o.family >> o.params.size)) break;
    for (int i = 0; i < o.params.size; ++i) l >> o.params[i];
    out.push_back(o);
  }
  return out;
}

Context RandomGemm(std::mt19937_64& rng, DType dtype = DType::kFp32) {
  std::uniform_real_distribution<double> lg(4, 14);
  GemmContext g;
  g.m = std::llround(std::exp2(lg(rng)));
  g.n = std::llround(std::exp2(lg(rng)));
  g.k = std::llround(std::exp2(lg(rng)));
  g.layout_a = rng() % 2 ? Layout::kT : Layout::kN;
  g.layout_b = rng() % 2 ? Layout::kT : Layout::kN;
  g.dtype = dtype;
  return g;
}

Context RandomConv(std::mt19937_64& rng) {
  while (true) {
    ConvContext c;
    c.n = 1 + rng() % 32;
    c.h = c.w = 7 + rng() % 100;
    c.c = 8 << (rng() % 7);
    c.k = 8 << (rng() % 7);
    c.r = c.s = 1 + 2 * (rng() % 3);
    c.pad_h = c.pad_w = rng() % (c.r / 2 + 1);
    c.stride_h = c.stride_w = 1 + rng() % 2;
    c.dilation_h = c.dilation_w = 1 + (rng() % 4 == 0);
    c.dtype = DType::kFp32;
    if (Validate(c).ok()) return c;
  }
}

// Synthetic gemm.mma bf16 timings: smooth in every parameter and the
// shape, so that a small network learns something to predict.
std::vector<TrainingRow> MmaRows(int count, std::mt19937_64& rng) {
  const KernelFamily& family = **FindFamily("gemm.mma");
  auto pick = [&](std::initializer_list<int64_t> v) {
    return *(v.begin() + rng() % v.size());
  };
  std::vector<TrainingRow> rows;
  while (static_cast<int>(rows.size()) < count) {
    Params p = family.DefaultCandidates().front();
    p[family.ParamIndex("bm")] = pick({32, 64, 128});
    p[family.ParamIndex("bn")] = pick({32, 64, 128});
    p[family.ParamIndex("bk")] = pick({32, 64});
    p[family.ParamIndex("wm")] = pick({1, 2});
    p[family.ParamIndex("wn")] = pick({1, 2});
    p[family.ParamIndex("st")] = pick({3, 4});
    p[family.ParamIndex("kg")] = pick({1, 2, 4});
    p[family.ParamIndex("sk")] = pick({0, 1});
    if (!family.ValidateParams(p).ok()) continue;
    GemmContext g = std::get<GemmContext>(RandomGemm(rng, DType::kBf16));
    const double tiles = double((g.m + p[0] - 1) / p[0]) * double((g.n + p[1] - 1) / p[1]);
    const double fill = std::min(1.0, tiles * double(p[6]) / 132.0);
    const double rate = 4e13 * fill * std::sqrt(double(p[0] * p[1]) / 16384.0) *
                        (0.8 + 0.05 * double(p[5])) / (1 + 0.05 * double(p[6]));
    rows.push_back({g, p, 2.0 * double(g.m) * double(g.n) * double(g.k) / rate});
  }
  return rows;
}

class HeaderExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = StartDaemonIn<DaemonProcess>(BLOCKTUNED, dir_.path());
    ASSERT_TRUE(daemon_->ok()) << daemon_->Log();
    server_ = " --server unix:" + dir_.path() + "/s.sock";
    ShellRun imported = Shell(std::string(BLOCKTUNE_CLI) + " import " +
                         BLOCKTUNE_SOURCE_DIR + kModels + server_);
    ASSERT_EQ(imported.code, 0) << imported.out;
  }

  // Compiles kDriver against the headers in dir_ with `compiler`.
  std::string Compile(const std::string& compiler, bool with_model) {
    const std::string exe = dir_.path() + "/driver-" + compiler.substr(compiler.rfind('/') + 1) +
                            (with_model ? "-model" : "");
    std::ofstream(dir_.path() + "/driver.cc") << kDriver;
    ShellRun r = Shell(compiler + " -std=c++17 -O2 -Wall -Wextra -Werror" +
                  (with_model ? " -DWITH_MODEL" : "") + " -I" + dir_.path() + " " +
                  dir_.path() + "/driver.cc -o " + exe);
    EXPECT_EQ(r.code, 0) << compiler << ":\n" << r.out.substr(0, 4000);
    return r.code == 0 ? exe : "";
  }

  std::vector<Output> RunDriver(const std::string& exe, const std::vector<std::string>& lines) {
    std::ofstream in(dir_.path() + "/in.txt");
    for (const std::string& l : lines) in << l << "\n";
    in.close();
    ShellRun r = Shell(exe + " < " + dir_.path() + "/in.txt");
    EXPECT_EQ(r.code, 0) << r.out.substr(0, 2000);
    return ParseOutput(r.out);
  }

  std::vector<v1::QueryResponse> Ask(const std::vector<Context>& contexts, int top = 1) {
    v1::BatchQueryRequest req;
    for (const Context& c : contexts) {
      v1::QueryRequest* q = req.add_queries();
      ToProto(c, q->mutable_context());
      q->set_fallback(true);
      q->set_top(top);
    }
    v1::BatchQueryResponse resp;
    grpc::ClientContext ctx;
    auto s = daemon_->NewStub()->BatchQuery(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<v1::QueryResponse> out;
    for (const auto& r : resp.results()) {
      EXPECT_EQ(r.code(), 0) << r.message();
      out.push_back(r.response());
    }
    return out;
  }

  // Trains a small gemm.mma bf16 model on synthetic rows and imports it
  // into the daemon as a model of `device`; returns it as imported. Its
  // features are the newest set's (the waves' on the device's SMs, the
  // rows' alignment and the tiling's), which the header computes too.
  v1::Model ImportMmaModel(const v1::DeviceFingerprint& device) {
    const KernelFamily& family = **FindFamily("gemm.mma");
    std::mt19937_64 rng(5);
    TrainOptions options;
    options.wave_sms = device.sm_count();
    options.hidden = {24, 24};
    options.epochs = 40;
    options.patience = 40;
    options.batch_size = 64;
    options.use_cuda = false;
    auto trained = Train(family, DType::kBf16, MmaRows(600, rng), options);
    EXPECT_TRUE(trained.ok()) << trained.status().ToString();
    if (!trained.ok()) return {};
    EXPECT_EQ(trained->surrogate.feature_set(), kWaveFeatures);
    EXPECT_EQ(trained->surrogate.wave_sms(), device.sm_count());
    v1::Dataset dataset;
    dataset.set_format("blocktune.dataset.v1");
    v1::Model* m = dataset.add_models();
    *m->mutable_device() = device;
    m->set_op(v1::OP_GEMM);
    m->set_dtype(v1::DTYPE_BF16);
    m->set_family(std::string(family.name()));
    m->set_generator_version(family.version());
    m->set_data_version(family.version());
    m->set_architecture(ArchitectureString(options.hidden));
    m->set_weights(trained->surrogate.SerializeWeights());
    m->set_normalization(trained->surrogate.SerializeNormalization());
    m->set_training_samples(trained->training_samples);
    m->set_training_set("synthetic gemm.mma bf16 rows (header_export_test)");
    m->set_created_unix(1795000000);
    std::string json;
    EXPECT_TRUE(google::protobuf::util::MessageToJsonString(dataset, &json).ok());
    std::ofstream(dir_.path() + "/mma.json") << json;
    ShellRun r = Shell(std::string(BLOCKTUNE_CLI) + " import " + dir_.path() +
                       "/mma.json" + server_);
    EXPECT_EQ(r.code, 0) << r.out;
    return *m;
  }

  TempDir dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::string server_;
};

TEST_F(HeaderExportTest, HeadersCompileCleanAndMatchTheDaemon) {
  std::mt19937_64 rng(7);
  auto dataset = ReadDatasetFile(std::string(BLOCKTUNE_SOURCE_DIR) + kModels);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  ASSERT_FALSE(dataset->models().empty());
  const v1::Model mma_model = ImportMmaModel(dataset->models(0).device());
  ASSERT_FALSE(mma_model.weights().empty());

  // The exported shapes: answered by the daemon's search. The bf16 ones
  // with their top 8, as the export asks (its candidates).
  std::vector<Context> gemms, convs, bf16s;
  for (int i = 0; i < 16; ++i) gemms.push_back(RandomGemm(rng));
  for (int i = 0; i < 8; ++i) convs.push_back(RandomConv(rng));
  for (int i = 0; i < 8; ++i) bf16s.push_back(RandomGemm(rng, DType::kBf16));
  const auto gemm_answers = Ask(gemms);
  const auto conv_answers = Ask(convs);
  const auto bf16_answers = Ask(bf16s, 8);
  ASSERT_EQ(gemm_answers.size(), gemms.size());
  ASSERT_EQ(conv_answers.size(), convs.size());
  ASSERT_EQ(bf16_answers.size(), bf16s.size());
  for (const auto& a : bf16_answers) {
    ASSERT_FALSE(a.answers().empty());
    EXPECT_EQ(a.answers(0).kernel().family(), "gemm.mma");
  }
  {
    std::ofstream shapes(dir_.path() + "/gemm.txt");
    shapes << "# exported shapes\n";
    for (const Context& c : gemms) shapes << ToString(c) << "\n";
    for (const Context& c : bf16s) shapes << ToString(c) << "\n";
    std::ofstream conv(dir_.path() + "/conv.txt");
    for (const Context& c : convs) conv << ToString(c) << "\n";
  }
  for (const char* op : {"gemm", "conv"}) {
    ShellRun r = Shell(std::string(BLOCKTUNE_CLI) + " export --op " + op + " --shapes " +
                  dir_.path() + "/" + op + ".txt --with-model -o " + dir_.path() +
                  "/tuned_" + op + ".h" + server_);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_THAT(r.out, HasSubstr("model "));
  }
  std::ifstream header(dir_.path() + "/tuned_gemm.h");
  std::string text((std::istreambuf_iterator<char>(header)), {});
  EXPECT_THAT(text, HasSubstr("// device:  NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)"));
  EXPECT_THAT(text, HasSubstr("// model:   1 (hidden layers 128,128,128"));
  EXPECT_THAT(text, HasSubstr("gemm.mma bf16)"));
  EXPECT_THAT(text, HasSubstr("configurations (fp32, bf16)"));
  EXPECT_THAT(text, HasSubstr("// date:    20"));
  EXPECT_THAT(text, HasSubstr("// ptxas:   "));

  // The daemon's own surrogates, for the 1,000-pair comparisons.
  auto profile = ProfileByName("h100");
  ASSERT_TRUE(profile.ok());
  std::map<std::pair<Op, DType>, std::unique_ptr<BlockSearch>> search;
  for (const v1::Model& m : dataset->models()) {
    auto op = FromProto(m.op(), "op");
    ASSERT_TRUE(op.ok());
    auto model = Surrogate::Load(*op, m.architecture(), m.weights(), m.normalization());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    search[{*op, DType::kFp32}] = std::make_unique<BlockSearch>(*model, *profile);
  }
  {
    auto model = Surrogate::Load(**FindFamily("gemm.mma"), DType::kBf16,
                                 mma_model.architecture(), mma_model.weights(),
                                 mma_model.normalization());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    search[{Op::kGemm, DType::kBf16}] = std::make_unique<BlockSearch>(*model, *profile);
  }
  ASSERT_EQ(search.size(), 3u);

  std::vector<std::string> lines;
  std::vector<double> expected;
  for (auto [op, dtype] : {std::pair{Op::kGemm, DType::kFp32}, std::pair{Op::kConv, DType::kFp32},
                           std::pair{Op::kGemm, DType::kBf16}}) {
    const BlockSearch& s = *search[{op, dtype}];
    // 1,000 pairs: 100 random shapes, 10 random candidates of each (a
    // shape's search range is what costs; it is enumerated once).
    for (int i = 0; i < 1000;) {
      const Context ctx = op == Op::kGemm ? RandomGemm(rng, dtype) : RandomConv(rng);
      const std::vector<Params> range = s.Candidates(ctx);
      if (range.empty()) continue;
      for (int j = 0; j < 10; ++j, ++i) {
        const Params& params = range[rng() % range.size()];
        std::string line = Line(ctx, s.family().name(), params);
        if (i >= 50) line[0] = static_cast<char>(std::toupper(line[0]));  // predict only
        lines.push_back(line);
        // The time a query reports for it: the ranking time (an ensemble's
        // mean charged its members' spread; ScoredConfig::ranked_s).
        std::vector<double> ranked;
        s.PredictSeconds(ctx, {params}, &ranked);
        expected.push_back(ranked[0]);
      }
    }
  }
  // The exported shapes, with the daemon's answers.
  const size_t exported_from = lines.size();
  std::vector<const v1::TunedAnswer*> exported;
  auto add_exported = [&](const std::vector<Context>& contexts,
                          const std::vector<v1::QueryResponse>& answers) {
    for (size_t i = 0; i < contexts.size(); ++i) {
      const v1::TunedAnswer& a = answers[i].answers(0);
      const KernelFamily& family = **FindFamily(a.kernel().family());
      Params p;
      p.size = static_cast<int>(family.params().size());
      for (const v1::ConfigParam& c : a.kernel().params()) p[family.ParamIndex(c.name())] = c.value();
      lines.push_back(Line(contexts[i], family.name(), p));
      exported.push_back(&a);
    }
  };
  add_exported(gemms, gemm_answers);
  add_exported(convs, conv_answers);
  add_exported(bf16s, bf16_answers);

  // gemm.mma's fit rule: for random bf16 shapes (every layout, odd sizes:
  // each copy width), each candidate fits exactly when the daemon's search
  // range for the shape holds it.
  std::vector<std::string> fit_lines;
  std::vector<Context> fit_contexts;
  std::uniform_real_distribution<double> lg(0, 17);
  while (fit_lines.size() < 400) {
    GemmContext g = std::get<GemmContext>(RandomGemm(rng, DType::kBf16));
    g.m = std::llround(std::exp2(lg(rng)));
    g.n = std::llround(std::exp2(lg(rng)));
    g.k = std::llround(std::exp2(lg(rng) * 0.8));
    if (!Validate(g).ok()) continue;
    fit_contexts.push_back(g);
    fit_lines.push_back("M" + Line(g).substr(1));
  }

  // Each shape's search range, for the fit rule's check.
  const BlockSearch& bf16 = *search[{Op::kGemm, DType::kBf16}];
  std::vector<std::set<Params>> fit_ranges;
  for (const Context& ctx : fit_contexts) {
    const std::vector<Params> range = bf16.Candidates(ctx);
    fit_ranges.emplace_back(range.begin(), range.end());
  }

  for (const char* compiler : {"g++", "clang++"}) {
    if (Shell(std::string("command -v ") + compiler).code != 0) {
      ADD_FAILURE() << compiler << " is not installed (scripts/setup.sh installs it)";
      continue;
    }
    SCOPED_TRACE(compiler);
    const std::string exe = Compile(compiler, /*with_model=*/true);
    ASSERT_FALSE(exe.empty());
    const std::vector<Output> out = RunDriver(exe, lines);
    ASSERT_EQ(out.size(), lines.size());
    double worst[3] = {0, 0, 0};
    for (size_t i = 0; i < exported_from; ++i) {
      const double rel = std::abs(out[i].predicted - expected[i]) / expected[i];
      worst[i / 1000] = std::max(worst[i / 1000], rel);
      EXPECT_LE(rel, kTolerance) << lines[i] << ": header " << out[i].predicted
                                 << " s, daemon " << expected[i] << " s";
      // Unseen fp32 shapes: the model's choice among the candidates.
      if (i < 2000 && std::islower(lines[i][0])) {
        EXPECT_EQ(out[i].match, 1) << lines[i];
      }
    }
    std::printf("%s: 1,000 random (shape, configuration) pairs each of gemm.ffma fp32, "
                "conv.ffma fp32, gemm.mma bf16; worst relative differences to the "
                "daemon's surrogates %.3g, %.3g, %.3g\n",
                compiler, worst[0], worst[1], worst[2]);
    for (size_t i = exported_from; i < lines.size(); ++i) {
      const v1::TunedAnswer& a = *exported[i - exported_from];
      EXPECT_EQ(out[i].match, 0) << lines[i];  // exact
      EXPECT_EQ(out[i].family, a.kernel().family()) << lines[i];
      const KernelFamily& family = **FindFamily(a.kernel().family());
      ASSERT_EQ(out[i].params.size, static_cast<int>(family.params().size())) << lines[i];
      for (const v1::ConfigParam& c : a.kernel().params())
        EXPECT_EQ(out[i].params[family.ParamIndex(c.name())], c.value()) << lines[i];
      EXPECT_NEAR(out[i].seconds, a.predicted_seconds(), 1e-5 * a.predicted_seconds());
      EXPECT_LE(std::abs(out[i].predicted - a.predicted_seconds()),
                kTolerance * a.predicted_seconds())
          << lines[i];
    }

    // The bf16 lookups of unseen shapes: the candidate the C++ surrogate
    // predicts fastest among those in the search range.
    const std::vector<Output> fits = RunDriver(exe, fit_lines);
    const size_t per = fits.size() / fit_lines.size();
    ASSERT_GT(per, 0u);
    ASSERT_EQ(fits.size(), per * fit_lines.size());
    int fitting = 0;
    for (size_t c = 0; c < fit_contexts.size(); ++c) {
      const std::set<Params>& range = fit_ranges[c];
      for (size_t j = c * per; j < (c + 1) * per; ++j) {
        EXPECT_EQ(fits[j].match == 1, range.count(fits[j].params) > 0)
            << fit_lines[c] << ": " << bf16.family().Format(fits[j].params);
        fitting += fits[j].match == 1;
      }
    }
    std::printf("%s: the header's gemm.mma fit rule agrees with the search range on "
                "%zu (shape, candidate) pairs (%d fit)\n", compiler, fits.size(), fitting);
    // Shapes blocktuned would refuse get no configuration (m = 0 and -1
    // got a default one; m = 2^63 - 1 overflowed in CeilDiv).
    const std::vector<std::string> refused = {
        "g 0 16 16 NN fp32", "g -1 16 16 NT bf16", "g 9223372036854775807 16 16 NT bf16",
        "g 16 16 2147483648 NN tf32", "c 1 7 7 8 8 9 9 0 0 1 1 1 1 fp32",
        "c 0 7 7 8 8 3 3 1 1 1 1 1 1 bf16", "c 1 7 7 8 8 3 3 -1 1 1 1 1 1 bf16"};
    const std::vector<Output> none = RunDriver(exe, refused);
    ASSERT_EQ(none.size(), refused.size());
    for (size_t i = 0; i < refused.size(); ++i)
      EXPECT_EQ(none[i].family, "none") << refused[i];
    EXPECT_GT(fitting, static_cast<int>(fits.size() / 10));  // both outcomes occur
    EXPECT_LT(fitting, static_cast<int>(fits.size() * 9 / 10));
    std::vector<std::string> lookups;
    for (size_t c = 0; c < 40; ++c) lookups.push_back(Line(fit_contexts[c]));
    const std::vector<Output> chosen = RunDriver(exe, lookups);
    ASSERT_EQ(chosen.size(), lookups.size());
    for (size_t c = 0; c < lookups.size(); ++c) {
      std::vector<Params> fitting_candidates;
      for (size_t j = c * per; j < (c + 1) * per; ++j)
        if (fits[j].match == 1) fitting_candidates.push_back(fits[j].params);
      if (fitting_candidates.empty()) {
        EXPECT_GE(chosen[c].match, 2) << lookups[c];
        continue;
      }
      // Ranked as the daemon ranks, with that time (ScoredConfig::ranked_s,
      // a query answer's predicted time).
      std::vector<double> ranked;
      const std::vector<double> s =
          bf16.PredictSeconds(fit_contexts[c], fitting_candidates, &ranked);
      const size_t at = std::min_element(ranked.begin(), ranked.end()) - ranked.begin();
      EXPECT_EQ(chosen[c].match, 1) << lookups[c];
      EXPECT_EQ(chosen[c].family, "gemm.mma") << lookups[c];
      EXPECT_LE(std::abs(chosen[c].seconds - ranked[at]), kTolerance * ranked[at])
          << lookups[c];
      EXPECT_GE(ranked[at], s[at] * (1 - kTolerance)) << lookups[c];
    }
  }
}

// Shapes whose best answer is of a family a header cannot launch (the
// H200's fp32 gemm.ffma_k) get the best answer of those it can: they were
// left out, and a file of them alone exported nothing (exit 4). The
// family queries this takes leave the shapes' own answers as they were.
TEST_F(HeaderExportTest, ShapesOfFamiliesItCannotLaunchGetTheBestItCan) {
  const std::string cli = std::string(BLOCKTUNE_CLI);
  ShellRun r = Shell(cli + " import " + BLOCKTUNE_SOURCE_DIR +
                     "/models/pretrained/h200/models-gemm-fp32.json.gz" + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ofstream(dir_.path() + "/s.txt") << "gemm m=4096 n=16 k=4096 layout=NT\n"
                                           "gemm m=4100 n=16 k=4096 layout=NT\n";
  const std::string header = dir_.path() + "/h.h";
  r = Shell(cli + " export --op gemm --dtype fp32 --device 'NVIDIA H200' --shapes " +
            dir_.path() + "/s.txt -o " + header + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("2 of 2 shapes are answered fastest by families the header "
                               "cannot launch (gemm.ffma_k 2); the header has the best "
                               "answer of those it can, "));
  EXPECT_THAT(r.out, HasSubstr(": 2 gemm answers"));
  EXPECT_THAT(r.out, HasSubstr("left out (the header cannot launch them): gemm.ffma_k"));
  std::ifstream in(header);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("{4096, 16, 4096, Layout::NT, DType::kFp32, {0, {"));
  EXPECT_THAT(text, HasSubstr("{4100, 16, 4096, Layout::NT, DType::kFp32, {0, {"));
  r = Shell(cli + " query gemm --m 4100 --n 16 --k 4096 --layout NT --device 'NVIDIA H200'" +
            server_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("gemm.ffma_k"));
}

TEST_F(HeaderExportTest, WithoutAModelUnseenShapesGetTheNearestAnswer) {
  std::mt19937_64 rng(11);
  std::vector<Context> gemms;
  for (int i = 0; i < 6; ++i) gemms.push_back(RandomGemm(rng));
  const auto answers = Ask(gemms);  // stores them
  // Two imported bf16 answers of gemm.mma: --all-tuned exports every
  // precision.
  const KernelFamily& mma = **FindFamily("gemm.mma");
  const Params mma_params = mma.DefaultCandidates()[1];
  std::vector<GemmContext> bf16s(2);
  {
    auto shipped = ReadDatasetFile(std::string(BLOCKTUNE_SOURCE_DIR) + kModels);
    ASSERT_TRUE(shipped.ok()) << shipped.status().ToString();
    v1::Dataset dataset;
    dataset.set_format("blocktune.dataset.v1");
    bf16s[0].m = 4096;
    bf16s[0].n = 1024;
    bf16s[0].k = 2048;
    bf16s[1].m = 512;
    bf16s[1].n = 512;
    bf16s[1].k = 512;
    bf16s[1].layout_b = Layout::kT;
    for (GemmContext& g : bf16s) {
      g.dtype = DType::kBf16;
      v1::TunedAnswer* a = dataset.add_tuned();
      ToProto(Context(g), a->mutable_context());
      a->mutable_kernel()->set_family(std::string(mma.name()));
      a->mutable_kernel()->set_generator_version(mma.version());
      for (int i = 0; i < mma_params.size; ++i) {
        v1::ConfigParam* p = a->mutable_kernel()->add_params();
        p->set_name(mma.params()[i].name);
        p->set_value(mma_params[i]);
      }
      *a->mutable_device() = shipped->models(0).device();
      a->set_measured_seconds(1e-4);
      a->set_source(v1::SOURCE_IMPORTED);
    }
    std::string json;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(dataset, &json).ok());
    std::ofstream(dir_.path() + "/bf16.json") << json;
    ShellRun r = Shell(std::string(BLOCKTUNE_CLI) + " import " + dir_.path() + "/bf16.json" +
                       server_);
    ASSERT_EQ(r.code, 0) << r.out;
  }
  ShellRun r = Shell(std::string(BLOCKTUNE_CLI) + " export --op gemm --all-tuned -o " +
                dir_.path() + "/tuned_gemm.h" + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("8 gemm answers"));
  std::ofstream(dir_.path() + "/c.txt") << "conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1\n";
  r = Shell(std::string(BLOCKTUNE_CLI) + " export --op conv --shapes " + dir_.path() +
            "/c.txt -o " + dir_.path() + "/tuned_conv.h" + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* compiler : {"g++", "clang++"}) {
    SCOPED_TRACE(compiler);
    const std::string exe = Compile(compiler, /*with_model=*/false);
    ASSERT_FALSE(exe.empty());
    std::vector<std::string> lines;
    for (const Context& c : gemms) lines.push_back(Line(c));
    GemmContext near = std::get<GemmContext>(gemms[0]);
    near.m += 1;  // one row more: nearest is gemms[0] (or an equally fitting one)
    lines.push_back(Line(near));
    lines.push_back("g 1 1 1 NN fp32");
    // bf16: the imported answers, exactly and nearest.
    for (const GemmContext& g : bf16s) lines.push_back(Line(g));
    GemmContext near_bf16 = bf16s[0];
    near_bf16.m += 1;
    lines.push_back(Line(near_bf16));
    // No fp16 answer or model: the default family's default, by name.
    lines.push_back("g 4096 4096 4096 NT fp16");
    lines.push_back("g 16 8 16 NN fp16");
    const std::vector<Output> out = RunDriver(exe, lines);
    ASSERT_EQ(out.size(), lines.size());
    for (size_t i = 0; i < gemms.size(); ++i) {
      EXPECT_EQ(out[i].match, 0) << lines[i];
      EXPECT_EQ(out[i].family, "gemm.ffma") << lines[i];
      EXPECT_EQ(out[i].block().nl, answers[i].answers(0).block_shape().nl());
    }
    EXPECT_EQ(out[gemms.size()].match, 2) << lines[gemms.size()];
    EXPECT_GE(out[gemms.size() + 1].match, 2);  // nearest that fits, or default
    for (size_t i = gemms.size() + 2; i < gemms.size() + 5; ++i) {
      EXPECT_EQ(out[i].match, i < gemms.size() + 4 ? 0 : 2) << lines[i];
      EXPECT_EQ(out[i].family, "gemm.mma") << lines[i];
      EXPECT_EQ(mma.Format(out[i].params), mma.Format(mma_params)) << lines[i];
    }
    GemmContext big;
    big.m = big.n = big.k = 4096;
    big.layout_b = Layout::kT;
    big.dtype = DType::kFp16;
    GemmContext tiny;
    tiny.m = 16;
    tiny.n = 8;
    tiny.k = 16;
    tiny.dtype = DType::kFp16;
    auto h100 = ProfileByName("h100");
    ASSERT_TRUE(h100.ok());
    for (auto [i, g] : {std::pair{out.size() - 2, big}, std::pair{out.size() - 1, tiny}}) {
      EXPECT_EQ(out[i].match, 3) << lines[i];
      EXPECT_EQ(out[i].family, "gemm.mma") << lines[i];
      auto expected = mma.Default(Problem(g), h100->Limits());
      ASSERT_TRUE(expected.ok()) << expected.status().ToString();
      EXPECT_EQ(mma.Format(out[i].params), mma.Format(*expected)) << lines[i];
    }
  }
  // The header's fit rule is the daemon's search rules beyond the
  // context-free ones: SplitHasWork, the grid, and WorkingSetBytes within
  // 1 GiB or the operands alone.
  {
    const KernelFamily& family = BlockShapeFamily(Op::kGemm);
    int grid_rule = -1;
    for (size_t r = 0; r < family.rules().size(); ++r)
      if (family.rules()[r] == "grid") grid_rule = static_cast<int>(r);
    ASSERT_GE(grid_rule, 0);
    std::vector<std::string> lines;
    std::vector<bool> expected;
    std::uniform_real_distribution<double> lg(0, 26);
    while (lines.size() < 3000) {
      GemmContext g;
      g.m = std::llround(std::exp2(lg(rng)));
      g.n = std::llround(std::exp2(lg(rng)));
      g.k = std::llround(std::exp2(lg(rng)));
      if (!Validate(g).ok()) continue;
      const BlockShape xb{int64_t{1} << (rng() % 11), int64_t{1} << (rng() % 11),
                          int64_t{1} << (rng() % 6),  int64_t{1} << (rng() % 6),
                          int64_t{1} << (rng() % 8),  int64_t{1} << (rng() % 13)};
      if (!Validate(xb).ok()) continue;
      const Problem problem(g);
      const ConfigShape shape = family.Shape(problem, ToParams(xb));
      const int64_t limit =
          std::max(kDefaultMaxBytes, WorkingSetBytes(problem, ConfigShape{}));
      expected.push_back(SplitHasWork(problem, shape) &&
                         family.Passes(grid_rule, problem, ToParams(xb), {}) &&
                         WorkingSetBytes(problem, shape) <= limit);
      lines.push_back("F " + std::to_string(g.m) + " " + std::to_string(g.n) + " " +
                      std::to_string(g.k) + " " + std::to_string(xb.ml) + " " +
                      std::to_string(xb.nl) + " " + std::to_string(xb.ms) + " " +
                      std::to_string(xb.ns) + " " + std::to_string(xb.u) + " " +
                      std::to_string(xb.kg));
    }
    const std::vector<Output> out =
        RunDriver(Compile("g++", /*with_model=*/false), lines);
    ASSERT_EQ(out.size(), lines.size());
    int fits = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(out[i].match == 1, expected[i]) << lines[i];
      fits += expected[i];
    }
    std::printf("the header's fit rule agrees with the daemon's on %zu block "
                "shapes (%d fit)\n", lines.size(), fits);
    EXPECT_GT(fits, 150);  // both outcomes occur
    EXPECT_LT(fits, 2850);
  }

  // Bad input names the flag or the line.
  std::ofstream(dir_.path() + "/bad.txt") << "gemm m=0 n=1 k=1\n";
  r = Shell(std::string(BLOCKTUNE_CLI) + " export --op gemm --shapes " + dir_.path() +
            "/bad.txt -o " + dir_.path() + "/x.h" + server_);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("bad.txt:1:"));
  r = Shell(std::string(BLOCKTUNE_CLI) + " export --op gemm -o " + dir_.path() + "/x.h" +
            server_);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("exactly one of --shapes FILE and --all-tuned"));
}

// --dtype and the shapes file: a line without dtype= is read once per
// precision asked; one that names a precision must name one asked.
TEST(HeaderExportShapesTest, PrecisionsOfTheShapesFile) {
  auto list = ParseDTypeList("fp32, bf16,fp32");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(*list, (std::vector<DType>{DType::kFp32, DType::kBf16}));
  EXPECT_TRUE(ParseDTypeList("").value().empty());
  auto bad = ParseDTypeList("fp32,fp8");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("--dtype"));

  TempDir dir;
  const std::string path = dir.path() + "/shapes.txt";
  std::ofstream(path) << "# shapes\ngemm m=64 n=128 k=256\n"
                         "gemm m=32 n=32 k=32 layout=NT dtype=bf16\n";
  auto fp32_only = ReadShapesFile(path, Op::kGemm);
  ASSERT_TRUE(fp32_only.ok()) << fp32_only.status().ToString();
  ASSERT_EQ(fp32_only->size(), 2u);
  EXPECT_EQ(DTypeOf((*fp32_only)[0]), DType::kFp32);
  EXPECT_EQ(DTypeOf((*fp32_only)[1]), DType::kBf16);
  auto both = ReadShapesFile(path, Op::kGemm, {DType::kFp32, DType::kBf16});
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  ASSERT_EQ(both->size(), 3u);
  EXPECT_EQ(DTypeOf((*both)[0]), DType::kFp32);
  EXPECT_EQ(DTypeOf((*both)[1]), DType::kBf16);
  EXPECT_EQ(std::get<GemmContext>((*both)[1]).m, 64);
  auto other = ReadShapesFile(path, Op::kGemm, {DType::kFp16});
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(std::string(other.status().message()),
              HasSubstr("shapes.txt:3: dtype bf16 is not among --dtype fp16"));
}

// A bf16 store on an H100 holds gemm.wgmma answers too; the header cannot
// check that family's rules or launch it (tensor maps, sm_90a), so its
// answers, candidates and models are left out with a note, and the rest
// is exported as before.
TEST(HeaderExportFamiliesTest, WgmmaAnswersAreLeftOutWithANote) {
  auto mma = FindFamily("gemm.mma");
  auto wgmma = FindFamily("gemm.wgmma");
  ASSERT_TRUE(mma.ok() && wgmma.ok());
  auto gemm = [](int64_t m) {
    GemmContext g;
    g.m = m;
    g.n = g.k = 1024;
    g.layout_b = Layout::kT;
    g.dtype = DType::kBf16;
    return Context(g);
  };
  HeaderSpec spec;
  spec.device.set_name("NVIDIA H100 80GB HBM3");
  spec.device.set_cc_major(9);
  spec.device.set_cc_minor(0);
  spec.device.set_sm_count(132);
  spec.generated_utc = "2026-11-23T00:00:00Z";
  HeaderEntry a;
  a.context = gemm(2048);
  a.config = {"gemm.mma", (*mma)->version(), (*mma)->DefaultCandidates()[0]};
  a.seconds = 1e-4;
  a.source = "measured";
  HeaderEntry b;
  b.context = gemm(4096);
  b.config = {"gemm.wgmma", (*wgmma)->version(),
              (*wgmma)->DefaultCandidates()[0]};
  b.seconds = 1e-4;
  b.source = "measured";
  spec.entries = {a, b};
  spec.candidates = {{DType::kBf16, b.config}};
  auto header = WriteTunedHeader(spec);
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_THAT(*header, HasSubstr("// left out: gemm.wgmma (1 answers, 1 "
                                 "candidates, 0 models)"));
  EXPECT_THAT(*header, HasSubstr("{2048, 1024, 1024, Layout::NT"));
  EXPECT_THAT(*header, ::testing::Not(HasSubstr("{4096, 1024, 1024")));
  // What the CLI's summary counts: the header's, not what was asked.
  std::string note;
  std::vector<std::string> left_out;
  const HeaderSpec kept = LeaveOutInexpressible(spec, &note, &left_out);
  EXPECT_EQ(kept.entries.size(), 1u);
  EXPECT_EQ(kept.candidates.size(), 0u);
  EXPECT_EQ(left_out, std::vector<std::string>{"gemm.wgmma"});
  EXPECT_THAT(*header, HasSubstr(note));
  // Nothing left to export: refused, saying why.
  spec.entries = {b};
  header = WriteTunedHeader(spec);
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(header.status().message()),
              HasSubstr("of a family it can express; left out: gemm.wgmma"));
}

}  // namespace
}  // namespace blocktune
