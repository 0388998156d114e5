// The blocktune binary against a real blocktuned: exit codes, output, and
// the query syntax users rely on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "client/test_dataset.h"
#include "server/daemon_process.h"
#include "server/store_test_util.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using namespace ::blocktune::testing;  // NOLINT

using CliRun = CommandResult;

CliRun Cli(const std::string& args) {
  return RunCommand(std::string(BLOCKTUNE_CLI) + " " + args);
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = StartDaemonIn<DaemonProcess>(BLOCKTUNED, dir_.path());
    ASSERT_TRUE(daemon_->ok()) << daemon_->Log();
    server_ = "--server unix:" + dir_.path() + "/s.sock ";
  }
  TempDir dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::string server_;
};

TEST_F(CliTest, HealthIsExitZero) {
  CliRun r = Cli("health " + server_);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("blocktuned 0.1.0"));
  r = Cli("health --json " + server_);
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("\"schema_version\": 4"));
}

TEST_F(CliTest, QueryOnAnEmptyStoreIsAClearNotFound) {
  CliRun r = Cli("query gemm --m 4096 --n 16 --k 4096 --layout NT " + server_);
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_THAT(r.out, HasSubstr("NOT_FOUND: no tuned answer for 'gemm m=4096 "
                               "n=16 k=4096 layout=NT dtype=fp32'"));
  r = Cli("query conv --n 1 --h 56 --w 56 --c 64 --k 64 --r 3 --s 3 --pad 1 "
          "--stride 1 --dilation 1 " + server_);
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_THAT(r.out, HasSubstr("pad=1x1 stride=1x1 dilation=1x1"));
}

TEST_F(CliTest, BadValuesAreUsageErrorsThatNameTheFlag) {
  CliRun r = Cli("query gemm --m 0 --n 16 --k 4096 " + server_);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("gemm.m must be in [1, 2147483647], got 0"));
  r = Cli("query gemm --m 12 --n 16 --k 4096 --layout NX " + server_);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("--layout (B) must be one of N, T"));
  r = Cli("query gemm --m 99999999999999999999 --n 1 --k 1 " + server_);
  EXPECT_EQ(r.code, 2);
  r = Cli("query gemm --n 16 --k 4096 " + server_);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("--m is required"));
  r = Cli("query gemm --m 1 --n 1 --k 1 --top 500 " + server_);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("--top must be in [1, 100]"));
  r = Cli("query conv --n 1 --h 2 --w 2 --c 1 --k 1 --r 3 --s 3 " + server_);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("filter height"));
  r = Cli("campaign start --op fft --minutes 3 " + server_);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("--op must be one of gemm, conv; got 'fft'"));
  r = Cli("campaign start --op gemm " + server_);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("a campaign needs a budget"));
  r = Cli("frobnicate " + server_);
  EXPECT_EQ(r.code, 2);
}

TEST_F(CliTest, HelpIsExitZeroOnEverySubcommand) {
  for (const char* cmd : {"", "health", "devices", "campaign start",
                          "campaign watch", "campaign list", "campaign cancel",
                          "train", "query gemm", "query conv", "kernel gemm",
                          "kernel conv", "export", "import", "sample"}) {
    CliRun r = Cli(std::string(cmd) + " --help");
    EXPECT_EQ(r.code, 0) << cmd << ": " << r.out;
    EXPECT_THAT(r.out, HasSubstr("--server")) << cmd;
    EXPECT_THAT(r.out, HasSubstr("--json")) << cmd;
  }
}

TEST_F(CliTest, AnUnreachableServerIsExitThree) {
  CliRun r = Cli("health --server unix:" + dir_.path() + "/nobody.sock");
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.out, HasSubstr("cannot reach blocktuned"));
}

TEST_F(CliTest, ImportThenQueryThenExport) {
  // A dataset file as `blocktune export` writes it.
  const std::string file = dir_.path() + "/dataset.json";
  std::ofstream(file) << testing::kOneTunedGemmDataset;
  CliRun r = Cli("import " + file + " " + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("imported 1 tuned answers"));
  r = Cli("query gemm --m 4096 --n 16 --k 4096 --layout NT " + server_);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("1. ML=64 NL=16 MS=4 NS=2 U=8 KG=4"));
  EXPECT_THAT(r.out, HasSubstr("measured 85.0 us"));
  r = Cli("query gemm --m 4096 --n 16 --k 4096 --layout NT --json " + server_);
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("\"match\": \"MATCH_EXACT\""));
  r = Cli("devices " + server_);
  EXPECT_THAT(r.out, HasSubstr("NVIDIA H100 80GB HBM3 (sm_90, 132 SMs"));

  const std::string out = dir_.path() + "/out.json";
  r = Cli("export --out " + out + " " + server_);
  EXPECT_EQ(r.code, 0) << r.out;
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_THAT(text, HasSubstr("\"ml\": \"64\""));
  EXPECT_THAT(text, HasSubstr("SOURCE_IMPORTED"));

  std::ofstream(dir_.path() + "/junk.json") << "not json";
  r = Cli("import " + dir_.path() + "/junk.json " + server_);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("is not a blocktune dataset"));
}

