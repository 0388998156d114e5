// The blocktune binary against a real blocktuned: exit codes, output, and
// the query syntax users rely on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
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
  EXPECT_THAT(r.out, HasSubstr("\"schema_version\": 8"));
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
  // Each: the arguments, and what the usage error (exit 2) says.
  const std::pair<std::string, std::string> cases[] = {
      {"query gemm --m 0 --n 16 --k 4096", "gemm.m must be in [1, 2147483647], got 0"},
      {"query gemm --m 12 --n 16 --k 4096 --layout NX", "--layout (B) must be one of N, T"},
      {"query gemm --m 99999999999999999999 --n 1 --k 1", "--m"},
      {"query gemm --n 16 --k 4096", "--m is required"},
      {"query gemm --m 1 --n 1 --k 1 --top 500", "--top must be in [1, 100]"},
      {"query conv --n 1 --h 2 --w 2 --c 1 --k 1 --r 3 --s 3", "filter height"},
      {"campaign start --op fft --minutes 3", "--op must be one of gemm, conv; got 'fft'"},
      {"campaign start --op gemm", "a campaign needs a budget"},
      {"frobnicate", "unknown command 'frobnicate'; the commands are "},
      // Octal, hex and past int64: refused, not read as 8, 16 and 2^63 - 1.
      {"query gemm --m 010 --n 16 --k 4096", "--m: must be a decimal integer"},
      {"query gemm --m 0x10 --n 16 --k 4096", "--m: must be a decimal integer"},
      {"query gemm --m 9223372036854775808 --n 16 --k 4096", "--m: must be a decimal integer"},
      {"query gemm --m '' --n 16 --k 4096", "--m: must be a decimal integer"},
      {"query conv --n 1 --h 056 --w 56 --c 64 --k 64 --r 3 --s 3",
       "--h: must be a decimal integer"},
      // A token file or CA that cannot be read: nothing was sent (2), not
      // a server error (4).
      {"health --token-file /nonexistent/token", "cannot read token file /nonexistent/token"},
      {"health --tls-ca /nonexistent/ca.pem", "--tls-ca: cannot read /nonexistent/ca.pem"},
      // train's --features and --members are checked here, by their names
      // (the daemon said "feature_set" and "members").
      {"train --op gemm --features 9", "--features"},
      {"train --op gemm --members 17", "--members"},
      // A negative seed was taken as 2^64 - 1.
      {"sample --op gemm --seed -1", "--seed: must be a whole number"},
      {"campaign start --op gemm --max-samples 10 --seed -1", "--seed: must be a whole number"},
      {"train --op gemm --seed -1", "--seed: must be a whole number"},
      {"kernel gemm --m 64 --n 64 --k 64 --daemon", "--daemon goes with --family"},
  };
  for (const auto& [args, says] : cases) {
    CliRun r = Cli(args + " " + server_);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_THAT(r.out, HasSubstr(says)) << args;
  }
  CliRun r = Cli("health --server 127.0.0.1:99999");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--server 127.0.0.1:99999: the port must be in [1, 65535]"));
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
  EXPECT_THAT(r.out, HasSubstr("1. ML=64 NL=16 MS=4 NS=2 U=8 KG=4  gemm.ffma v"));
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

// Issue 19's acceptance on a host without a GPU: a tensor-core precision
// on an empty store answers a gemm.mma configuration and says how.
TEST_F(CliTest, TensorCorePrecisionsAnswerAGemmMmaConfiguration) {
  for (const char* dtype : {"bf16", "tf32", "fp16"}) {
    SCOPED_TRACE(dtype);
    CliRun r = Cli("query gemm --m 4096 --n 16 --k 4096 --dtype " +
                   std::string(dtype) + " --fallback " + server_);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_THAT(r.out, ::testing::ContainsRegex(
                           "source: (default|nearest|predicted)"));
    EXPECT_THAT(r.out, HasSubstr("gemm m=4096 n=16 k=4096 layout=NN dtype=" +
                                 std::string(dtype)));
    // Family, generator version and the parameters by name.
    EXPECT_THAT(r.out, ::testing::ContainsRegex("1\\. gemm\\.mma v[0-9]+ [a-zA-Z_]+=[0-9]+"));
    r = Cli("query gemm --m 4096 --n 16 --k 4096 --dtype " +
            std::string(dtype) + " --fallback --json " + server_);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_THAT(r.out, HasSubstr("\"family\": \"gemm.mma\""));
    EXPECT_THAT(r.out, HasSubstr("\"match\": \"MATCH_DEFAULT\""));
  }
  // Without --fallback an empty store has nothing to say for bf16 either.
  CliRun r = Cli("query gemm --m 4096 --n 16 --k 4096 --dtype bf16 " + server_);
  EXPECT_EQ(r.code, 4) << r.out;
  // fp32 stays the block-shape family, block shape first.
  r = Cli("query gemm --m 4096 --n 16 --k 4096 --fallback " + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("1\\. ML=[0-9]+ NL=[0-9]+ MS=[0-9]+ "
                                              "NS=[0-9]+ U=[0-9]+ KG=[0-9]+  "
                                              "gemm\\.ffma v[0-9]+"));
  // A family that does not implement the precision is the daemon's refusal.
  r = Cli("query gemm --m 4096 --n 16 --k 4096 --dtype bf16 --family gemm.ffma "
          "--fallback " + server_);
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_THAT(r.out, HasSubstr("gemm.ffma"));
}

