#include "server/record_convert.h"

#include "kernels/validate.h"

namespace blocktune {

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
  // blocktune.v1 carries block shapes only, of the current generators
  // (issue 19 part 1 gives it families): Export sends no other rows.
  if (auto xb = s.kernel.block_shape()) ToProto(*xb, out->mutable_block_shape());
  out->set_status(std::string(ToString(s.measurement.status)));
  out->set_median_seconds(s.measurement.median_s);
  out->set_spread(s.measurement.spread);
  out->set_repetitions(s.measurement.repetitions);
  out->set_sm_clock_mhz(s.measurement.sm_clock_mhz);
  out->set_measured_unix(s.measured_unix);
  out->set_error(s.measurement.error);
}

void ToProto(const TunedRecord& t, v1::TunedAnswer* out) {
  ToProto(t.context, out->mutable_context());
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
  // blocktune.v1 has no family or version yet: a block shape is the op's
  // ffma family, current version.
  BT_ASSIGN_OR_RETURN(BlockShape xb, FromProto(p.block_shape(),
                                               JoinField(field, "block_shape")));
  s.kernel = KernelConfig::OfBlockShape(OpOf(s.context), xb);
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
  BT_ASSIGN_OR_RETURN(BlockShape xb, FromProto(p.block_shape(),
                                               JoinField(field, "block_shape")));
  t.kernel = KernelConfig::OfBlockShape(OpOf(t.context), xb);
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
  // blocktune.v1 models are the fp32 block-shape models of the current
  // generators.
  m.family = std::string(BlockShapeFamily(m.op).name());
  m.generator_version = m.data_version = BlockShapeFamily(m.op).version();
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
