// nvJitLink needs no GPU: where the library is installed, generated PTX
// must compile to a cubin, and bad PTX must fail with the compiler's log.
#include "kernels/ptx_compiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/gemm_ptx.h"

namespace blocktune {
namespace {

TEST(PtxCompilerTest, GeneratedKernelsCompileAndBadPtxSaysWhy) {
  auto compiler = PtxCompiler::Get();
  if (!compiler.ok()) GTEST_SKIP() << compiler.status().message();
  GemmContext g;
  g.m = 1000;
  g.n = 77;
  g.k = 300;
  for (const char* arch : {"sm_90", "sm_80"}) {
    auto kernel = GenerateGemm(g, BlockShape{64, 32, 4, 4, 8, 2}, arch);
    ASSERT_TRUE(kernel.ok());
    auto cubin = (*compiler)->Compile(kernel->ptx, arch);
    ASSERT_TRUE(cubin.ok()) << cubin.status().message();
    EXPECT_EQ(cubin->substr(0, 4), "\x7f" "ELF");
  }
  auto bad = (*compiler)->Compile(".version 8.0\n.target sm_90\nnonsense;\n",
                                  "sm_90");
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("does not compile"));
  EXPECT_THAT((*compiler)->version(), ::testing::StartsWith("nvJitLink "));
}

}  // namespace
}  // namespace blocktune
