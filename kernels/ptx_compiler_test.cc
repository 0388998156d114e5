// nvJitLink needs no GPU: where the library is installed, generated PTX
// must compile to a cubin, and bad PTX must fail with the compiler's log.
#include "kernels/ptx_compiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/gemm_ptx.h"
#include "kernels/gemm_wgmma.h"

#include <cstdlib>

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
  EXPECT_THAT((*compiler)->version(),
              ::testing::EndsWith(FindPtxas().empty() ? "; setmaxnreg: driver JIT"
                                                      : "; setmaxnreg: ptxas"));
}

// nvJitLink compiles a separate unit and drops setmaxnreg (C7504): such a
// kernel (gemm.wgmma with two consumer warpgroups) is assembled again as a
// whole program by ptxas, or handed to the driver's JIT as PTX where there
// is no ptxas; a kernel without setmaxnreg stays nvJitLink's.
TEST(PtxCompilerTest, KernelsThatSetTheirRegistersCompileAsAWholeProgram) {
  auto compiler = PtxCompiler::Get();
  if (!compiler.ok()) GTEST_SKIP() << compiler.status().message();
  GemmContext g;
  g.m = g.n = g.k = 4096;
  g.layout_a = Layout::kN;
  g.layout_b = Layout::kT;
  g.dtype = DType::kBf16;
  WgmmaParams two;
  two.bm = 128;
  two.bn = 256;
  two.bk = 64;
  two.stages = 4;
  two.consumers = 2;
  WgmmaParams one = two;
  one.bn = 128;
  one.consumers = 1;
  auto k2 = GenerateGemmWgmma(Problem(g), two);
  auto k1 = GenerateGemmWgmma(Problem(g), one);
  ASSERT_TRUE(k2.ok() && k1.ok());
  ASSERT_NE(k2->ptx.find("setmaxnreg"), std::string::npos);
  ASSERT_EQ(k1->ptx.find("setmaxnreg"), std::string::npos);

  PtxCompiler::Report report;
  auto image = (*compiler)->Compile(k1->ptx, "sm_90a", &report);
  ASSERT_TRUE(image.ok()) << image.status().message();
  EXPECT_EQ(report.path, "nvJitLink");
  EXPECT_EQ(image->substr(0, 4), "\x7f" "ELF");

  image = (*compiler)->Compile(k2->ptx, "sm_90a", &report);
  ASSERT_TRUE(image.ok()) << image.status().message();
  if (FindPtxas().empty()) {
    EXPECT_EQ(report.path, "driver JIT");
    EXPECT_EQ(*image, k2->ptx);
  } else {
    EXPECT_EQ(report.path, "ptxas");
    EXPECT_EQ(image->substr(0, 4), "\x7f" "ELF");
    EXPECT_THAT(report.ptxas_log, ::testing::Not(::testing::HasSubstr("C75")));
  }

  // No ptxas: the PTX itself, for the driver's JIT.
  const char* saved = std::getenv("BLOCKTUNE_PTXAS");
  const std::string keep = saved ? saved : "";
  setenv("BLOCKTUNE_PTXAS", "", 1);
  image = (*compiler)->Compile(k2->ptx, "sm_90a", &report);
  if (saved)
    setenv("BLOCKTUNE_PTXAS", keep.c_str(), 1);
  else
    unsetenv("BLOCKTUNE_PTXAS");
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(report.path, "driver JIT");
  EXPECT_EQ(*image, k2->ptx);
  // What sends it there: nvJitLink's own log.
  EXPECT_THAT(report.info_log, ::testing::HasSubstr("(C7504)"));

  // A ptxas that fails says so with its output.
  std::string log;
  auto bad = AssembleWholeProgram(FindPtxas().empty() ? "/bin/false"
                                                      : FindPtxas(),
                                  ".version 8.0\n.target sm_90\nnonsense;\n",
                                  "sm_90", &log);
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace blocktune
