// Exported headers, end to end: `blocktune export` against a real daemon
// holding the shipped H100 models, the headers compiled warning-free by
// g++ and clang++ (-Wall -Wextra -Werror) into a program that answers
// lookups, and its embedded model checked against the daemon's surrogate
// on 1,000 random (shape, block shape) pairs per op.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "client/header_export_cmd.h"
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
//   g M N K LAYOUT [ML NL MS NS U KG]   (predict when a block is given)
//   c N H W C K R S PH PW SH SW DH DW [ML NL MS NS U KG]
//   F M N K ML NL MS NS U KG   (whether the block shape fits: match 1 or 0)
// Output, one line each: the config (block and match) and the prediction.
// Upper-case G and C lines only predict (the config is left zero): each
// lookup of an unseen shape scores every candidate, ~20 ms on 2 CPU cores.
constexpr char kDriver[] = R"(
#include "tuned_gemm.h"
#include "tuned_conv.h"
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
using namespace blocktune::tuned;
int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string op;
    in >> op;
    Config c{};
    double predicted = 0;
    BlockShape b{};
    const bool lookup = op == "g" || op == "c";
    if (op == "F") {  // whether a block shape fits a GEMM: the match field
      long long m, n, k;
      in >> m >> n >> k >> b.ml >> b.nl >> b.ms >> b.ns >> b.u >> b.kg;
      c.match = static_cast<Match>(
          detail::Fits(b, m, n, k, detail::GemmOperandBytes(m, n, k)) ? 1 : 0);
    } else if (op == "g" || op == "G") {
      long long m, n, k;
      std::string l;
      in >> m >> n >> k >> l;
      const Layout layout = l == "NN" ? Layout::NN : l == "NT" ? Layout::NT
                          : l == "TN" ? Layout::TN : Layout::TT;
      if (lookup) c = gemm_config(m, n, k, layout);
      if (in >> b.ml >> b.nl >> b.ms >> b.ns >> b.u >> b.kg) {
#ifdef WITH_MODEL
        predicted = gemm_predict_seconds(m, n, k, layout, b);
#endif
      }
    } else {
      ConvShape s;
      in >> s.n >> s.h >> s.w >> s.c >> s.k >> s.r >> s.s >> s.pad_h >> s.pad_w >>
          s.stride_h >> s.stride_w >> s.dilation_h >> s.dilation_w;
      if (lookup) c = conv_config(s);
      if (in >> b.ml >> b.nl >> b.ms >> b.ns >> b.u >> b.kg) {
#ifdef WITH_MODEL
        predicted = conv_predict_seconds(s, b);
#endif
      }
    }
    std::printf("%d %d %d %d %d %d %d %.17g %.17g\n", c.block.ml, c.block.nl,
                c.block.ms, c.block.ns, c.block.u, c.block.kg,
                static_cast<int>(c.match), c.seconds, predicted);
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
  return out.str();
}

std::string Line(const Context& ctx, const BlockShape& b) {
  return Line(ctx) + " " + std::to_string(b.ml) + " " + std::to_string(b.nl) + " " +
         std::to_string(b.ms) + " " + std::to_string(b.ns) + " " +
         std::to_string(b.u) + " " + std::to_string(b.kg);
}

struct Output {
  BlockShape block;
  int match = -1;  // 0 exact, 1 predicted, 2 nearest, 3 default
  double seconds = 0, predicted = 0;
};

std::vector<Output> ParseOutput(const std::string& text) {
  std::vector<Output> out;
  std::istringstream in(text);
  Output o;
  while (in >> o.block.ml >> o.block.nl >> o.block.ms >> o.block.ns >> o.block.u >>
         o.block.kg >> o.match >> o.seconds >> o.predicted) {
    out.push_back(o);
  }
  return out;
}

