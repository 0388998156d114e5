#include "client/print.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

#include "proto/convert.h"

namespace blocktune {
namespace {

std::string Seconds(double s) {
  char buf[32];
  if (s >= 1) std::snprintf(buf, sizeof(buf), "%.3f s", s);
  else if (s >= 1e-3) std::snprintf(buf, sizeof(buf), "%.3f ms", s * 1e3);
  else std::snprintf(buf, sizeof(buf), "%.1f us", s * 1e6);
  return buf;
}

std::string DeviceLine(const v1::DeviceFingerprint& p) {
  auto device = FromProto(p, "device");
  return device.ok() ? ToString(*device) : p.name();
}

// " (N stale)" where N > 0.
std::string StaleSuffix(int64_t n) {
  return n > 0 ? " (" + std::to_string(n) + " stale)" : std::string();
}

}  // namespace

std::string KernelConfigText(const v1::KernelConfig& k) {
  if (k.family().empty()) return "?";
  std::string out = k.family() + " v" + std::to_string(k.generator_version());
  for (const v1::ConfigParam& p : k.params())
    out += " " + p.name() + "=" + std::to_string(p.value());
  return out;
}

std::string ConfigText(const v1::KernelConfig& kernel,
                       const v1::BlockShape* block_shape) {
  if (block_shape != nullptr) {
    auto xb = FromProto(*block_shape, "block_shape");
    if (xb.ok()) {
      return ToString(*xb) + "  " + kernel.family() + " v" +
             std::to_string(kernel.generator_version());
    }
  }
  return KernelConfigText(kernel);
}

const char* SourceName(v1::Source source) {
  switch (source) {
    case v1::SOURCE_MEASURED: return "measured";
    case v1::SOURCE_PREDICTED: return "predicted";
    case v1::SOURCE_IMPORTED: return "imported";
    case v1::SOURCE_VERIFIED: return "verified";
    case v1::SOURCE_DEFAULT: return "default";
    default: return "unknown";
  }
}

const char* QuerySourceName(const v1::QueryResponse& r) {
  switch (r.source()) {
    case v1::QUERY_SOURCE_CACHED: return "cached";
    case v1::QUERY_SOURCE_PREDICTED: return "predicted";
    case v1::QUERY_SOURCE_VERIFIED: return "verified";
    case v1::QUERY_SOURCE_FALLBACK:
      return r.match() == v1::MATCH_NEAREST ? "nearest"
             : r.match() == v1::MATCH_STALE ? "stale"
                                            : "default";
    default: return "unknown";
  }
}

namespace {

const char* StateName(v1::CampaignState state) {
  auto parsed = FromProto(state, "state");
  return parsed.ok() ? ToString(*parsed).data() : "unknown";
}

}  // namespace

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  auto status =
      google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) return "{\"error\": \"cannot print as JSON\"}\n";
  return json;
}

void Print(const v1::HealthResponse& h, std::ostream& out) {
  out << "blocktuned " << h.version() << ", up " << h.uptime_seconds()
      << " s\n"
      << "store      " << h.database() << " (schema v" << h.schema_version()
      << "): " << h.samples() << " samples, " << h.tuned_answers()
      << " tuned answers, " << h.models() << " models\n"
      << "stale      " << h.stale_samples() << " samples, "
      << h.stale_tuned_answers() << " tuned answers, " << h.stale_models()
      << " models of older generator versions (kept, never trained on or "
         "answered with)\n"
      << "gpus       " << h.gpus_visible() << " visible";
  if (!h.gpu_status().empty()) out << ": " << h.gpu_status();
  out << "\n";
}

void Print(const v1::ListDevicesResponse& r, std::ostream& out) {
  if (r.devices().empty()) {
    out << "no devices known yet: a campaign or an import adds the GPU it "
           "measured\n";
    return;
  }
  for (const v1::Device& d : r.devices()) {
    out << DeviceLine(d.fingerprint()) << "\n    "
        << (d.attached() ? "attached" : "not attached") << ", " << d.samples()
        << " samples" << StaleSuffix(d.stale_samples()) << ", "
        << d.tuned_answers() << " tuned answers"
        << StaleSuffix(d.stale_tuned_answers()) << "\n";
  }
}

