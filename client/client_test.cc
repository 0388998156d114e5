// blocktune::Client against a real blocktuned, through the public header
// alone: every match quality, errors that name the field, and kernels.
#include "blocktune/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "client/test_dataset.h"
#include "server/child_daemon.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using testing::ChildDaemon;

std::string MakeTempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "blocktune-client-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

int RunCli(const std::string& args) {
  return testing::RunCommand(std::string(BLOCKTUNE_CLI) + " " + args).code;
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty());
    daemon_ = testing::StartDaemonIn(BLOCKTUNED, dir_);
    ASSERT_TRUE(daemon_->ok()) << daemon_->Log();
    address_ = "unix:" + dir_ + "/s.sock";
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove_all(dir_);
  }
  int Import(const std::string& file) {
    return RunCli("import " + file + " --server " + address_);
  }

  std::string dir_;
  std::string address_;
  std::unique_ptr<ChildDaemon> daemon_;
};

TEST_F(ClientTest, EmptyStoreAnswersADefaultThatRuns) {
  Client client(address_);
  auto a = client.Query(GemmProblem{1000, 512, 77});
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->match, MatchQuality::kDefault);
  EXPECT_GT(a->block.ml, 0);
  EXPECT_EQ(a->predicted_seconds, 0);
  EXPECT_THAT(a->provenance.note, HasSubstr("no trained gemm fp32 model"));
  auto conv = client.Query(ConvProblem{1, 56, 56, 64, 64, 3, 3, 1, 1});
  ASSERT_TRUE(conv.ok()) << conv.error().message;
  EXPECT_EQ(conv->match, MatchQuality::kDefault);
}

TEST_F(ClientTest, BadProblemsNameTheField) {
  Client client(address_);
  auto a = client.Query(GemmProblem{0, 16, 16});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(a.error().message, HasSubstr("m"));
  auto batch = client.BatchQuery(std::vector<GemmProblem>{{8, 8, 8}, {8, -1, 8}});
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(batch.error().message, HasSubstr("queries[1]"));
  auto k = client.GetKernel(GemmProblem{64, 64, 64},
                            BlockConfig{128, 128, 8, 8, 64, 1});  // 131 KiB
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(k.error().message, HasSubstr("shared memory"));
  auto arch = client.GetKernel(GemmProblem{64, 64, 64}, std::nullopt, "sm_5");
  ASSERT_FALSE(arch.ok());
  EXPECT_THAT(arch.error().message, HasSubstr("arch must be sm_XY"));
}

TEST_F(ClientTest, UnreachableDaemonIsAnErrorNotAThrow) {
  Client client("unix:" + dir_ + "/nobody.sock");
  auto a = client.Query(GemmProblem{64, 64, 64});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, ErrorCode::kUnavailable);
}

