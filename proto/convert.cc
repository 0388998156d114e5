#include "proto/convert.h"

#include <string>
#include <utility>

#include "kernels/validate.h"

namespace blocktune {
namespace {

// Maps a proto enum to the domain enum through `table`; unspecified and
// unknown numbers are INVALID_ARGUMENT listing the allowed names.
template <typename P, typename D, size_t N>
StatusOr<D> MapEnum(P value, const std::pair<P, D> (&table)[N],
                    std::string_view field) {
  std::string allowed;
  for (const auto& [p, d] : table) {
    if (p == value) return d;
    if (!allowed.empty()) allowed += ", ";
    allowed += ToString(d);
  }
  std::string got = value == P{} ? "unspecified (0)"
                                 : std::to_string(static_cast<int>(value));
  return InvalidArgument(std::string(field) + " must be one of " + allowed +
                         "; got " + got);
}

template <typename P, typename D, size_t N>
P ToProtoEnum(D value, const std::pair<P, D> (&table)[N]) {
  for (const auto& [p, d] : table)
    if (d == value) return p;
  return P{};
}

constexpr std::pair<v1::Op, Op> kOps[] = {{v1::OP_GEMM, Op::kGemm},
                                          {v1::OP_CONV, Op::kConv}};
constexpr std::pair<v1::DType, DType> kDTypes[] = {
    {v1::DTYPE_FP32, DType::kFp32},
    {v1::DTYPE_TF32, DType::kTf32},
    {v1::DTYPE_FP16, DType::kFp16},
    {v1::DTYPE_BF16, DType::kBf16},
    {v1::DTYPE_FP64, DType::kFp64}};
constexpr std::pair<v1::Layout, Layout> kLayouts[] = {
    {v1::LAYOUT_N, Layout::kN}, {v1::LAYOUT_T, Layout::kT}};
constexpr std::pair<v1::CampaignState, CampaignState> kStates[] = {
    {v1::CAMPAIGN_STATE_QUEUED, CampaignState::kQueued},
    {v1::CAMPAIGN_STATE_RUNNING, CampaignState::kRunning},
    {v1::CAMPAIGN_STATE_DONE, CampaignState::kDone},
    {v1::CAMPAIGN_STATE_CANCELLED, CampaignState::kCancelled},
    {v1::CAMPAIGN_STATE_FAILED, CampaignState::kFailed}};

}  // namespace

StatusOr<Op> FromProto(v1::Op op, std::string_view field) {
  return MapEnum(op, kOps, field);
}
StatusOr<DType> FromProto(v1::DType dtype, std::string_view field) {
  return MapEnum(dtype, kDTypes, field);
}
StatusOr<Layout> FromProto(v1::Layout layout, std::string_view field) {
  return MapEnum(layout, kLayouts, field);
}
StatusOr<CampaignState> FromProto(v1::CampaignState state,
                                  std::string_view field) {
  return MapEnum(state, kStates, field);
}

StatusOr<DType> ContextDTypeFromProto(v1::DType dtype, std::string_view field) {
  // A client older than precisions sends none, and meant fp32.
  if (dtype == v1::DTYPE_UNSPECIFIED) return DType::kFp32;
  return FromProto(dtype, field);
}

v1::Op ToProto(Op op) { return ToProtoEnum(op, kOps); }
v1::DType ToProto(DType dtype) { return ToProtoEnum(dtype, kDTypes); }
v1::Layout ToProto(Layout layout) { return ToProtoEnum(layout, kLayouts); }
v1::CampaignState ToProto(CampaignState state) {
  return ToProtoEnum(state, kStates);
}

StatusOr<Context> FromProto(const v1::Context& ctx, std::string_view field) {
  if (ctx.has_gemm()) {
    const v1::GemmContext& p = ctx.gemm();
    const std::string f = JoinField(field, "gemm");
    GemmContext g;
    g.m = p.m();
    g.n = p.n();
    g.k = p.k();
    BT_ASSIGN_OR_RETURN(g.layout_a,
                        FromProto(p.layout_a(), JoinField(f, "layout_a")));
    BT_ASSIGN_OR_RETURN(g.layout_b,
                        FromProto(p.layout_b(), JoinField(f, "layout_b")));
    BT_ASSIGN_OR_RETURN(g.dtype,
                        ContextDTypeFromProto(p.dtype(), JoinField(f, "dtype")));
    BT_RETURN_IF_ERROR(Validate(g, f));
    return Context(g);
  }
  if (ctx.has_conv()) {
    const v1::ConvContext& p = ctx.conv();
    const std::string f = JoinField(field, "conv");
    ConvContext c;
    c.n = p.n();
    c.h = p.h();
    c.w = p.w();
    c.c = p.c();
    c.k = p.k();
    c.r = p.r();
    c.s = p.s();
    c.pad_h = p.pad_h();
    c.pad_w = p.pad_w();
    c.stride_h = p.stride_h();
    c.stride_w = p.stride_w();
    c.dilation_h = p.dilation_h();
    c.dilation_w = p.dilation_w();
    BT_ASSIGN_OR_RETURN(c.dtype,
                        ContextDTypeFromProto(p.dtype(), JoinField(f, "dtype")));
    BT_RETURN_IF_ERROR(Validate(c, f));
    return Context(c);
  }
  return InvalidArgument(std::string(field) +
                         " is required: set one of gemm or conv");
}

void ToProto(const Context& ctx, v1::Context* out) {
  if (const auto* g = std::get_if<GemmContext>(&ctx)) {
    v1::GemmContext* p = out->mutable_gemm();
    p->set_m(g->m);
    p->set_n(g->n);
    p->set_k(g->k);
    p->set_layout_a(ToProto(g->layout_a));
    p->set_layout_b(ToProto(g->layout_b));
    p->set_dtype(ToProto(g->dtype));
    return;
  }
  const auto& c = std::get<ConvContext>(ctx);
  v1::ConvContext* p = out->mutable_conv();
  p->set_n(c.n);
  p->set_h(c.h);
  p->set_w(c.w);
  p->set_c(c.c);
  p->set_k(c.k);
  p->set_r(c.r);
  p->set_s(c.s);
  p->set_pad_h(c.pad_h);
  p->set_pad_w(c.pad_w);
  p->set_stride_h(c.stride_h);
  p->set_stride_w(c.stride_w);
  p->set_dilation_h(c.dilation_h);
  p->set_dilation_w(c.dilation_w);
  p->set_dtype(ToProto(c.dtype));
}

StatusOr<BlockShape> FromProto(const v1::BlockShape& p,
                               std::string_view field) {
  BlockShape xb;
  xb.ml = p.ml();
  xb.nl = p.nl();
  xb.ms = p.ms();
  xb.ns = p.ns();
  xb.u = p.u();
  xb.kg = p.kg();
  xb.st = p.st() == 0 ? 1 : p.st();  // absent: a client from before ST
  BT_RETURN_IF_ERROR(Validate(xb, field));
  return xb;
}

void ToProto(const BlockShape& xb, v1::BlockShape* out) {
  out->set_ml(xb.ml);
  out->set_nl(xb.nl);
  out->set_ms(xb.ms);
  out->set_ns(xb.ns);
  out->set_u(xb.u);
  out->set_kg(xb.kg);
  if (xb.st != 1) out->set_st(xb.st);
}

StatusOr<DeviceFingerprint> FromProto(const v1::DeviceFingerprint& p,
                                      std::string_view field) {
  DeviceFingerprint d;
  d.name = p.name();
  d.cc_major = p.cc_major();
  d.cc_minor = p.cc_minor();
  d.sm_count = p.sm_count();
  d.memory_bytes = p.memory_bytes();
  d.sm_clock_mhz = p.sm_clock_mhz();
  d.memory_clock_mhz = p.memory_clock_mhz();
  d.driver_version = p.driver_version();
  d.cuda_version = p.cuda_version();
  d.ptxas_version = p.ptxas_version();
  BT_RETURN_IF_ERROR(Validate(d, field));
  return d;
}

void ToProto(const DeviceFingerprint& d, v1::DeviceFingerprint* out) {
  out->set_name(d.name);
  out->set_cc_major(d.cc_major);
  out->set_cc_minor(d.cc_minor);
  out->set_sm_count(d.sm_count);
  out->set_memory_bytes(d.memory_bytes);
  out->set_sm_clock_mhz(d.sm_clock_mhz);
  out->set_memory_clock_mhz(d.memory_clock_mhz);
  out->set_driver_version(d.driver_version);
  out->set_cuda_version(d.cuda_version);
  out->set_ptxas_version(d.ptxas_version);
}

StatusOr<CampaignSpec> FromProto(const v1::CampaignSpec& p,
                                 std::string_view field) {
  CampaignSpec spec;
  BT_ASSIGN_OR_RETURN(spec.op, FromProto(p.op(), JoinField(field, "op")));
  BT_ASSIGN_OR_RETURN(spec.dtype, ContextDTypeFromProto(
                                      p.dtype(), JoinField(field, "dtype")));
  spec.gpus.assign(p.gpus().begin(), p.gpus().end());
  spec.sampler = p.sampler().empty() ? "bayes" : p.sampler();
  spec.minutes = p.minutes();
  spec.max_samples = p.max_samples();
  spec.seed = p.seed();
  spec.label = p.label();
  spec.families.assign(p.families().begin(), p.families().end());
  spec.retune_stale = p.retune_stale();
  spec.min_flops = p.min_flops();
  spec.max_flops = p.max_flops();
  BT_RETURN_IF_ERROR(Validate(spec, field));
  return spec;
}

void ToProto(const CampaignSpec& spec, v1::CampaignSpec* out) {
  out->set_op(ToProto(spec.op));
  out->set_dtype(ToProto(spec.dtype));
  for (int gpu : spec.gpus) out->add_gpus(gpu);
  out->set_sampler(spec.sampler);
  out->set_minutes(spec.minutes);
  out->set_max_samples(spec.max_samples);
  out->set_seed(spec.seed);
  out->set_label(spec.label);
  for (const std::string& f : spec.families) out->add_families(f);
  out->set_retune_stale(spec.retune_stale);
  out->set_min_flops(spec.min_flops);
  out->set_max_flops(spec.max_flops);
}

}  // namespace blocktune