void Print(const v1::Campaign& c, std::ostream& out) {
  auto op = FromProto(c.spec().op(), "op");
  auto dtype = ContextDTypeFromProto(c.spec().dtype(), "dtype");
  out << "campaign " << c.id() << " " << StateName(c.state()) << " ("
      << (op.ok() ? ToString(*op) : std::string_view("?")) << " "
      << (dtype.ok() ? ToString(*dtype) : std::string_view("?"));
  for (int i = 0; i < c.spec().families_size(); ++i)
    out << (i ? "," : " ") << c.spec().families(i);
  if (c.spec().retune_stale()) out << ", retune stale";
  if (c.spec().min_flops() > 0 || c.spec().max_flops() > 0) {
    char work[64];
    std::snprintf(work, sizeof work, ", work %.3g to %.3g flop",
                  c.spec().min_flops(),
                  c.spec().max_flops() > 0 ? c.spec().max_flops()
                                              : kDefaultMaxFlops);
    out << work;
  }
  if (c.spec().sampler() == "guided") out << ", guided";
  out << "): " << c.samples_ok() << " ok, " << c.samples_failed() << " failed";
  if (!c.spec().label().empty()) out << " [" << c.spec().label() << "]";
  if (!c.message().empty()) out << " (" << c.message() << ")";
  out << "\n";
}

void Print(const v1::CampaignProgress& p, std::ostream& out) {
  out << ProgressLine(p, 0) << "\n";
}

std::string ProgressLine(const v1::CampaignProgress& p, int bar_width) {
  const v1::Campaign& c = p.campaign();
  std::string state = v1::CampaignState_Name(c.state());
  state = state.substr(std::string("CAMPAIGN_STATE_").size());
  for (char& ch : state) ch = static_cast<char>(std::tolower(ch));
  char buf[160];
  std::string line = "campaign " + std::to_string(c.id()) + " " + state;
  const double fraction =
      p.target() > 0 ? std::min(1.0, double(p.done()) / p.target())
      : c.spec().minutes() > 0
          ? std::min(1.0, p.elapsed_seconds() / (60.0 * c.spec().minutes()))
          : 0;
  if (bar_width > 0) {
    const int filled = static_cast<int>(fraction * bar_width + 0.5);
    line += " [" + std::string(filled, '#') +
            std::string(bar_width - filled, ' ') + "]";
  }
  std::snprintf(buf, sizeof(buf), " %lld%s%s %.1f%%  %.1f samples/s  acc %.1f%%",
                static_cast<long long>(p.done()), p.target() > 0 ? "/" : "",
                p.target() > 0 ? std::to_string(p.target()).c_str() : "",
                100 * fraction, p.samples_per_second(), 100 * p.acceptance());
  line += buf;
  int64_t failed = 0;
  std::string kinds;
  for (const auto& [kind, n] : p.failures()) {
    failed += n;
    kinds += (kinds.empty() ? "" : ", ") + kind + " " + std::to_string(n);
  }
  line += "  fail " + std::to_string(failed);
  if (!kinds.empty()) line += " (" + kinds + ")";
  std::snprintf(buf, sizeof(buf), "  verified %lld  best %.1f TFLOP/s",
                static_cast<long long>(p.verified()), p.best_tflops());
  line += buf;
  if (!p.samples_by_family().empty()) {
    // The family mix, in name order (a proto map has none).
    std::map<std::string, int64_t> mix(p.samples_by_family().begin(),
                                       p.samples_by_family().end());
    std::string families;
    for (const auto& [family, n] : mix)
      families += (families.empty() ? "" : ", ") + family + " " + std::to_string(n);
    line += "  families " + families;
  }
  if (!p.samples_by_daemon().empty()) {
    // Each daemon's share, in name order.
    std::map<std::string, int64_t> shares(p.samples_by_daemon().begin(),
                                          p.samples_by_daemon().end());
    int64_t total = 0;
    for (const auto& [daemon, n] : shares) total += n;
    std::string daemons;
    for (const auto& [daemon, n] : shares) {
      std::snprintf(buf, sizeof(buf), " %lld (%.0f%%)",
                    static_cast<long long>(n),
                    total > 0 ? 100.0 * n / total : 0.0);
      daemons += (daemons.empty() ? "" : ", ") + daemon + buf;
    }
    line += "  daemons " + daemons;
  }
  if (p.eta_seconds() >= 0 && c.state() == v1::CAMPAIGN_STATE_RUNNING) {
    std::snprintf(buf, sizeof(buf), "  ETA %.0fs", p.eta_seconds());
    line += buf;
  }
  return line;
}

