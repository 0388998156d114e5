#include "server/record_convert.h"

#include "kernels/validate.h"

namespace blocktune {

void ToProto(const KernelConfig& k, v1::KernelConfig* out) {
  out->set_family(k.family);
  out->set_generator_version(k.generator_version);
  const KernelFamily* family = k.Family();
  for (int i = 0; i < k.params.size; ++i) {
    v1::ConfigParam* p = out->add_params();
    p->set_name(family ? family->params()[i].name
                       : "p" + std::to_string(i));
    p->set_value(k.params.v[i]);
  }
}

StatusOr<KernelConfig> FromProto(const v1::KernelConfig& p, Op op,
                                 KernelVersions versions,
                                 std::string_view field) {
  const std::string family_field = JoinField(field, "family");
  auto found = FindFamily(p.family());
  if (!found.ok()) {
    return InvalidArgument(family_field + ": " +
                           std::string(found.status().message()));
  }
  const KernelFamily& family = **found;
  if (family.op() != op) {
    return InvalidArgument(family_field + " '" + p.family() + "' is a " +
                           std::string(ToString(family.op())) +
                           " family; this is a " + std::string(ToString(op)) +
                           " problem");
  }
  KernelConfig k;
  k.family = p.family();
  // In a request 0 means the current version; a dataset's record keeps
  // what it says (0: measured before versions were recorded, stale).
  k.generator_version =
      p.generator_version() == 0 && versions == KernelVersions::kCurrent
          ? family.version()
          : p.generator_version();
  const std::string version_field = JoinField(field, "generator_version");
  if (k.generator_version < 0 || k.generator_version > family.version()) {
    return InvalidArgument(
        version_field + " of " + k.family + " must be in [0, " +
        std::to_string(family.version()) + "] (this blocktune's generator is "
        "version " + std::to_string(family.version()) + "; a later one is a "
        "newer blocktune's), got " + std::to_string(p.generator_version()));
  }
  if (versions == KernelVersions::kCurrent &&
      k.generator_version != family.version()) {
    return InvalidArgument(
        version_field + " of " + k.family + " must be 0 or " +
        std::to_string(family.version()) + " (the only version this "
        "blocktune generates), got " + std::to_string(p.generator_version()));
  }
  const int n = static_cast<int>(family.params().size());
  k.params.size = n;
  std::vector<bool> seen(n, false);
  const std::string params_field = JoinField(field, "params");
  std::string names;
  for (const ParamSpec& spec : family.params())
    names += (names.empty() ? "" : ", ") + spec.name;
  for (int i = 0; i < p.params_size(); ++i) {
    const int at = family.ParamIndex(p.params(i).name());
    if (at < 0 || seen[at]) {
      return InvalidArgument(params_field + "[" + std::to_string(i) +
                             "].name '" + p.params(i).name() + "' is " +
                             (at < 0 ? "not a parameter" : "repeated") +
                             " of " + k.family + ", whose parameters are " +
                             names);
    }
    seen[at] = true;
    k.params.v[at] = p.params(i).value();
  }
  // An older record may lack a parameter added since (absent_means).
  if (const int missing = FillAbsentParams(family, seen, &k.params); missing >= 0) {
    return InvalidArgument(params_field + " must name every parameter of " +
                           k.family + " (" + names + "); " +
                           family.params()[missing].name + " is missing");
  }
  BT_RETURN_IF_ERROR(Validate(k, op, field));
  return k;
}

StatusOr<KernelConfig> KernelOf(const v1::KernelConfig* kernel,
                                const v1::BlockShape* block_shape, Op op,
                                KernelVersions versions,
                                std::string_view field) {
  if (kernel != nullptr) {
    BT_ASSIGN_OR_RETURN(
        KernelConfig k,
        FromProto(*kernel, op, versions, JoinField(field, "kernel")));
    // Both forms of one kernel (what ToProto writes for a block-shape
    // family): they must agree.
    if (block_shape != nullptr) {
      BT_ASSIGN_OR_RETURN(BlockShape xb, FromProto(*block_shape,
                                                   JoinField(field, "block_shape")));
      if (!(k.block_shape() == xb)) {
        return InvalidArgument(JoinField(field, "block_shape") + " " +
                               ToString(xb) + " differs from " +
                               JoinField(field, "kernel") + " " + k.family +
                               " " + k.ParamsText());
      }
    }
    return k;
  }
  BT_ASSIGN_OR_RETURN(BlockShape xb,
                      FromProto(block_shape ? *block_shape : v1::BlockShape(),
                                JoinField(field, "block_shape")));
  // A block shape alone (a record from before families) is the current
  // block-shape kernel: its ST is 1 unless it says otherwise, and ST = 1
  // emits what version 1 did.
  return KernelConfig::OfBlockShape(op, xb);
}

// A record's kernel family must implement the precision of its context: a
// dataset's bf16 kernel filed under an fp32 context was imported, and then
// served to fp32 queries.
static Status CheckFamilyImplements(const KernelConfig& k, const Context& ctx,
                                    std::string_view field) {
  auto found = FindFamily(k.family);
  if (!found.ok()) return found.status();  // KernelOf found it
  const DType precision = DTypeOf(ctx);
  if ((*found)->Implements(precision)) return OkStatus();
  return InvalidArgument(JoinField(JoinField(field, "kernel"), "family") + " '" +
                         k.family + "' implements " + PrecisionNames(**found) +
                         ", not the context's " + std::string(ToString(precision)));
}

v1::Source ToProto(TunedSource source) {
  switch (source) {
    case TunedSource::kMeasured: return v1::SOURCE_MEASURED;
    case TunedSource::kPredicted: return v1::SOURCE_PREDICTED;
    case TunedSource::kImported: return v1::SOURCE_IMPORTED;
    case TunedSource::kVerified: return v1::SOURCE_VERIFIED;
  }
  return v1::SOURCE_UNSPECIFIED;
}

void ToProto(const SampleRecord& s, v1::Sample* out) {
  ToProto(s.device, out->mutable_device());
  out->set_campaign_id(s.campaign_id);
  ToProto(s.context, out->mutable_context());
  ToProto(s.kernel, out->mutable_kernel());
  if (auto xb = s.kernel.block_shape()) ToProto(*xb, out->mutable_block_shape());
  out->set_status(std::string(ToString(s.measurement.status)));
  out->set_median_seconds(s.measurement.median_s);
  out->set_spread(s.measurement.spread);
  out->set_repetitions(s.measurement.repetitions);
  out->set_sm_clock_mhz(s.measurement.sm_clock_mhz);
  out->set_measured_unix(s.measured_unix);
  out->set_error(s.measurement.error);
  out->set_kernel_digest(s.kernel_digest);
}

void ToProto(const TunedRecord& t, v1::TunedAnswer* out) {
  ToProto(t.context, out->mutable_context());
  ToProto(t.kernel, out->mutable_kernel());
  if (auto xb = t.kernel.block_shape()) ToProto(*xb, out->mutable_block_shape());
  ToProto(t.device, out->mutable_device());
  out->set_predicted_seconds(t.predicted_s);
  out->set_measured_seconds(t.measured_s);
  // 0 when neither measured nor predicted (a fallback answer).
  out->set_tflops(t.RankSeconds() > 0 ? Flops(t.context) / t.RankSeconds() / 1e12 : 0);
  out->set_source(ToProto(t.source));
  out->set_model_id(t.model_id);
  out->set_updated_unix(t.updated_unix);
}

void ToProto(const ModelRecord& m, v1::Model* out) {
  out->set_id(m.id);
  ToProto(m.device, out->mutable_device());
  out->set_op(ToProto(m.op));
  out->set_dtype(ToProto(m.precision));
  out->set_family(m.family);
  out->set_generator_version(m.generator_version);
  out->set_data_version(m.data_version);
  out->set_architecture(m.architecture);
  out->set_weights(m.weights);
  out->set_normalization(m.normalization);
  out->set_training_samples(m.training_samples);
  out->set_metrics_json(m.metrics_json);
  out->set_training_set(m.training_set);
  out->set_libtorch_version(m.libtorch_version);
  out->set_created_unix(m.created_unix);
}

void ToProto(const CampaignRecord& c, v1::Campaign* out) {
  out->set_id(c.id);
  ToProto(c.spec, out->mutable_spec());
  out->set_state(ToProto(c.state));
  if (c.device) ToProto(*c.device, out->mutable_device());
  out->set_samples_ok(c.samples_ok);
  out->set_samples_failed(c.samples_failed);
  out->set_created_unix(c.created_unix);
  out->set_updated_unix(c.updated_unix);
  out->set_message(c.message);
}

StatusOr<SampleRecord> FromProto(const v1::Sample& p, std::string_view field) {
  SampleRecord s;
  BT_ASSIGN_OR_RETURN(s.device,
                      FromProto(p.device(), JoinField(field, "device")));
  BT_ASSIGN_OR_RETURN(s.context,
                      FromProto(p.context(), JoinField(field, "context")));
  BT_ASSIGN_OR_RETURN(
      s.kernel, KernelOf(p.has_kernel() ? &p.kernel() : nullptr,
                         p.has_block_shape() ? &p.block_shape() : nullptr,
                         OpOf(s.context),
                         KernelVersions::kKept, field));
  BT_RETURN_IF_ERROR(CheckFamilyImplements(s.kernel, s.context, field));
  BT_ASSIGN_OR_RETURN(s.measurement.status,
                      SampleStatusFromString(p.status(),
                                             JoinField(field, "status")));
  s.campaign_id = p.campaign_id();
  s.measurement.median_s = p.median_seconds();
  s.measurement.spread = p.spread();
  s.measurement.repetitions = p.repetitions();
  s.measurement.sm_clock_mhz = p.sm_clock_mhz();
  s.measurement.error = p.error();
  s.measured_unix = p.measured_unix();
  s.kernel_digest = p.kernel_digest();
  BT_RETURN_IF_ERROR(Validate(s, field));
  return s;
}

StatusOr<TunedRecord> FromProto(const v1::TunedAnswer& p,
                                std::string_view field) {
  TunedRecord t;
  BT_ASSIGN_OR_RETURN(t.device,
                      FromProto(p.device(), JoinField(field, "device")));
  BT_ASSIGN_OR_RETURN(t.context,
                      FromProto(p.context(), JoinField(field, "context")));
  BT_ASSIGN_OR_RETURN(
      t.kernel, KernelOf(p.has_kernel() ? &p.kernel() : nullptr,
                         p.has_block_shape() ? &p.block_shape() : nullptr,
                         OpOf(t.context),
                         KernelVersions::kKept, field));
  BT_RETURN_IF_ERROR(CheckFamilyImplements(t.kernel, t.context, field));
  t.predicted_s = p.predicted_seconds();
  t.measured_s = p.measured_seconds();
  switch (p.source()) {
    case v1::SOURCE_MEASURED: t.source = TunedSource::kMeasured; break;
    case v1::SOURCE_PREDICTED: t.source = TunedSource::kPredicted; break;
    case v1::SOURCE_IMPORTED: t.source = TunedSource::kImported; break;
    case v1::SOURCE_VERIFIED: t.source = TunedSource::kVerified; break;
    default:
      return InvalidArgument(JoinField(field, "source") +
                             " must be one of measured, predicted, imported, verified; "
                             "got " + std::to_string(p.source()));
  }
  t.model_id = p.model_id();
  t.updated_unix = p.updated_unix();
  BT_RETURN_IF_ERROR(Validate(t, field));
  return t;
}

StatusOr<ModelRecord> FromProto(const v1::Model& p, std::string_view field) {
  ModelRecord m;
  BT_ASSIGN_OR_RETURN(m.device,
                      FromProto(p.device(), JoinField(field, "device")));
  BT_ASSIGN_OR_RETURN(m.op, FromProto(p.op(), JoinField(field, "op")));
  BT_ASSIGN_OR_RETURN(m.precision, ContextDTypeFromProto(
                                       p.dtype(), JoinField(field, "dtype")));
  if (p.family().empty()) {
    // A dataset older than families: the fp32 block-shape model of the
    // generators current when it was written, version 1 at the latest
    // (families came with version 1; ST, version 2, came after them).
    m.family = std::string(BlockShapeFamily(m.op).name());
    m.generator_version = m.data_version = 1;
  } else {
    m.family = p.family();
    m.generator_version = p.generator_version();
    m.data_version = p.data_version();
  }
  m.architecture = p.architecture();
  m.weights = p.weights();
  m.normalization = p.normalization();
  m.training_samples = p.training_samples();
  m.metrics_json = p.metrics_json();
  m.training_set = p.training_set();
  m.libtorch_version = p.libtorch_version();
  m.created_unix = p.created_unix();
  BT_RETURN_IF_ERROR(Validate(m, field));
  return m;
}

}  // namespace blocktune
