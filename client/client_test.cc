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
  EXPECT_EQ(a->kernel_config.family, "gemm.ffma");
  EXPECT_EQ(a->kernel_config.Get("ML"), a->block.ml);
  EXPECT_EQ(a->predicted_seconds, 0);
  EXPECT_THAT(a->provenance.note, HasSubstr("no trained gemm fp32 model"));
  auto conv = client.Query(ConvProblem{1, 56, 56, 64, 64, 3, 3, 1, 1});
  ASSERT_TRUE(conv.ok()) << conv.error().message;
  EXPECT_EQ(conv->match, MatchQuality::kDefault);
}

// Precisions (issue 19): a tensor-core precision on an empty store is a
// gemm.mma default whose kernel the daemon generates; a caller that names
// no precision (source written before precisions) still gets fp32.
TEST_F(ClientTest, Bf16OnAnEmptyStoreIsAGemmMmaDefaultThatGenerates) {
  Client client(address_);
  GemmProblem bf16{4096, 16, 4096};
  bf16.dtype = DType::kBf16;
  auto a = client.Query(bf16);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->match, MatchQuality::kDefault);
  EXPECT_EQ(a->kernel_config.family, "gemm.mma");
  EXPECT_GT(a->kernel_config.generator_version, 0);
  EXPECT_FALSE(a->kernel_config.params.empty());
  EXPECT_EQ(a->block.ml, 0);  // not a block-shape family
  EXPECT_THAT(a->kernel_config.ToString(), HasSubstr("gemm.mma v"));
  EXPECT_THAT(a->provenance.note, HasSubstr("gemm.mma"));

  auto k = client.GetKernel(bf16);
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(k->dtype, DType::kBf16);
  EXPECT_EQ(k->kernel_config.family, "gemm.mma");
  EXPECT_EQ(k->kernel_config.ToString(), a->kernel_config.ToString());
  ASSERT_TRUE(k->answer.has_value());
  EXPECT_EQ(k->answer->match, MatchQuality::kDefault);
  EXPECT_THAT(k->ptx, HasSubstr(".visible .entry " + k->entry));
  EXPECT_GT(k->dynamic_shared_bytes, 0);
  EXPECT_GE(k->align_bytes, 4);
  EXPECT_GE(k->align_a, 1);
  EXPECT_EQ(k->config.ml, 0);
  bool has_a = false;
  for (const KernelParam& p : k->params) has_a |= p.name == "A";
  EXPECT_TRUE(has_a);
  if (k->counter_offset >= 0) {
    EXPECT_GT(k->workspace_bytes, k->counter_offset);
  }

  // That configuration named back, and one family only.
  KernelOptions named;
  named.config = k->kernel_config;
  named.config->generator_version = 0;  // the current one
  auto again = client.GetKernel(bf16, named);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->entry, k->entry);
  EXPECT_FALSE(again->answer.has_value());
  KernelOptions ffma;
  ffma.family = "gemm.ffma";
  auto wrong = client.GetKernel(bf16, ffma);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, ErrorCode::kInvalidArgument);
  QueryOptions mma;
  mma.family = "gemm.mma";
  auto only = client.Query(bf16, mma);
  ASSERT_TRUE(only.ok()) << only.error().message;
  EXPECT_EQ(only->kernel_config.family, "gemm.mma");

  GemmProblem tf32{1024, 1024, 1024};
  tf32.dtype = DType::kTf32;
  auto t = client.Query(tf32);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->kernel_config.family, "gemm.mma");

  // gemm.wgmma named: its A and B are TMA tensor maps the application
  // encodes (issue 23).
  KernelOptions wgmma;
  wgmma.family = "gemm.wgmma";  // its default configuration here
  wgmma.arch = "sm_90";         // no GPU here: the arch says Hopper
  GemmProblem square{256, 256, 256};
  square.dtype = DType::kBf16;
  square.b_transposed = true;  // NT: both operands K-contiguous
  auto w = client.GetKernel(square, wgmma);
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->kernel_config.family, "gemm.wgmma");
  EXPECT_EQ(w->arch, "sm_90a");
  EXPECT_THAT(w->ptx, HasSubstr("wgmma.mma_async"));
  // A, B and C (v4 stores C by TMA; ldc a multiple of 8 bf16 elements).
  ASSERT_EQ(w->tensor_maps.size(), 3u);
  EXPECT_EQ(w->tensor_maps[2].operand, 'C');
  EXPECT_EQ(w->align_c, 8);
  for (const TensorMap& t : w->tensor_maps) {
    ASSERT_GE(t.param_index, 0);
    ASSERT_LT(t.param_index, static_cast<int>(w->params.size()));
    EXPECT_EQ(w->params[t.param_index].type, "b8[128]");
    EXPECT_EQ(w->params[t.param_index].size, 128);
    EXPECT_EQ(w->params[t.param_index].offset % 64, 0);
    EXPECT_EQ(t.data_type, 9);  // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    // A N and B T are both stored 256 rows of K = 256 contiguous elements.
    EXPECT_EQ(t.dims[0], 256u);
    EXPECT_EQ(t.dims[1], 256u);
    EXPECT_EQ(t.row_stride_bytes, 512u);
    EXPECT_EQ(t.box[0] * 2, 128u);  // the 128-byte swizzle's row
    EXPECT_GT(t.box[1], 0u);
  }
  EXPECT_EQ(w->tensor_maps[0].operand, 'A');
  EXPECT_EQ(w->tensor_maps[1].operand, 'B');
  EXPECT_TRUE(k->tensor_maps.empty());  // gemm.mma takes plain addresses

  // conv.wgmma named: its input is an im2col map, its filter a rank-3 tiled
  // map; GetKernel carries both whole.
  KernelOptions conv_wgmma;
  conv_wgmma.family = "conv.wgmma";
  conv_wgmma.arch = "sm_90";
  ConvProblem layer;
  layer.n = 2;
  layer.h = layer.w = 28;
  layer.c = 64;
  layer.k = 128;
  layer.pad_h = layer.pad_w = 1;
  layer.stride_h = layer.stride_w = 2;
  layer.dtype = DType::kBf16;
  auto cw = client.GetKernel(layer, conv_wgmma);
  ASSERT_TRUE(cw.ok()) << cw.error().message;
  EXPECT_EQ(cw->kernel_config.family, "conv.wgmma");
  EXPECT_THAT(cw->ptx, HasSubstr(".im2col.mbarrier::complete_tx::bytes"));
  ASSERT_EQ(cw->tensor_maps.size(), 3u);
  const TensorMap& x = cw->tensor_maps[0];
  EXPECT_EQ(x.operand, 'A');
  EXPECT_EQ(x.mode, "im2col");
  EXPECT_EQ(x.dims, (std::vector<uint64_t>{64, 28, 28, 2}));
  EXPECT_EQ(x.strides, (std::vector<uint64_t>{128, 128 * 28, 128 * 28 * 28}));
  EXPECT_EQ(x.lower_corner, (std::vector<int32_t>{-1, -1}));
  EXPECT_EQ(x.upper_corner, (std::vector<int32_t>{-1, -1}));  // pad - 2
  EXPECT_EQ(x.channels_per_pixel, 64u);
  EXPECT_GT(x.pixels_per_column, 0u);
  EXPECT_EQ(x.element_strides, (std::vector<uint32_t>{1, 2, 2, 1}));
  const TensorMap& f = cw->tensor_maps[1];
  EXPECT_EQ(f.mode, "tiled");
  EXPECT_EQ(f.dims, (std::vector<uint64_t>{64, 9, 128}));
  EXPECT_EQ(f.strides, (std::vector<uint64_t>{128, 128 * 9}));
  EXPECT_EQ(f.box.size(), 3u);
  EXPECT_EQ(cw->tensor_maps[2].operand, 'C');

  // An old caller's problem: fp32, the block-shape family.
  auto old = client.GetKernel(GemmProblem{64, 64, 64});
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(old->dtype, DType::kFp32);
  EXPECT_EQ(old->kernel_config.family, "gemm.ffma");
  EXPECT_GT(old->config.ml, 0);
  EXPECT_EQ(old->kernel_config.Get("ml"), old->config.ml);
  EXPECT_EQ(old->kernel_config.Get("KG"), old->config.kg);
  EXPECT_FALSE(old->kernel_config.Get("stages").has_value());

  EXPECT_STREQ(ToString(DType::kBf16), "bf16");
  EXPECT_EQ(DTypeFromString("TF32"), DType::kTf32);
  EXPECT_FALSE(DTypeFromString("fp64").has_value());
  EXPECT_STREQ(ToString(MatchQuality::kStale), "stale");
}

// Only stale answers (a store migrated from schema v3, gemm.ffma generator
// version 0) for a problem: a default of the current generator, kStale,
// and the note names the version.
TEST_F(ClientTest, OnlyStaleDataIsAStaleMatch) {
  const std::string old = dir_ + "/v3";
  std::filesystem::create_directory(old);
  std::filesystem::copy_file(
      std::string(BLOCKTUNE_SOURCE_DIR) + "/server/testdata/store_v3.db",
      old + "/b.db");
  auto daemon = testing::StartDaemonIn(BLOCKTUNED, old);
  ASSERT_TRUE(daemon->ok()) << daemon->Log();
  Client client("unix:" + old + "/s.sock");
  auto a = client.Query(GemmProblem{4096, 16, 4096, false, true});
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->match, MatchQuality::kStale);
  EXPECT_EQ(a->kernel_config.family, "gemm.ffma");
  EXPECT_GT(a->kernel_config.generator_version, 0);
  EXPECT_THAT(a->provenance.note, HasSubstr("generator version 0"));
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