void Print(const v1::QueryResponse& r, std::ostream& out) {
  out << "source: " << QuerySourceName(r);
  if (r.candidates() > 0) {
    char took[64];
    std::snprintf(took, sizeof(took), " (%lld configurations scored in %.1f ms)",
                  static_cast<long long>(r.candidates()),
                  1e3 * r.search_seconds());
    out << took;
  }
  out << "\n";
  if (!r.note().empty()) out << "note: " << r.note() << "\n";
  for (int i = 0; i < r.answers_size(); ++i) {
    const v1::TunedAnswer& a = r.answers(i);
    auto ctx = FromProto(a.context(), "context");
    if (i == 0 && ctx.ok()) out << ToString(*ctx) << "\n";
    char tflops[32];
    std::snprintf(tflops, sizeof(tflops), "%.2f", a.tflops());
    out << "  " << (i + 1) << ". "
        << ConfigText(a.kernel(), a.has_block_shape() ? &a.block_shape() : nullptr)
        << "  ";
    if (a.measured_seconds() > 0)
      out << "measured " << Seconds(a.measured_seconds()) << "  ";
    if (a.predicted_seconds() > 0)
      out << "predicted " << Seconds(a.predicted_seconds()) << "  ";
    if (a.tflops() > 0) out << tflops << " TFLOP/s  ";
    out << "(" << SourceName(a.source());
    if (!a.device().name().empty()) out << ", " << a.device().name();
    out << ")\n";
  }
}