Context RandomGemm(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> lg(4, 14);
  GemmContext g;
  g.m = std::llround(std::exp2(lg(rng)));
  g.n = std::llround(std::exp2(lg(rng)));
  g.k = std::llround(std::exp2(lg(rng)));
  g.layout_a = rng() % 2 ? Layout::kT : Layout::kN;
  g.layout_b = rng() % 2 ? Layout::kT : Layout::kN;
  g.dtype = DType::kFp32;
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

  std::vector<v1::QueryResponse> Ask(const std::vector<Context>& contexts) {
    v1::BatchQueryRequest req;
    for (const Context& c : contexts) {
      v1::QueryRequest* q = req.add_queries();
      ToProto(c, q->mutable_context());
      q->set_fallback(true);
    }
    v1::BatchQueryResponse resp;
    grpc::ClientContext ctx;
    auto s = daemon_->NewStub()->BatchQuery(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<v1::QueryResponse> out;
    for (const auto& r : resp.results()) out.push_back(r.response());
    return out;
  }

  TempDir dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::string server_;
};

TEST_F(HeaderExportTest, HeadersCompileCleanAndMatchTheDaemon) {
  std::mt19937_64 rng(7);
  // The exported shapes: answered by the daemon's search.
  std::vector<Context> gemms, convs;
  for (int i = 0; i < 16; ++i) gemms.push_back(RandomGemm(rng));
  for (int i = 0; i < 8; ++i) convs.push_back(RandomConv(rng));
  const auto gemm_answers = Ask(gemms);
  const auto conv_answers = Ask(convs);
  ASSERT_EQ(gemm_answers.size(), gemms.size());
  ASSERT_EQ(conv_answers.size(), convs.size());
  for (auto [list, name] : {std::pair{&gemms, "gemm"}, std::pair{&convs, "conv"}}) {
    std::ofstream shapes(dir_.path() + "/" + name + ".txt");
    shapes << "# exported shapes\n";
    for (const Context& c : *list) shapes << ToString(c) << "\n";
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
  EXPECT_THAT(text, HasSubstr("// date:    20"));
  EXPECT_THAT(text, HasSubstr("// ptxas:   "));

  // The daemon's own surrogates, for the 1,000-pair comparison.
  auto dataset = ReadDatasetFile(std::string(BLOCKTUNE_SOURCE_DIR) + kModels);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  auto profile = ProfileByName("h100");
  ASSERT_TRUE(profile.ok());
  std::map<Op, std::unique_ptr<BlockSearch>> search;
  for (const v1::Model& m : dataset->models()) {
    auto op = FromProto(m.op(), "op");
    ASSERT_TRUE(op.ok());
    auto model = Surrogate::Load(*op, m.architecture(), m.weights(), m.normalization());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    search[*op] = std::make_unique<BlockSearch>(*model, *profile);
  }
  ASSERT_EQ(search.size(), 2u);

  std::vector<std::string> lines;
  std::vector<double> expected;
  for (Op op : {Op::kGemm, Op::kConv}) {
    for (int i = 0; i < 1000; ++i) {
      const Context ctx = op == Op::kGemm ? RandomGemm(rng) : RandomConv(rng);
      const std::vector<Params> range = search[op]->Candidates(ctx);
      if (range.empty()) {
        --i;
        continue;
      }
      const Params& params = range[rng() % range.size()];
      const BlockShape xb = ToBlockShape(params);
      std::string line = Line(ctx, xb);
      if (i >= 50) line[0] = static_cast<char>(std::toupper(line[0]));  // predict only
      lines.push_back(line);
      expected.push_back(search[op]->PredictSeconds(ctx, {params})[0]);
    }
  }
  // The exported shapes, with the daemon's answers.
  const size_t exported_from = lines.size();
  for (size_t i = 0; i < gemms.size(); ++i) {
    auto xb = FromProto(gemm_answers[i].answers(0).block_shape(), "xb");
    lines.push_back(Line(gemms[i], *xb));
  }
  for (size_t i = 0; i < convs.size(); ++i) {
    auto xb = FromProto(conv_answers[i].answers(0).block_shape(), "xb");
    lines.push_back(Line(convs[i], *xb));
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
    double worst = 0;
    for (size_t i = 0; i < exported_from; ++i) {
      const double rel = std::abs(out[i].predicted - expected[i]) / expected[i];
      worst = std::max(worst, rel);
      EXPECT_LE(rel, kTolerance) << lines[i] << ": header " << out[i].predicted
                                 << " s, daemon " << expected[i] << " s";
      // Unseen shapes: the model's choice among the candidates.
      if (std::islower(lines[i][0])) EXPECT_EQ(out[i].match, 1) << lines[i];
    }
    std::printf("%s: 2,000 random (shape, block shape) pairs, worst relative "
                "difference to the daemon's surrogate %.3g\n", compiler, worst);
    for (size_t i = exported_from; i < lines.size(); ++i) {
      const auto& answers = i - exported_from < gemms.size()
                                ? gemm_answers[i - exported_from]
                                : conv_answers[i - exported_from - gemms.size()];
      const v1::TunedAnswer& a = answers.answers(0);
      EXPECT_EQ(out[i].match, 0) << lines[i];  // exact
      EXPECT_EQ(out[i].block.ml, a.block_shape().ml()) << lines[i];
      EXPECT_EQ(out[i].block.kg, a.block_shape().kg()) << lines[i];
      EXPECT_NEAR(out[i].seconds, a.predicted_seconds(), 1e-5 * a.predicted_seconds());
      EXPECT_LE(std::abs(out[i].predicted - a.predicted_seconds()),
                kTolerance * a.predicted_seconds())
          << lines[i];
    }
  }
}

TEST_F(HeaderExportTest, WithoutAModelUnseenShapesGetTheNearestAnswer) {
  std::mt19937_64 rng(11);
  std::vector<Context> gemms;
  for (int i = 0; i < 6; ++i) gemms.push_back(RandomGemm(rng));
  const auto answers = Ask(gemms);  // stores them
  ShellRun r = Shell(std::string(BLOCKTUNE_CLI) + " export --op gemm --all-tuned -o " +
                dir_.path() + "/tuned_gemm.h" + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("6 gemm answers"));
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
    lines.push_back("g 1 1 1 NN");
    const std::vector<Output> out = RunDriver(exe, lines);
    ASSERT_EQ(out.size(), lines.size());
    for (size_t i = 0; i < gemms.size(); ++i) {
      EXPECT_EQ(out[i].match, 0) << lines[i];
      EXPECT_EQ(out[i].block.nl, answers[i].answers(0).block_shape().nl());
    }
    EXPECT_EQ(out[gemms.size()].match, 2) << lines[gemms.size()];
    EXPECT_GE(out.back().match, 2);  // nearest that fits, or default
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

}  // namespace
}  // namespace blocktune