TEST_F(CliTest, BadPrecisionsAreUsageErrorsNamingTheAllowedValues) {
  for (const std::string cmd :
       {"query gemm --m 4096 --n 16 --k 4096 --dtype fp8 --fallback",
        "query conv --n 1 --h 56 --w 56 --c 64 --k 64 --r 3 --s 3 --dtype fp8",
        "kernel gemm --m 64 --n 64 --k 64 --dtype fp8",
        "train --op gemm --dtype fp8", "campaign start --max-samples 10 --dtype fp8",
        "export --dtype fp8"}) {
    CliRun r = Cli(cmd + " " + server_);
    EXPECT_EQ(r.code, 2) << cmd << ": " << r.out;
    EXPECT_THAT(r.out, HasSubstr("--dtype must be one of fp32, tf32, bf16, "
                                 "fp16; got 'fp8'"))
        << cmd;
  }
  // fp64 parses, but nothing tunes it: refused here, saying why.
  CliRun r = Cli("query gemm --m 64 --n 64 --k 64 --dtype fp64 " + server_);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("no kernel family implements fp64"));
  // A header takes a list of precisions, and never stale rows.
  r = Cli("export --op gemm --shapes /dev/null --include-stale " + server_);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--include-stale is for dataset export"));
  r = Cli("export --op gemm --shapes /dev/null --dtype bf16,fp8 " + server_);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--dtype"));
}

TEST_F(CliTest, RemoteKernelsOfAnyFamily) {
  // The daemon's answer for bf16: a gemm.mma kernel with its launch needs.
  const std::string ptx = dir_.path() + "/k.ptx";
  CliRun r = Cli("kernel gemm --m 512 --n 256 --k 1024 --dtype bf16 -o " + ptx +
                 " " + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("kernel: gemm\\.mma v[0-9]+ .* bf16  \\(default\\)"));
  EXPECT_THAT(r.out, HasSubstr("B dynamic"));
  EXPECT_THAT(r.out, HasSubstr("alignment: lda a multiple of"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("block shape:")));
  r = Cli("kernel gemm --m 512 --n 256 --k 1024 --dtype bf16 --json -o " + ptx +
          " " + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("\"dtype\": \"DTYPE_BF16\""));
  EXPECT_THAT(r.out, HasSubstr("\"dynamic_shared_bytes\""));

  // --family --daemon: the daemon's best of that family; with --params,
  // that configuration (here the local default's parameters).
  CliRun local = Cli("kernel gemm --m 512 --n 256 --k 1024 --dtype tf32 "
                     "--family gemm.mma --json -o " + ptx);
  ASSERT_EQ(local.code, 0) << local.out;
  const std::string key = "\"params\": \"";
  const size_t at = local.out.find(key);
  ASSERT_NE(at, std::string::npos) << local.out;
  const std::string params =
      local.out.substr(at + key.size(),
                       local.out.find('"', at + key.size()) - at - key.size());
  r = Cli("kernel gemm --m 512 --n 256 --k 1024 --dtype tf32 --family gemm.mma "
          "--params \"" + params + "\" --daemon -o " + ptx + " " + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("kernel: gemm.mma v"));
  EXPECT_THAT(r.out, HasSubstr("tf32\n"));  // named, so no "(default)"
  r = Cli("kernel gemm --m 512 --n 256 --k 1024 --dtype tf32 --family gemm.mma "
          "--daemon -o " + ptx + " " + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("kernel: gemm.mma v"));
  r = Cli("kernel gemm --m 512 --n 256 --k 1024 --dtype bf16 --family gemm.mma "
          "--params \"zz=1\" --daemon " + server_);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--params"));
  r = Cli("kernel gemm --m 512 --n 256 --k 1024 --params \"bm=64\" " + server_);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--params need --family"));

  // gemm.wgmma from the daemon: the summary says how to encode its two
  // tensor maps (issue 23).
  r = Cli("kernel gemm --m 512 --n 256 --k 1024 --layout NT --dtype bf16 "
          "--family gemm.wgmma --arch sm_90 --daemon -o " + ptx + " " + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("kernel: gemm.wgmma v"));
  EXPECT_THAT(r.out, HasSubstr("sm_90a"));
  EXPECT_THAT(r.out, HasSubstr("tensor map: param 0 = A (bf16, dims 1024 512, "
                               "row stride 2048 B, box 64 "));
  EXPECT_THAT(r.out, HasSubstr("tensor map: param 1 = B (bf16, dims 1024 256, "));

  // fp32 keeps its block shape and gains the family line.
  r = Cli("kernel gemm --m 64 --n 64 --k 64 -o " + ptx + " " + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("kernel: gemm.ffma v"));
  EXPECT_THAT(r.out, HasSubstr("block shape: ML="));
}