void PrintKernelSummary(const v1::GetKernelResponse& k, std::ostream& out) {
  auto dims = [](const google::protobuf::RepeatedField<int64_t>& d) {
    std::string s;
    for (int64_t v : d) s += (s.empty() ? "" : " x ") + std::to_string(v);
    return s;
  };
  auto dtype = FromProto(k.dtype(), "dtype");
  out << "kernel: " << KernelConfigText(k.kernel()) << "  "
      << (dtype.ok() ? ToString(*dtype) : std::string_view("?"));
  if (k.has_query()) out << "  (" << QuerySourceName(k.query()) << ")";
  out << "\n";
  if (k.has_block_shape()) {
    auto xb = FromProto(k.block_shape(), "block_shape");
    out << "block shape: " << (xb.ok() ? ToString(*xb) : "?") << "\n";
  }
  out << "entry: " << k.entry() << "  grid " << dims(k.grid()) << "  block "
      << dims(k.block()) << "  shared " << k.shared_bytes() << " B";
  if (k.dynamic_shared_bytes() > 0) {
    out << " + " << k.dynamic_shared_bytes() << " B dynamic"
        << (k.dynamic_shared_bytes() > 48 * 1024 ? " (needs the opt-in)" : "");
  }
  out << "  " << k.arch() << "\n";
  if (k.cluster() > 1) out << "cluster: " << k.cluster() << " programs along x\n";
  if (k.persistent()) {
    out << "persistent: launch min(grid, SMs x resident programs per SM"
        << (k.cluster() > 1 ? ", whole clusters" : "")
        << ") programs; they walk the tiles grid-stride\n";
  }
  out << "params:";
  for (const v1::KernelParam& p : k.params()) out << " " << p.type() << " " << p.name();
  out << "\n";
  for (const v1::TensorMapDesc& t : k.tensor_maps()) {
    const bool im2col = t.mode() == "im2col";
    // Operand "W": the workspace, offset() bytes on.
    const bool in_workspace = t.operand() == "W";
    const std::string operand =
        in_workspace ? "W+" + std::to_string(t.offset()) : t.operand();
    out << "tensor map: param " << t.param_index() << " = " << operand
        << " (" << t.element_type() << (im2col ? " im2col" : "") << ", dims";
    for (uint64_t d : t.dims()) out << " " << d;
    if (t.strides_size() > 1) {
      out << ", strides";
      for (uint64_t d : t.strides()) out << " " << d;
      out << " B";
    } else {
      out << ", row stride " << t.row_stride_bytes() << " B";
    }
    if (im2col) {
      out << ", corners";
      for (int32_t c : t.lower_corner()) out << " " << c;
      out << " ..";
      for (int32_t c : t.upper_corner()) out << " " << c;
      out << ", " << t.channels_per_pixel() << " channels x "
          << t.pixels_per_column() << " pixels, steps";
      for (uint32_t e : t.element_strides()) out << " " << e;
    } else {
      out << ", box";
      for (uint32_t b : t.box()) out << " " << b;
    }
    out << ", 128B swizzle): cuTensorMapEncode" << (im2col ? "Im2col" : "Tiled")
        << " for "
        << (in_workspace ? "the workspace's address + " +
                               std::to_string(t.offset())
                         : t.operand() + "'s address")
        << " at launch\n";
  }
  if (!k.pack_entry().empty()) {
    out << "first: " << k.pack_entry() << "  grid " << dims(k.pack_grid())
        << "  block " << dims(k.pack_block())
        << "  (the entry's arguments; packs A or B into the workspace)\n";
  }
  if (!k.reduce_entry().empty()) {
    out << "then: " << k.reduce_entry() << "  grid " << dims(k.reduce_grid())
        << "  block " << dims(k.reduce_block()) << "  workspace "
        << k.workspace_bytes() << " B"
        << (k.reduce_dependent() ? "  (programmatic dependent launch)" : "")
        << "\n";
  }
  if (k.counter_offset() >= 0 && k.workspace_bytes() > 0) {
    out << "counters: at workspace + " << k.counter_offset()
        << " B, zero before the first launch\n";
  }
  if (k.vector_a() > 1 || k.vector_b() > 1) {
    out << "alignment: 16-byte vectors for" << (k.vector_a() > 1 ? " A" : "")
        << (k.vector_b() > 1 ? " B" : "")
        << " (base 16-byte aligned, leading dimension a multiple of 4)\n";
  } else if (k.align_a() > 1 || k.align_b() > 1 || k.align_c() > 1 ||
             k.align_bytes() > 4) {
    out << "alignment: lda a multiple of " << k.align_a() << ", ldb of "
        << k.align_b() << (k.align_c() > 1 ? ", ldc of " + std::to_string(k.align_c()) : "")
        << " elements; operands " << k.align_bytes() << "-byte aligned\n";
  }
}

void Print(const v1::TrainProgress& p, std::ostream& out) {
  if (!p.family().empty()) {
    auto dtype = FromProto(p.dtype(), "dtype");
    out << p.family() << " "
        << (dtype.ok() ? ToString(*dtype) : std::string_view("fp32")) << "  ";
  }
  if (p.members() > 1 && p.model_id() == 0)
    out << "member " << p.member() + 1 << "/" << p.members() << "  ";
  out << "epoch " << p.epoch() << "/" << p.epochs() << "  train mse "
      << p.train_mse() << "  validation mse " << p.validation_mse();
  if (p.model_id() > 0) {
    out << "  -> model " << p.model_id() << "\n" << p.metrics_json();
  }
  out << "\n";
}

}  // namespace blocktune
