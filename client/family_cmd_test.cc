// `blocktune families` and `blocktune kernel ... --family`: the binary with
// no daemon (--server names a socket nobody listens on, so any attempt to
// connect would fail the test with exit code 3).
#include <gmock/gmock.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/child_daemon.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::CommandResult;
using testing::RunCommand;

const char kNoDaemon[] = " --server unix:/nonexistent/blocktune.sock";

CommandResult Cli(const std::string& args) {
  return RunCommand(std::string(BLOCKTUNE_CLI) + " " + args + kNoDaemon);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class FamilyCmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/blocktune-family-cmd-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

google::protobuf::Struct ParseJson(const std::string& text) {
  google::protobuf::Struct s;
  auto status = google::protobuf::util::JsonStringToMessage(text, &s);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << text;
  return s;
}

TEST_F(FamilyCmdTest, FamiliesJsonListsGemmMmaWithBf16) {
  CommandResult r = Cli("families --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const google::protobuf::Struct json = ParseJson(r.out);
  const auto& families = json.fields().at("families").list_value().values();
  ASSERT_GE(families.size(), 3);
  bool found = false;
  for (const auto& v : families) {
    const auto& f = v.struct_value().fields();
    EXPECT_FALSE(f.at("summary").string_value().empty());
    EXPECT_GE(f.at("version").number_value(), 1);
    EXPECT_GT(f.at("parameters").list_value().values_size(), 0);
    EXPECT_GT(f.at("rules").list_value().values_size(), 0);
    if (f.at("name").string_value() != "gemm.mma") continue;
    found = true;
    EXPECT_EQ(f.at("op").string_value(), "gemm");
    std::vector<std::string> precisions;
    for (const auto& p : f.at("precisions").list_value().values())
      precisions.push_back(p.string_value());
    EXPECT_THAT(precisions, ::testing::ElementsAre("bf16", "fp16", "tf32"));
    EXPECT_EQ(f.at("min_compute_capability").number_value(), 80);
    const auto& bm = f.at("parameters").list_value().values(0).struct_value();
    EXPECT_EQ(bm.fields().at("name").string_value(), "bm");
    EXPECT_GT(bm.fields().at("values").list_value().values_size(), 1);
    EXPECT_THAT(bm.fields().at("meaning").string_value(), HasSubstr("M_L"));
    std::vector<std::string> rules;
    for (const auto& p : f.at("rules").list_value().values())
      rules.push_back(p.string_value());
    EXPECT_THAT(rules, ::testing::Contains("registers"));
    EXPECT_THAT(rules, ::testing::Contains("compute_capability"));
  }
  EXPECT_TRUE(found) << r.out;
  bool wgmma = false;
  for (const auto& v : families) {
    const auto& f = v.struct_value().fields();
    if (f.at("name").string_value() != "gemm.wgmma") continue;
    wgmma = true;
    std::vector<std::string> precisions;
    for (const auto& p : f.at("precisions").list_value().values())
      precisions.push_back(p.string_value());
    EXPECT_THAT(precisions, ::testing::ElementsAre("bf16", "fp16", "tf32"));
    EXPECT_EQ(f.at("min_compute_capability").number_value(), 90);
  }
  EXPECT_TRUE(wgmma) << r.out;

  r = Cli("families");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("gemm.ffma (gemm; fp32; version 3"));
  EXPECT_THAT(r.out, HasSubstr("conv.ffma (conv; fp32"));
  EXPECT_THAT(r.out, HasSubstr("gemm.gemv (gemm; fp32; version 3"));
  EXPECT_THAT(r.out, HasSubstr("gemm.mma (gemm; bf16, fp16, tf32"));
  EXPECT_THAT(r.out, HasSubstr("gemm.wgmma (gemm; bf16, fp16, tf32"));
  EXPECT_THAT(r.out, HasSubstr("conv.wgmma (conv; bf16, fp16, tf32"));
  EXPECT_THAT(r.out, HasSubstr("rules:"));
}

// conv.wgmma: the input read by im2col TMA copies; its map says so.
TEST_F(FamilyCmdTest, KernelWithConvWgmmaWritesIm2colPtx) {
  const std::string ptx = dir_ + "/cw.ptx";
  CommandResult r = Cli("kernel conv --n 32 --h 28 --w 28 --c 128 --k 256 "
                        "--r 3 --s 3 --pad 1 --stride 2 --dtype bf16 "
                        "--family conv.wgmma -o " + ptx);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string text = ReadFile(ptx);
  EXPECT_THAT(text, HasSubstr("wgmma.mma_async"));
  EXPECT_THAT(text, HasSubstr(".global.im2col.mbarrier::complete_tx::bytes"));
  EXPECT_THAT(text, HasSubstr(".target sm_90a"));
  EXPECT_THAT(r.out, HasSubstr("family: conv.wgmma (version "));
  EXPECT_THAT(r.out, HasSubstr("tensor map: tmap_a = A, bf16 im2col dims "
                               "128x28x28x32 strides 256,7168,200704 B "
                               "corners -1,-1..-1,-1 64 ch x 128 px steps "
                               "1,2,2,1"));
  EXPECT_THAT(r.out, HasSubstr("tensor map: tmap_b = B, bf16 tiled dims "
                               "128x9x256"));
  // C = 3 (the stem) is conv.mma's: TMA needs 16-byte strides.
  r = Cli("kernel conv --n 1 --h 32 --w 32 --c 3 --k 64 --r 7 --s 7 "
          "--pad 3 --stride 2 --dtype bf16 --family conv.wgmma -o " + ptx);
  EXPECT_EQ(r.code, 4) << r.out;  // FAILED_PRECONDITION: no configuration
  EXPECT_THAT(r.out, HasSubstr("alignment: TMA needs 16-byte strides"));
}

TEST_F(FamilyCmdTest, KernelWithGemmWgmmaWritesHopperPtx) {
  const std::string ptx = dir_ + "/w.ptx";
  CommandResult r = Cli("kernel gemm --m 1000 --n 512 --k 4096 --layout NT "
                        "--dtype bf16 --family gemm.wgmma -o " + ptx);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string text = ReadFile(ptx);
  EXPECT_THAT(text, HasSubstr("wgmma.mma_async"));
  EXPECT_THAT(text, HasSubstr("cp.async.bulk.tensor"));
  EXPECT_THAT(text, HasSubstr(".target sm_90a"));
  EXPECT_THAT(r.out, HasSubstr("family: gemm.wgmma (version "));
  EXPECT_THAT(r.out, HasSubstr("device profile: h100-sxm, sm_90a"));
  EXPECT_THAT(r.out,
              HasSubstr("tensor map: tmap_a = A, bf16 tiled dims 4096x1000"));
  EXPECT_THAT(r.out,
              HasSubstr("tensor map: tmap_b = B, bf16 tiled dims 4096x512"));
  // Only compute capability 9.0 runs it.
  r = Cli("kernel gemm --m 1000 --n 512 --k 4096 --layout NT --dtype bf16 "
          "--family gemm.wgmma --device a100 -o " + ptx);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("needs 9.0 or later"));
}

