#include "server/tuning_store.h"

#include <chrono>

#include "kernels/validate.h"

namespace blocktune {
namespace {

constexpr EnumNames<TunedSource, 3> kTunedSourceNames{
    {{TunedSource::kMeasured, "measured"},
     {TunedSource::kPredicted, "predicted"},
     {TunedSource::kImported, "imported"}}};

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

Status Validate(const WriteBatch& batch) {
  for (size_t i = 0; i < batch.samples.size(); ++i) {
    const SampleRecord& s = batch.samples[i];
    const std::string f = Indexed("samples", i);
    BT_RETURN_IF_ERROR(Validate(s.device, JoinField(f, "device")));
    BT_RETURN_IF_ERROR(Validate(s.context, JoinField(f, "context")));
    BT_RETURN_IF_ERROR(Validate(s.block_shape, JoinField(f, "block_shape")));
    BT_RETURN_IF_ERROR(Validate(s.measurement, f));
    BT_RETURN_IF_ERROR(CheckRange(JoinField(f, "campaign_id"), s.campaign_id,
                                  0, INT64_MAX));
  }
  for (size_t i = 0; i < batch.tuned.size(); ++i) {
    const TunedRecord& t = batch.tuned[i];
    const std::string f = Indexed("tuned", i);
    BT_RETURN_IF_ERROR(Validate(t.device, JoinField(f, "device")));
    BT_RETURN_IF_ERROR(Validate(t.context, JoinField(f, "context")));
    BT_RETURN_IF_ERROR(Validate(t.block_shape, JoinField(f, "block_shape")));
    BT_RETURN_IF_ERROR(CheckSeconds(JoinField(f, "predicted_seconds"),
                                    t.predicted_s));
    BT_RETURN_IF_ERROR(CheckSeconds(JoinField(f, "measured_seconds"),
                                    t.measured_s));
    if (t.RankSeconds() <= 0) {
      return InvalidArgument(f + ": a tuned answer needs measured_seconds or "
                                 "predicted_seconds > 0");
    }
    BT_RETURN_IF_ERROR(
        CheckRange(JoinField(f, "model_id"), t.model_id, 0, INT64_MAX));
  }
  for (size_t i = 0; i < batch.models.size(); ++i) {
    const ModelRecord& m = batch.models[i];
    const std::string f = Indexed("models", i);
    BT_RETURN_IF_ERROR(Validate(m.device, JoinField(f, "device")));
    BT_RETURN_IF_ERROR(
        CheckText(JoinField(f, "architecture"), m.architecture, 1, 256));
    BT_RETURN_IF_ERROR(CheckRange(JoinField(f, "training_samples"),
                                  m.training_samples, 0, INT64_MAX));
  }
  for (size_t i = 0; i < batch.campaign_updates.size(); ++i) {
    const CampaignRecord& c = batch.campaign_updates[i];
    const std::string f = Indexed("campaign_updates", i);
    BT_RETURN_IF_ERROR(CheckRange(JoinField(f, "id"), c.id, 1, INT64_MAX));
    BT_RETURN_IF_ERROR(Validate(c.spec, JoinField(f, "spec")));
    if (c.device) BT_RETURN_IF_ERROR(Validate(*c.device, JoinField(f, "device")));
    BT_RETURN_IF_ERROR(
        CheckRange(JoinField(f, "samples_ok"), c.samples_ok, 0, INT64_MAX));
    BT_RETURN_IF_ERROR(CheckRange(JoinField(f, "samples_failed"),
                                  c.samples_failed, 0, INT64_MAX));
  }
  return OkStatus();
}

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace blocktune
