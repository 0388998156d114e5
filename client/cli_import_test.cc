// `blocktune import` and `export` of datasets larger than one message, and
// files the CLI must refuse without reading them whole.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "server/daemon_process.h"
#include "server/store_test_util.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using namespace ::blocktune::testing;  // NOLINT

CommandResult Cli(const std::string& args) {
  return RunCommand(std::string(BLOCKTUNE_CLI) + " " + args);
}

class CliImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = StartDaemonIn<DaemonProcess>(BLOCKTUNED, dir_.path());
    ASSERT_TRUE(daemon_->ok()) << daemon_->Log();
    server_ = " --server unix:" + dir_.path() + "/s.sock";
  }
  TempDir dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::string server_;
};

// The shipped GEMM samples (50,000) are about 7 MB of messages, more than
// the largest message: they travel in chunks both ways.
TEST_F(CliImportTest, ADatasetLargerThanOneMessageImportsAndExports) {
  const std::string samples =
      std::string(BLOCKTUNE_SOURCE_DIR) +
      "/models/pretrained/h100-sxm/gemm-samples.json.gz";
  CommandResult imported = Cli("import " + samples + server_);
  ASSERT_EQ(imported.code, 0) << imported.out;
  EXPECT_THAT(imported.out, HasSubstr("imported "));

  const std::string out = dir_.path() + "/out.json.gz";
  CommandResult exported = Cli("export --samples -o " + out + server_);
  ASSERT_EQ(exported.code, 0) << exported.out;
  // "imported T tuned answers, S samples" and "wrote T tuned answers, S
  // samples": the same counts.
  const std::string counts = imported.out.substr(
      imported.out.find("imported ") + 9,
      imported.out.find(" samples") - imported.out.find("imported ") - 9);
  EXPECT_THAT(exported.out, HasSubstr("wrote " + counts + " samples"));

  CommandResult again = Cli("import " + out + server_);
  EXPECT_EQ(again.code, 0) << again.out;
}

TEST_F(CliImportTest, ADeviceIsRefusedAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  CommandResult r = Cli("import /dev/zero" + server_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("/dev/zero is not a blocktune dataset"));
  EXPECT_LT(seconds, 5);
  // A folder is said to be one (it read as "corrupt gzip data").
  r = Cli("import " + dir_.path() + server_);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr(dir_.path() + " is a folder, not a dataset file"));
}

TEST_F(CliImportTest, AFileOverTheSizeLimitIsRefusedNamingIt) {
  const std::string big = dir_.path() + "/big.json";
  // Sparse: 1 GiB and a byte, on no disk.
  ASSERT_EQ(RunCommand("truncate -s 1073741825 " + big).code, 0);
  const auto start = std::chrono::steady_clock::now();
  CommandResult r = Cli("import " + big + server_);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("larger than the limit of 1024 MiB"));
  EXPECT_LT(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count(),
      5);
}

}  // namespace
}  // namespace blocktune
