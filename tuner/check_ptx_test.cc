// The measurement helpers' hand-written PTX compiles for sm_80 and sm_90
// (with nvJitLink, no GPU needed; skips where it is absent). On a GPU,
// gpu_worker_test runs them.
#include "tuner/check_ptx.h"

#include <gtest/gtest.h>

#include "kernels/ptx_compiler.h"

namespace blocktune {
namespace {

TEST(CheckPtxTest, CompilesForAmpereAndHopper) {
  auto compiler = PtxCompiler::Get();
  if (!compiler.ok()) GTEST_SKIP() << compiler.status().message();
  for (const char* arch : {"sm_80", "sm_90"}) {
    auto cubin = (*compiler)->Compile(CheckPtx(), arch);
    EXPECT_TRUE(cubin.ok()) << arch << ": " << cubin.status().message();
  }
}

}  // namespace
}  // namespace blocktune