TEST_F(FamilyCmdTest, KernelWithGemmMmaWritesTheTensorCorePtx) {
  const std::string ptx = dir_ + "/k.ptx";
  CommandResult r = Cli("kernel gemm --m 1000 --n 512 --k 4096 --layout NT "
                        "--dtype bf16 --family gemm.mma -o " + ptx);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string text = ReadFile(ptx);
  EXPECT_THAT(text, HasSubstr("mma.sync"));
  EXPECT_THAT(text, HasSubstr("ldmatrix"));
  EXPECT_THAT(text, HasSubstr("cp.async"));
  EXPECT_THAT(text, HasSubstr(".target sm_90"));
  EXPECT_THAT(r.out, HasSubstr("family: gemm.mma (version "));
  EXPECT_THAT(r.out, HasSubstr("params: bm="));
  EXPECT_THAT(r.out, HasSubstr("(the family's default)"));
  EXPECT_THAT(r.out, HasSubstr("entry: blocktune_gemm_mma\n"));
  EXPECT_THAT(r.out, HasSubstr("grid: "));
  EXPECT_THAT(r.out, HasSubstr("block: "));
  EXPECT_THAT(r.out, HasSubstr("dynamic shared bytes: "));
  EXPECT_THAT(r.out, HasSubstr("workspace bytes: 0"));

  // Given parameters, K_G > 1, sm_80 on the A100 profile, as JSON.
  r = Cli("kernel gemm --m 64 --n 16 --k 8192 --dtype tf32 --family gemm.mma "
          "--device a100 --params \"bm=64 bn=16 bk=32 wm=2 wn=1 st=4 kg=8\" "
          "--json -o " + ptx);
  ASSERT_EQ(r.code, 0) << r.out;
  const google::protobuf::Struct json = ParseJson(r.out);
  const auto& f = json.fields();
  EXPECT_EQ(f.at("family").string_value(), "gemm.mma");
  EXPECT_EQ(f.at("arch").string_value(), "sm_80");
  EXPECT_EQ(f.at("params").string_value(),
            "bm=64 bn=16 bk=32 wm=2 wn=1 st=4 kg=8 gm=8 sk=0");
  EXPECT_EQ(f.at("reduce_entry").string_value(), "blocktune_gemm_mma_reduce");
  EXPECT_EQ(f.at("workspace_bytes").number_value(), 8 * 64 * 16 * 4);
  EXPECT_EQ(f.at("grid").list_value().values(1).number_value(), 8);
  EXPECT_EQ(f.at("block").list_value().values(0).number_value(), 64);
  EXPECT_THAT(ReadFile(ptx), HasSubstr(".target sm_80"));
  EXPECT_THAT(ReadFile(ptx), HasSubstr("mma.sync.aligned.m16n8k8"));
}

