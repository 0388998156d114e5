// conv.wgmma (conv_wgmma.h): rules, tensor maps and the kernel; the PTX is
// gemm.wgmma's emitter (gemm_wgmma_ptx.h MainEntry) with Tiling::conv.
#include "kernels/conv_wgmma.h"

#include "kernels/gemm_mma_ptx.h"
#include "kernels/gemm_wgmma_ptx.h"

namespace blocktune {

using wgmma_internal::Tiling;

namespace {

int64_t Esize(const ConvContext& c) { return WgmmaElementBytes(c.dtype); }

// The im2col box's corners per spatial dim (W, then H): the first output
// pixel's input pixel is -pad from the image's origin; the last one's is
// dilation * (R - 1) - pad before the far edge (the box spans the input
// pixels under the filter's first tap).
int64_t LowerW(const ConvContext& c) { return -c.pad_w; }
int64_t LowerH(const ConvContext& c) { return -c.pad_h; }
int64_t UpperW(const ConvContext& c) {
  return c.pad_w - c.dilation_w * (c.s - 1);
}
int64_t UpperH(const ConvContext& c) {
  return c.pad_h - c.dilation_h * (c.r - 1);
}
bool InCorner(int64_t v) { return v >= -128 && v <= 127; }

}  // namespace

const char* ToString(ConvWgmmaRule rule) {
  switch (rule) {
    case ConvWgmmaRule::kNone:
      return "none";
    case ConvWgmmaRule::kComputeCapability:
      return "compute_capability";
    case ConvWgmmaRule::kSwizzleRow:
      return "swizzle_row";
    case ConvWgmmaRule::kSharedMemory:
      return "shared_memory";
    case ConvWgmmaRule::kRegisters:
      return "registers";
    case ConvWgmmaRule::kAlignment:
      return "alignment";
    case ConvWgmmaRule::kStride:
      return "stride";
    case ConvWgmmaRule::kCorners:
      return "corners";
    case ConvWgmmaRule::kGrid:
      return "grid";
  }
  return "?";
}

bool PassesConvWgmmaRule(ConvWgmmaRule rule, const ConvContext& c,
                         const WgmmaParams& p, const KernelLimits& limits) {
  const int64_t esize = Esize(c);
  switch (rule) {
    case ConvWgmmaRule::kNone:
      return true;
    case ConvWgmmaRule::kComputeCapability:
      return PassesWgmmaTileRule(WgmmaRule::kComputeCapability, c.dtype, p,
                                 limits);
    case ConvWgmmaRule::kSwizzleRow:
      return PassesWgmmaTileRule(WgmmaRule::kSwizzleRow, c.dtype, p, limits);
    case ConvWgmmaRule::kSharedMemory:
      return PassesWgmmaTileRule(WgmmaRule::kSharedMemory, c.dtype, p, limits);
    case ConvWgmmaRule::kRegisters:
      return PassesWgmmaTileRule(WgmmaRule::kRegisters, c.dtype, p, limits);
    case ConvWgmmaRule::kAlignment:
      return c.c * esize % 16 == 0 && c.k * esize % 16 == 0;
    case ConvWgmmaRule::kStride:
      return c.stride_h <= 8 && c.stride_w <= 8;
    case ConvWgmmaRule::kCorners:
      return InCorner(LowerW(c)) && InCorner(LowerH(c)) &&
             InCorner(UpperW(c)) && InCorner(UpperH(c)) &&
             c.dilation_w * (c.s - 1) <= 255 &&
             c.dilation_h * (c.r - 1) <= 255;
    case ConvWgmmaRule::kGrid: {
      const GemmShape g = ImplicitGemm(c);
      return g.m < (int64_t{1} << 31) &&
             CeilDiv(g.m, p.bm) * CeilDiv(g.n, p.bn) * p.kg <= 2147483647;
    }
  }
  return false;
}

Status CanImplementConvWgmma(const ConvContext& c, const WgmmaParams& p,
                             const KernelLimits& limits) {
  ConvWgmmaRule failed = ConvWgmmaRule::kNone;
  for (ConvWgmmaRule rule : kConvWgmmaRules) {
    if (!PassesConvWgmmaRule(rule, c, p, limits)) {
      failed = rule;
      break;
    }
  }
  const std::string name = ToString(failed);
  const int64_t esize = Esize(c);
  switch (failed) {
    case ConvWgmmaRule::kNone:
      return OkStatus();
    case ConvWgmmaRule::kComputeCapability:
      return FailedPrecondition(
          name + ": conv.wgmma is sm_90a code (wgmma, setmaxnreg), which runs "
          "on compute capability 9.0 only; the device has " +
          N(limits.compute_capability / 10) + "." +
          N(limits.compute_capability % 10));
    case ConvWgmmaRule::kSwizzleRow:
      return FailedPrecondition(
          name + ": the 128-byte swizzle needs bk * element bytes a multiple "
          "of 128; got bk " + N(p.bk) + " * " + N(esize));
    case ConvWgmmaRule::kSharedMemory:
      return FailedPrecondition(
          name + ": " + N(WgmmaSharedBytes(c.dtype, p)) +
          " B of shared memory exceed " + N(limits.max_dynamic_shared_bytes) +
          " B");
    case ConvWgmmaRule::kRegisters:
      return FailedPrecondition(
          name + ": an estimated " + N(WgmmaRegisterEstimate(p)) +
          " registers per consumer thread exceed the budget of " +
          N(WgmmaRegisterBudget(p)));
    case ConvWgmmaRule::kAlignment:
      return FailedPrecondition(
          name + ": TMA needs 16-byte strides, so C and K must be multiples "
          "of " + N(16 / esize) + " elements; got C " + N(c.c) + ", K " +
          N(c.k) + " (conv.mma takes any C and K)");
    case ConvWgmmaRule::kStride:
      return FailedPrecondition(
          name + ": TMA steps at most 8 elements, so stride_h and stride_w "
          "must be in [1, 8]; got " + N(c.stride_h) + ", " + N(c.stride_w));
    case ConvWgmmaRule::kCorners:
      return FailedPrecondition(
          name + ": the im2col box corners (-pad and pad - dilation * "
          "(filter - 1), per dimension) must be in [-128, 127] and the taps' "
          "offsets dilation * (filter - 1) in [0, 255]; got W " +
          N(LowerW(c)) + ".." + N(UpperW(c)) + ", H " + N(LowerH(c)) + ".." +
          N(UpperH(c)) + ", offsets " + N(c.dilation_w * (c.s - 1)) + ", " +
          N(c.dilation_h * (c.r - 1)));
    case ConvWgmmaRule::kGrid:
      return FailedPrecondition(name +
                                ": N*P*Q must be below 2^31 and the tiles "
                                "(times kg) at most 2^31 - 1");
  }
  return Internal("unknown rule");
}

TensorMapSpec ConvWgmmaTensorMap(const ConvContext& c, const WgmmaParams& p,
                                 char operand) {
  const int64_t esize = Esize(c);
  const uint32_t atom = static_cast<uint32_t>(128 / esize);
  const TensorMapType type = wgmma_internal::MapTypeOf(c.dtype);
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  if (operand == 'c' || operand == 'C') {
    // Y: N*P*Q rows of K, gemm.wgmma's C box.
    const GemmShape g = ImplicitGemm(c);
    return TensorMapSpec::Matrix(type, u(g.n), u(g.m), u(g.n * esize), atom,
                                 64);
  }
  TensorMapSpec m;
  m.type = type;
  if (operand == 'b' || operand == 'B') {
    // F: K rows of R*S taps of C channels.
    m.rank = 3;
    m.dims[0] = u(c.c);
    m.dims[1] = u(c.r * c.s);
    m.dims[2] = u(c.k);
    m.strides[0] = u(c.c * esize);
    m.strides[1] = u(c.r * c.s * c.c * esize);
    m.box[0] = atom;
    m.box[1] = 1;
    m.box[2] = static_cast<uint32_t>(p.bn);
    return m;
  }
  // X: (C, W, H, N), bm pixels of 128 bytes of channels per copy.
  m.mode = TensorMapMode::kIm2col;
  m.rank = 4;
  m.dims[0] = u(c.c);
  m.dims[1] = u(c.w);
  m.dims[2] = u(c.h);
  m.dims[3] = u(c.n);
  m.strides[0] = u(c.c * esize);
  m.strides[1] = u(c.w * c.c * esize);
  m.strides[2] = u(c.h * c.w * c.c * esize);
  m.lower[0] = static_cast<int32_t>(LowerW(c));
  m.lower[1] = static_cast<int32_t>(LowerH(c));
  m.upper[0] = static_cast<int32_t>(UpperW(c));
  m.upper[1] = static_cast<int32_t>(UpperH(c));
  m.channels = atom;
  m.pixels = static_cast<uint32_t>(p.bm);
  m.element_strides[1] = static_cast<uint32_t>(c.stride_w);
  m.element_strides[2] = static_cast<uint32_t>(c.stride_h);
  return m;
}

int64_t ConvWgmmaKTiles(const ConvContext& c, const WgmmaParams& p) {
  return c.r * c.s * CeilDiv(c.c, p.bk);
}

int64_t ConvWgmmaWorkspaceBytes(const ConvContext& c, const WgmmaParams& p) {
  if (p.kg <= 1 || p.split_cluster) return 0;
  const GemmShape g = ImplicitGemm(c);
  return p.kg * g.m * g.n * 4;
}

std::vector<KernelParam> ConvWgmmaEntryParams(bool split) {
  std::vector<KernelParam> params = {
          {"tmap_a", "b8[128]", 0, 128, "CUtensorMap of the input (im2col)"},
          {"tmap_b", "b8[128]", 128, 128, "CUtensorMap of the filter"},
          {"tmap_c", "b8[128]", 256, 128, "CUtensorMap of the output"},
          {"C", "u64", 384, 8, "output device address"},
          {"M", "u32", 392, 4, "output pixels N*P*Q"},
          {"N", "u32", 396, 4, "output channels K"},
          {"K", "u32", 400, 4, "reduction length C*R*S"},
          {"ldc", "u32", 404, 4, "output row stride (K)"},
          {"alpha", "f32", 408, 4, "scale of the convolution"},
          {"beta", "f32", 412, 4, "scale of the output"},
          {"C_in", "u32", 416, 4, "input channels"},
          {"P", "u32", 420, 4, "output height"},
          {"Q", "u32", 424, 4, "output width"},
          {"S", "u32", 428, 4, "filter width"},
          {"pad_h", "u32", 432, 4, "padding, height"},
          {"pad_w", "u32", 436, 4, "padding, width"},
          {"stride_h", "u32", 440, 4, "stride, height"},
          {"stride_w", "u32", 444, 4, "stride, width"},
          {"dilation_h", "u32", 448, 4, "dilation, height"},
          {"dilation_w", "u32", 452, 4, "dilation, width"}};
  if (split) {
    params.push_back(
        {"W", "u64", 456, 8, "workspace: the splits' fp32 partial sums"});
  }
  return params;
}

StatusOr<ConvWgmmaKernel> GenerateConvWgmma(const ConvContext& c,
                                            const WgmmaParams& p,
                                            const std::string& arch) {
  BT_RETURN_IF_ERROR(Validate(Context(c)));
  // kg's own range here (conv.wgmma_sk's domain goes past gemm.wgmma's);
  // the rest as gemm.wgmma validates it.
  WgmmaParams unsplit = p;
  unsplit.kg = 1;
  BT_RETURN_IF_ERROR(ValidateWgmmaParams(unsplit));
  if (p.kg < 1 || p.kg > kConvWgmmaMaxSplit) {
    return InvalidArgument("params.kg: conv.wgmma splits the reduction over "
                           "1 to " + N(kConvWgmmaMaxSplit) +
                           " programs, got " + N(p.kg));
  }
  if (p.split_cluster && (p.kg < 2 || p.kg > kConvWgmmaMaxClusterSplit)) {
    return InvalidArgument(
        "params.kg: conv.wgmma_sc splits the reduction over the 2 to " +
        N(kConvWgmmaMaxClusterSplit) + " programs of a cluster, got " +
        N(p.kg));
  }
  if (c.dtype != DType::kBf16 && c.dtype != DType::kFp16 &&
      c.dtype != DType::kTf32) {
    return InvalidArgument("context.dtype: conv.wgmma implements bf16, fp16 "
                           "and tf32, got " +
                           std::string(ToString(c.dtype)));
  }
  if (p.cluster_m != 1)
    return InvalidArgument("params: conv.wgmma has cm = 1, got " +
                           ToString(p));
  if (const int64_t ktiles = ConvWgmmaKTiles(c, p); p.kg > ktiles) {
    return InvalidArgument(
        "params.kg: " + N(p.kg) + " splits of a reduction of " + N(ktiles) +
        " k tiles (R*S taps of ceil(C / bk) channel steps) leave a split "
        "without work");
  }
  if (arch != "sm_90a") {
    return InvalidArgument("arch must be sm_90a (wgmma and setmaxnreg), got '" +
                           arch + "'");
  }
  // Rules that make the text or the maps wrong, whatever the device.
  for (ConvWgmmaRule rule :
       {ConvWgmmaRule::kSwizzleRow, ConvWgmmaRule::kAlignment,
        ConvWgmmaRule::kStride, ConvWgmmaRule::kCorners,
        ConvWgmmaRule::kGrid}) {
    if (!PassesConvWgmmaRule(rule, c, p, KernelLimits{}))
      return CanImplementConvWgmma(c, p, KernelLimits{});
  }
  Tiling t(c.dtype, /*a_t=*/false, /*b_t=*/true, p);
  t.conv = true;
  ConvWgmmaKernel k;
  k.ptx = wgmma_internal::MainEntry(t, arch);
  const GemmShape g = ImplicitGemm(c);
  k.grid = {static_cast<unsigned>(CeilDiv(g.m, p.bm) * CeilDiv(g.n, p.bn) *
                                  p.kg),
            1, 1};
  if (t.split_cluster) {
    k.cluster = static_cast<unsigned>(p.kg);
  } else if (p.kg > 1) {
    mma_internal::AddReduceLaunch(
        mma_internal::MakeReduceLaunch(c.dtype, p.kg, g.m, g.n, arch), &k);
    k.workspace_bytes = ConvWgmmaWorkspaceBytes(c, p);
  }
  k.block = {static_cast<unsigned>(p.Threads()), 1, 1};
  k.shared_bytes = static_cast<unsigned>(WgmmaSharedBytes(c.dtype, p));
  k.map_a = ConvWgmmaTensorMap(c, p, 'a');
  k.map_b = ConvWgmmaTensorMap(c, p, 'b');
  k.map_c = ConvWgmmaTensorMap(c, p, 'c');
  k.element_bytes = static_cast<int>(t.esize);
  return k;
}

}  // namespace blocktune