TEST_F(ClientTest, ShippedModelPredictsThenCaches) {
  ASSERT_EQ(Import(std::string(BLOCKTUNE_SOURCE_DIR) +
                   "/models/pretrained/h100-sxm/models.json.gz"),
            0);
  Client client(address_);
  const GemmProblem mlp{4096, 16, 4096, false, true};
  auto first = client.Query(mlp);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->match, MatchQuality::kPredicted);
  EXPECT_GT(first->predicted_seconds, 0);
  EXPECT_GT(first->tflops, 0.1);
  EXPECT_GT(first->provenance.model_id, 0);
  EXPECT_THAT(first->provenance.device, HasSubstr("H100"));
  EXPECT_EQ(first->provenance.cc_major, 9);
  auto again = client.Query(mlp);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->match, MatchQuality::kCached);
  EXPECT_EQ(again->block, first->block);

  auto batch = client.BatchQuery(
      std::vector<ConvProblem>{{1, 56, 56, 64, 64, 3, 3, 1, 1},
                               {32, 28, 28, 128, 128, 3, 3, 1, 1}});
  ASSERT_TRUE(batch.ok()) << batch.error().message;
  ASSERT_EQ(batch->size(), 2u);
  for (const Answer& a : *batch) EXPECT_EQ(a.match, MatchQuality::kPredicted);

  // The kernel of the answer: the same block shape, the H100's target and
  // a launch geometry that covers C.
  auto kernel = client.GetKernel(mlp);
  ASSERT_TRUE(kernel.ok()) << kernel.error().message;
  EXPECT_EQ(kernel->config, first->block);
  ASSERT_TRUE(kernel->answer.has_value());
  EXPECT_EQ(kernel->answer->match, MatchQuality::kCached);
  EXPECT_EQ(kernel->arch, "sm_90");
  EXPECT_THAT(kernel->ptx, HasSubstr(".visible .entry " + kernel->entry));
  EXPECT_THAT(kernel->ptx, HasSubstr(".target sm_90"));
  EXPECT_GE(int64_t{kernel->grid[0]} * kernel->config.ml, mlp.m);
  EXPECT_GE(int64_t{kernel->grid[1]} * kernel->config.nl, mlp.n);
  EXPECT_EQ(kernel->grid[2], kernel->config.kg);
  EXPECT_EQ(int64_t{kernel->block[0]},
            (kernel->config.ml / kernel->config.ms) *
                (kernel->config.nl / kernel->config.ns));
  ASSERT_EQ(kernel->params.size(), 12u);
  EXPECT_EQ(kernel->params[0].name, "A");
  EXPECT_EQ(kernel->params[11].name, "beta");
  EXPECT_EQ(kernel->params[11].offset, 60);
  if (kernel->config.kg > 1) {
    EXPECT_THAT(kernel->ptx, HasSubstr(kernel->reduce_entry));
    EXPECT_EQ(kernel->workspace_bytes, 4 * mlp.m * mlp.n * kernel->config.kg);
    EXPECT_EQ(kernel->reduce_params.size(), 8u);
  }

  // A block shape of the caller's, for a convolution, for sm_80.
  const BlockConfig mine{64, 64, 4, 4, 8, 2};
  auto conv = client.GetKernel(ConvProblem{1, 14, 14, 256, 256, 3, 3, 1, 1},
                               mine, "sm_80");
  ASSERT_TRUE(conv.ok()) << conv.error().message;
  EXPECT_EQ(conv->config, mine);
  EXPECT_FALSE(conv->answer.has_value());
  EXPECT_EQ(conv->entry, "blocktune_conv");
  EXPECT_EQ(conv->params.size(), 24u);
  EXPECT_EQ(conv->reduce_entry, "blocktune_gemm_reduce");
}

TEST_F(ClientTest, StoredAnswersServeNearbyProblemsAsNearest) {
  const std::string file = dir_ + "/tuned.json";
  std::ofstream(file) << testing::kOneTunedGemmDataset;
  ASSERT_EQ(Import(file), 0);
  Client client(address_);
  auto exact = client.Query(GemmProblem{4096, 16, 4096, false, true});
  ASSERT_TRUE(exact.ok()) << exact.error().message;
  EXPECT_EQ(exact->match, MatchQuality::kCached);
  EXPECT_DOUBLE_EQ(exact->measured_seconds, 8.5e-05);

  auto near = client.Query(GemmProblem{5000, 16, 3000, false, true});
  ASSERT_TRUE(near.ok()) << near.error().message;
  EXPECT_EQ(near->match, MatchQuality::kNearest);
  EXPECT_EQ(near->block, (BlockConfig{64, 16, 4, 2, 8, 4}));
  EXPECT_EQ(near->measured_seconds, 0);  // measured for another problem
  EXPECT_THAT(near->provenance.note, HasSubstr("m=4096 n=16 k=4096"));

  // K = 16 leaves K_G = 4 of U = 8 without work: not offered.
  auto tiny_k = client.Query(GemmProblem{4096, 16, 16, false, true});
  ASSERT_TRUE(tiny_k.ok());
  EXPECT_EQ(tiny_k->match, MatchQuality::kDefault);
}

}  // namespace
}  // namespace blocktune