TEST_F(FamilyCmdTest, KernelWithFfmaFamiliesAndPtxOnStdout) {
  CommandResult r = Cli("kernel gemm --m 100 --n 100 --k 100 --family "
                        "gemm.ffma --params \"ML=32 NL=32 MS=2 NS=2 U=8 KG=2\"");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(".visible .entry blocktune_gemm("));
  EXPECT_THAT(r.out, HasSubstr("reduce entry: blocktune_gemm_reduce"));
  EXPECT_THAT(r.out, HasSubstr("workspace bytes: 80000"));
  r = Cli("kernel conv --n 1 --h 56 --w 56 --c 64 --k 64 --r 3 --s 3 --pad 1 "
          "--family conv.ffma -o " + dir_ + "/c.ptx");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("family: conv.ffma"));
  EXPECT_THAT(ReadFile(dir_ + "/c.ptx"), HasSubstr("blocktune_conv"));
}

TEST_F(FamilyCmdTest, BadFlagsAreUsageErrorsThatNameTheFlag) {
  const std::string gemm = "kernel gemm --m 256 --n 256 --k 256 ";
  CommandResult r = Cli(gemm + "--dtype bf16 --family gemm.mma --params "
                               "\"bm=48\"");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--params: params.bm must be"));
  r = Cli(gemm + "--dtype bf16 --family gemm.mma --params \"zz=1\"");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--params: "));
  EXPECT_THAT(r.out, HasSubstr("bm bn bk wm wn st kg gm sk"));
  r = Cli(gemm + "--dtype bf16 --family gemm.mma --params \"bm=x\"");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("params.bm must be an integer"));
  // Parameters that do not fit the device.
  r = Cli(gemm + "--dtype bf16 --family gemm.mma --device a100 --params "
                 "\"bm=256 bn=256 bk=128 wm=4 wn=4 st=5\"");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("do not fit a100"));
  EXPECT_THAT(r.out, HasSubstr("shared memory"));

  r = Cli(gemm + "--dtype fp64 --family gemm.ffma");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--dtype must be one of fp32, tf32, bf16, fp16"));
  r = Cli(gemm + "--dtype int8 --family gemm.mma");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--dtype must be one of"));
  r = Cli(gemm + "--dtype fp32 --family gemm.mma");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--dtype fp32: family gemm.mma implements "
                               "bf16, fp16, tf32; for fp32 use --family "
                               "gemm.ffma"));
  r = Cli(gemm + "--dtype bf16 --family gemm.ffma");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("use --family gemm.mma"));

  r = Cli(gemm + "--dtype bf16 --family gemm.nope");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--family: family must be one of gemm.ffma, "
                               "conv.ffma, gemm.mma, conv.mma, gemm.wgmma, "
                               "conv.wgmma, gemm.wgmma_rs, gemm.mma_pk, "
                               "gemm.wgmma_pk, gemm.wgmma_ps, "
                               "conv.wgmma_ps, gemm.wgmma_ts, gemm.gemv, "
                               "gemm.ffma_k, gemm.ffma_kpk, conv.wgmma_sk, "
                               "conv.wgmma_sc, gemm.wgmma_sc; got "
                               "'gemm.nope'"));
  r = Cli(gemm + "--family conv.ffma");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--family conv.ffma computes conv, not gemm"));
  r = Cli(gemm + "--dtype bf16 --family gemm.mma --device b300");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--device"));
  r = Cli(gemm + "--dtype bf16 --family gemm.mma --arch sm_75");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--arch sm_75: family gemm.mma needs sm_80 "
                               "or later"));
  r = Cli(gemm + "--dtype bf16 --family gemm.mma --device v100");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--device v100 has compute capability "
                               "7.0; family gemm.mma needs 8.0 or later"));
  r = Cli(gemm + "--params \"bm=64\"");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("need --family"));
  r = Cli(gemm + "--family gemm.ffma --block-shape \"ML=64 NL=64 MS=4 NS=4 "
                 "U=8 KG=1\"");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--params"));
}