TEST_F(CliTest, HealthCampaignTrainAndExportTakePrecisionAndFamily) {
  CliRun r = Cli("health " + server_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("stale      0 samples, 0 tuned answers, 0 models"));
  r = Cli("health --json " + server_);
  EXPECT_THAT(r.out, HasSubstr("\"stale_samples\""));
  // The spec passes the CLI's checks and reaches the daemon, which has no
  // GPU here.
  r = Cli("campaign start --op gemm --dtype bf16 --family gemm.mma "
          "--max-samples 100 " + server_);
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_THAT(r.out, HasSubstr("GPU"));
  // A family that does not implement the precision: the daemon names the
  // field and the allowed families.
  r = Cli("campaign start --op gemm --dtype bf16 --family gemm.mma,gemm.ffma "
          "--max-samples 100 " + server_);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("families[1]"));
  // A retune needs no budget (0 and 0: every stale row).
  r = Cli("campaign start --op gemm --dtype bf16 --retune-stale " + server_);
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_THAT(r.out, HasSubstr("GPU"));
  // No samples of bf16 to train on: the daemon says so (exit 4), not a
  // usage error.
  r = Cli("train --op gemm --dtype bf16 --family gemm.mma --epochs 1 " + server_);
  EXPECT_EQ(r.code, 4) << r.out;
  r = Cli("export --dtype bf16 --include-stale " + server_);
  EXPECT_EQ(r.code, 0) << r.out;
}

// A store migrated from schema v3 (server/testdata): its answers and
// models are of gemm.ffma generator version 0, stale. The CLI counts them
// and says when a query could only have been answered from them.
TEST_F(CliTest, StaleRowsAreCountedAndNamed) {
  TempDir old;
  std::filesystem::copy_file(
      std::string(BLOCKTUNE_SOURCE_DIR) + "/server/testdata/store_v3.db",
      old.path() + "/b.db");
  auto daemon = StartDaemonIn<DaemonProcess>(BLOCKTUNED, old.path());
  ASSERT_TRUE(daemon->ok()) << daemon->Log();
  const std::string server = "--server unix:" + old.path() + "/s.sock ";
  CliRun r = Cli("health " + server);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("stale      [1-9][0-9]* samples, "
                                              "[1-9][0-9]* tuned answers, 2 models"));
  r = Cli("devices " + server);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("samples \\([1-9][0-9]* stale\\)"));
  r = Cli("query gemm --m 4096 --n 16 --k 4096 --layout NT --fallback " + server);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("source: stale"));
  EXPECT_THAT(r.out, HasSubstr("gemm.ffma generator version 0"));
  EXPECT_THAT(r.out, HasSubstr("--retune-stale"));
  r = Cli("query gemm --m 4096 --n 16 --k 4096 --layout NT --fallback --json " +
          server);
  EXPECT_THAT(r.out, HasSubstr("\"match\": \"MATCH_STALE\""));
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

// The H100 fp32 datasets the campaign code measured (issue 5; since ST,
// the version-2 campaigns of run10; since version 3, the samples whose
// kernel it kept: 36,008 of 43,712 and 22,977 of 28,032), as shipped:
// importing them into a fresh store gives their stated counts, every sample
// ok and current, one device.
TEST_F(CliTest, ShippedH100DatasetsImportWithTheirCounts) {
  const std::string dir = std::string(BLOCKTUNE_SOURCE_DIR) +
                          "/models/pretrained/h100-sxm/";
  CliRun gemm = Cli("import " + dir + "gemm-samples.json.gz " + server_);
  ASSERT_EQ(gemm.code, 0) << gemm.out;
  EXPECT_THAT(gemm.out, HasSubstr("imported 0 tuned answers, 36008 samples"));
  CliRun conv = Cli("import " + dir + "conv-samples.json.gz " + server_);
  ASSERT_EQ(conv.code, 0) << conv.out;
  EXPECT_THAT(conv.out, HasSubstr("imported 0 tuned answers, 22977 samples"));
  CliRun devices = Cli("devices --json " + server_);
  EXPECT_THAT(devices.out, HasSubstr("NVIDIA H100 80GB HBM3"));
  EXPECT_THAT(devices.out, HasSubstr("\"samples\": \"58985\""));
  EXPECT_THAT(devices.out, HasSubstr("\"stale_samples\""));
  EXPECT_THAT(devices.out, HasSubstr("\"stale_samples\": \"0\""));
  // A file that is not gzip or JSON is a usage error naming the file.
  std::ofstream(dir_.path() + "/junk.json.gz") << "not a dataset";
  CliRun junk = Cli("import " + dir_.path() + "/junk.json.gz " + server_);
  EXPECT_EQ(junk.code, 2);
  EXPECT_THAT(junk.out, HasSubstr("is not a blocktune dataset"));
}

}  // namespace
}  // namespace blocktune
