#include "server/tuning_store.h"

#include <chrono>

#include "kernels/validate.h"

namespace blocktune {
namespace {

constexpr EnumNames<TunedSource, 4> kTunedSourceNames{
    {{TunedSource::kMeasured, "measured"},
     {TunedSource::kPredicted, "predicted"},
     {TunedSource::kImported, "imported"},
     {TunedSource::kVerified, "verified"}}};

std::string Indexed(std::string_view name, size_t i) {
  return std::string(name) + "[" + std::to_string(i) + "]";
}

Status CheckSeconds(std::string_view field, double value) {
  if (value >= 0 && value <= 3600) return OkStatus();  // also rejects NaN
  return InvalidArgument(std::string(field) +
                         " must be in [0, 3600] seconds, got " +
                         std::to_string(value));
}

}  // namespace

std::string_view ToString(TunedSource source) {
  return EnumToString(kTunedSourceNames, source);
}

StatusOr<TunedSource> TunedSourceFromString(std::string_view text,
                                            std::string_view field) {
  return EnumFromString(kTunedSourceNames, text, field);
}

Status Validate(const SampleRecord& s, std::string_view field) {
  BT_RETURN_IF_ERROR(Validate(s.device, JoinField(field, "device")));
  BT_RETURN_IF_ERROR(Validate(s.context, JoinField(field, "context")));
  BT_RETURN_IF_ERROR(Validate(s.block_shape, JoinField(field, "block_shape")));
  BT_RETURN_IF_ERROR(Validate(s.measurement, field));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "campaign_id"), s.campaign_id,
                                0, INT64_MAX));
  return CheckRange(JoinField(field, "measured_unix"), s.measured_unix, 0,
                    INT64_MAX);
}

Status Validate(const TunedRecord& t, std::string_view field) {
  BT_RETURN_IF_ERROR(Validate(t.device, JoinField(field, "device")));
  BT_RETURN_IF_ERROR(Validate(t.context, JoinField(field, "context")));
  BT_RETURN_IF_ERROR(Validate(t.block_shape, JoinField(field, "block_shape")));
  BT_RETURN_IF_ERROR(CheckSeconds(JoinField(field, "predicted_seconds"),
                                  t.predicted_s));
  BT_RETURN_IF_ERROR(CheckSeconds(JoinField(field, "measured_seconds"),
                                  t.measured_s));
  if (t.RankSeconds() <= 0) {
    return InvalidArgument(std::string(field) +
                           ": a tuned answer needs measured_seconds or "
                           "predicted_seconds > 0");
  }
  BT_RETURN_IF_ERROR(
      CheckRange(JoinField(field, "model_id"), t.model_id, 0, INT64_MAX));
  return CheckRange(JoinField(field, "updated_unix"), t.updated_unix, 0,
                    INT64_MAX);
}

Status Validate(const ModelRecord& m, std::string_view field) {
  BT_RETURN_IF_ERROR(Validate(m.device, JoinField(field, "device")));
  BT_RETURN_IF_ERROR(
      CheckText(JoinField(field, "architecture"), m.architecture, 1, 256));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "training_samples"),
                                m.training_samples, 0, INT64_MAX));
  return CheckRange(JoinField(field, "created_unix"), m.created_unix, 0,
                    INT64_MAX);
}

Status Validate(const CampaignRecord& c, std::string_view field) {
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "id"), c.id, 1, INT64_MAX));
  BT_RETURN_IF_ERROR(Validate(c.spec, JoinField(field, "spec")));
  if (c.device) {
    BT_RETURN_IF_ERROR(Validate(*c.device, JoinField(field, "device")));
  }
  BT_RETURN_IF_ERROR(
      CheckRange(JoinField(field, "samples_ok"), c.samples_ok, 0, INT64_MAX));
  return CheckRange(JoinField(field, "samples_failed"), c.samples_failed, 0,
                    INT64_MAX);
}

Status Validate(const WriteBatch& batch) {
  for (size_t i = 0; i < batch.samples.size(); ++i)
    BT_RETURN_IF_ERROR(Validate(batch.samples[i], Indexed("samples", i)));
  for (size_t i = 0; i < batch.tuned.size(); ++i)
    BT_RETURN_IF_ERROR(Validate(batch.tuned[i], Indexed("tuned", i)));
  for (size_t i = 0; i < batch.models.size(); ++i)
    BT_RETURN_IF_ERROR(Validate(batch.models[i], Indexed("models", i)));
  for (size_t i = 0; i < batch.campaign_updates.size(); ++i) {
    BT_RETURN_IF_ERROR(Validate(batch.campaign_updates[i],
                                Indexed("campaign_updates", i)));
  }
  return OkStatus();
}

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace blocktune