TEST_F(FamilyCmdTest, UnalignedRowsTakeNarrowCopies) {
  const std::string odd = "kernel gemm --m 1023 --n 4097 --k 515 --dtype "
                          "bf16 --family gemm.mma -o " + dir_ + "/k.ptx";
  CommandResult r = Cli(odd);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("alignment: lda a multiple of 1"));
  r = Cli(odd + " --lda 520 --ldb 4104");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("alignment: lda a multiple of 8"));
  // Out of range either way: a usage error naming the field (an lda of
  // 2^63 - 8 wrote a kernel whose TMA stride was -16 bytes).
  r = Cli(odd + " --lda 9223372036854775800");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("lda must be in [515, 2147483647], got 9223372036854775800"));
  r = Cli(odd + " --lda 10");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("lda, ldb, ldc must be at least the stored rows' lengths"));
}

// gemm.mma_pk: the pack entry is named, with its geometry, in the summary
// and the JSON; aligned rows are refused with the rule that says why.
TEST_F(FamilyCmdTest, PackedFamilyNamesItsPackEntry) {
  const std::string ptx = dir_ + "/k.ptx";
  CommandResult r = Cli("kernel gemm --m 777 --n 333 --k 1555 --layout NT "
                        "--dtype bf16 --family gemm.mma_pk -o " + ptx);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("family: gemm.mma_pk (version 1)"));
  EXPECT_THAT(r.out, HasSubstr("pack entry: blocktune_gemm_mma_pack, grid "));
  EXPECT_THAT(r.out, HasSubstr("(launch before entry, same stream, entry's "
                               "arguments)"));
  EXPECT_THAT(ReadFile(ptx), HasSubstr(".entry blocktune_gemm_mma_pack("));
  r = Cli("kernel gemm --m 777 --n 333 --k 1555 --layout NT --dtype tf32 "
          "--family gemm.mma_pk --json -o " + ptx);
  ASSERT_EQ(r.code, 0) << r.out;
  const google::protobuf::Struct json = ParseJson(r.out);
  const auto& f = json.fields();
  EXPECT_EQ(f.at("pack_entry").string_value(), "blocktune_gemm_mma_pack");
  EXPECT_EQ(f.at("pack_block").list_value().values(0).number_value(), 256);
  EXPECT_GT(f.at("workspace_bytes").number_value(), 777 * 1556 * 4);
  EXPECT_EQ(f.at("align_a").number_value(), 1);
  r = Cli("kernel gemm --m 1024 --n 1024 --k 1024 --dtype bf16 "
          "--family gemm.mma_pk -o " + ptx);
  EXPECT_EQ(r.code, 4) << r.out;  // no configuration fits the context
  EXPECT_THAT(r.out, HasSubstr("unaligned_rows"));
}

// gemm.wgmma_pk: its packed operands' tensor maps cover the workspace at
// an offset, named in the summary and the JSON; the PTX has both entries.
TEST_F(FamilyCmdTest, WgmmaPackedMapsCoverTheWorkspace) {
  const std::string ptx = dir_ + "/k.ptx";
  CommandResult r = Cli("kernel gemm --m 1023 --n 4097 --k 520 --layout NN "
                        "--dtype tf32 --family gemm.wgmma_pk -o " + ptx);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("family: gemm.wgmma_pk (version 1)"));
  EXPECT_THAT(r.out, HasSubstr("pack entry: blocktune_gemm_wgmma_pack, grid "));
  EXPECT_THAT(r.out, HasSubstr("tensor map: tmap_a = W+0, fp32 tiled"));
  EXPECT_THAT(r.out, HasSubstr("tensor map: tmap_b = W+"));
  EXPECT_THAT(r.out, HasSubstr("tensor map: tmap_c = C, "));
  const std::string text = ReadFile(ptx);
  EXPECT_THAT(text, HasSubstr(".entry blocktune_gemm_wgmma_pack("));
  EXPECT_THAT(text, HasSubstr("wgmma.mma_async"));
  EXPECT_THAT(text, HasSubstr("B 520 x 4097 transposed"));
  r = Cli("kernel gemm --m 1023 --n 4097 --k 520 --layout NN --dtype tf32 "
          "--family gemm.wgmma_pk --json -o " + ptx);
  ASSERT_EQ(r.code, 0) << r.out;
  const google::protobuf::Struct json = ParseJson(r.out);
  const auto& maps = json.fields().at("tensor_maps").list_value();
  ASSERT_EQ(maps.values_size(), 3);
  const auto& b = maps.values(1).struct_value().fields();
  EXPECT_EQ(b.at("operand").string_value(), "W");
  EXPECT_GT(b.at("offset").number_value(), 1023 * 544 * 4 - 1);
  EXPECT_EQ(maps.values(2).struct_value().fields().at("operand").string_value(), "C");
}

}  // namespace
}  // namespace blocktune
