// Fuzzes the context text parser: "gemm m=4096 n=16 k=4096 layout=NT
// dtype=fp32", the form the store keys answers on and shape files
// (blocktune export --shapes, the oracle's lists) are written in, optionally
// followed by " | " and a block shape "ML=64 NL=64 MS=4 NS=4 U=8 KG=1".
//
// Beyond "no crash, no UB": what parses must validate, print back to the
// same value, and give the derived quantities (FLOPs, bytes, the implicit
// GEMM, the hardware rules) without overflow.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kernels/block_shape.h"
#include "kernels/context.h"
#include "kernels/gemm_ptx.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

void Derived(const blocktune::Context& ctx) {
  using namespace blocktune;
  Check(Validate(ctx).ok());
  const std::string text = ToString(ctx);
  auto again = ContextFromString(text);
  Check(again.ok() && *again == ctx);
  Check(Flops(ctx) > 0);
  Check(MinBytes(ctx) > 0);
  GemmShape g = ImplicitGemm(ctx);
  Check(g.m >= 1 && g.n >= 1 && g.k >= 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace blocktune;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t bar = input.find(" | ");
  const std::string_view ctx_text = input.substr(0, bar);

  int64_t h = 0, w = 0;
  (void)ParseWindowPair("pad", ctx_text, &h, &w);

  auto ctx = ContextFromString(ctx_text);
  if (ctx.ok()) Derived(*ctx);
  if (bar == std::string_view::npos) return 0;

  auto xb = BlockShapeFromString(input.substr(bar + 3));
  if (!xb.ok()) return 0;
  Check(Validate(*xb).ok());
  auto xb_again = BlockShapeFromString(ToString(*xb));
  Check(xb_again.ok() && *xb_again == *xb);
  if (!ctx.ok()) return 0;
  // What a shape file's line goes through before a kernel is generated.
  Check(ProgramsInGrid(*ctx, *xb) >= 1);
  (void)KernelRegisterEstimate(*ctx, *xb);
  (void)FirstFailingHardwareRule(*ctx, *xb, KernelLimits{});
  (void)CanImplement(*ctx, *xb, KernelLimits{});
  return 0;
}