TEST_F(CliTest, CampaignWithoutGpuSaysWhyAndKernelFallsBack) {
  CliRun r = Cli("campaign start --op conv --minutes 20 " + server_);
  EXPECT_EQ(r.code, 4);
  EXPECT_THAT(r.out, HasSubstr("no GPU"));
  r = Cli("kernel gemm --m 64 --n 64 --k 64 " + server_);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(".visible .entry blocktune_gemm("));
  const std::string ptx = dir_.path() + "/k.ptx";
  r = Cli("kernel conv --n 1 --h 14 --w 14 --c 256 --k 256 --r 3 --s 3 --pad 1 "
          "--block-shape \"ML=64 NL=64 MS=4 NS=4 U=8 KG=2\" --arch sm_80 -o " +
          ptx + " " + server_);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("entry: blocktune_conv  grid 4 x 4 x 2  block 256 x 1 x 1"));
  EXPECT_THAT(r.out, HasSubstr("then: blocktune_gemm_reduce"));
  std::ifstream in(ptx);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_THAT(text, HasSubstr(".target sm_80"));
  r = Cli("kernel gemm --m 64 --n 64 --k 64 --arch sm_1 " + server_);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("--arch must be sm_XY"));
}

// `sample` runs locally: no daemon, no --server.
TEST_F(CliTest, SampleReportsAcceptanceRulesAndMarginals) {
  CliRun r = Cli("sample --op conv --sampler bayes --count 500 --seed 3");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("acceptance: 500 of"));
  EXPECT_THAT(r.out, HasSubstr("million draws/s"));
  EXPECT_THAT(r.out, HasSubstr("occupancy"));
  EXPECT_THAT(r.out, HasSubstr("  rs: "));
  r = Cli("sample --op gemm --sampler uniform --count 20 --json --list");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("\"rejected_by_rule\""));
  EXPECT_THAT(r.out, HasSubstr("| ML="));
  r = Cli("sample --op gemm --device-profile b200");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("--device-profile"));
  EXPECT_THAT(r.out, HasSubstr("h100-sxm, h200, a100, v100"));
  r = Cli("sample --op fft");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("--op must be one of gemm, conv; got 'fft'"));
  r = Cli("sample --rules occupancy,magic");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("'magic'"));
  r = Cli("sample --count 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("--count must be in [1, 100000000]"));
}

}  // namespace
}  // namespace blocktune

namespace blocktune {
namespace {

// The H100 datasets the campaign code measured (issue 5), as shipped:
// importing them into a fresh store gives their stated counts, every
// sample ok, one device.
TEST_F(CliTest, ShippedH100DatasetsImportWithTheirCounts) {
  const std::string dir = std::string(BLOCKTUNE_SOURCE_DIR) +
                          "/models/pretrained/h100-sxm/";
  CliRun gemm = Cli("import " + dir + "gemm-samples.json.gz " + server_);
  ASSERT_EQ(gemm.code, 0) << gemm.out;
  EXPECT_THAT(gemm.out, HasSubstr("imported 0 tuned answers, 50000 samples"));
  CliRun conv = Cli("import " + dir + "conv-samples.json.gz " + server_);
  ASSERT_EQ(conv.code, 0) << conv.out;
  EXPECT_THAT(conv.out, HasSubstr("imported 0 tuned answers, 30000 samples"));
  CliRun devices = Cli("devices --json " + server_);
  EXPECT_THAT(devices.out, HasSubstr("NVIDIA H100 80GB HBM3"));
  EXPECT_THAT(devices.out, HasSubstr("\"samples\": \"80000\""));
  // A file that is not gzip or JSON is a usage error naming the file.
  std::ofstream(dir_.path() + "/junk.json.gz") << "not a dataset";
  CliRun junk = Cli("import " + dir_.path() + "/junk.json.gz " + server_);
  EXPECT_EQ(junk.code, 2);
  EXPECT_THAT(junk.out, HasSubstr("is not a blocktune dataset"));
}

}  // namespace
}  // namespace blocktune
