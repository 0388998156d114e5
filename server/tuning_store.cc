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
constexpr EnumNames<WorkState, 3> kWorkStateNames{
    {{WorkState::kQueued, "queued"},
     {WorkState::kLeased, "leased"},
     {WorkState::kDone, "done"}}};

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

KernelConfig KernelConfig::Current(const KernelFamily& family,
                                   const Params& params) {
  return KernelConfig{std::string(family.name()), family.version(), params};
}

KernelConfig KernelConfig::OfBlockShape(Op op, const BlockShape& xb) {
  return Current(BlockShapeFamily(op), ToParams(xb));
}

std::optional<BlockShape> KernelConfig::block_shape() const {
  for (Op op : {Op::kGemm, Op::kConv}) {
    const KernelFamily& f = BlockShapeFamily(op);
    if (family == f.name() && params.size == static_cast<int>(f.params().size()))
      return ToBlockShape(params);
  }
  return std::nullopt;
}

const KernelFamily* KernelConfig::Family() const {
  for (const KernelFamily* f : Families())
    if (f->name() == family) return f;
  return nullptr;
}

bool KernelConfig::IsCurrent() const {
  const KernelFamily* f = Family();
  return f != nullptr && f->version() == generator_version;
}

std::string KernelConfig::ParamsText() const {
  if (const KernelFamily* f = Family()) return f->Format(params);
  std::string out;
  for (int i = 0; i < params.size; ++i) {
    if (i > 0) out += ' ';
    out += "p" + std::to_string(i) + "=" + std::to_string(params[i]);
  }
  return out;
}

// The family named `family`, if registered, of `op`, and a version in range.
static StatusOr<const KernelFamily*> CheckFamily(const std::string& family,
                                          int version, Op op,
                                          std::string_view field) {
  const KernelFamily* f = KernelConfig{family, 0, {}}.Family();
  if (f == nullptr) {
    std::string names;
    for (const KernelFamily* g : Families())
      names += (names.empty() ? "" : ", ") + std::string(g->name());
    return InvalidArgument(JoinField(field, "family") + " must be one of " +
                           names + "; got " + Quoted(family));
  }
  if (f->op() != op) {
    return InvalidArgument(JoinField(field, "family") + " " + family +
                           " is a family of " + std::string(ToString(f->op())) +
                           ", not of op " + std::string(ToString(op)));
  }
  // A version this build's generator has not reached comes from a newer
  // blocktune: nothing here can tell what it measured.
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "generator_version"), version,
                                0, f->version()));
  return f;
}

Status Validate(const KernelConfig& k, Op op, std::string_view field) {
  BT_ASSIGN_OR_RETURN(const KernelFamily* f,
                      CheckFamily(k.family, k.generator_version, op, field));
  if (k.params.size != static_cast<int>(f->params().size())) {
    return InvalidArgument(JoinField(field, "params") + ": family " + k.family +
                           " has " + std::to_string(f->params().size()) +
                           " parameters, got " + std::to_string(k.params.size));
  }
  if (auto xb = k.block_shape()) {
    // The store's rule for x_B since schema v1; stale rows may hold shapes
    // the family's domain has since dropped.
    return Validate(*xb, JoinField(field, "block_shape"));
  }
  return f->ValidateParams(k.params, JoinField(field, "params"));
}

StatusOr<Params> ParamsFromText(std::string_view family,
                                std::string_view text) {
  const KernelFamily* f = KernelConfig{std::string(family), 0, {}}.Family();
  Params p;
  const std::vector<std::string_view> words = SplitWords(text);
  const int size = f ? static_cast<int>(f->params().size())
                     : static_cast<int>(words.size());
  // A parameter added in a later version may be absent (an older row).
  int optional = 0;
  if (f) {
    for (const ParamSpec& spec : f->params()) optional += spec.absent_means.has_value();
  }
  const int given = static_cast<int>(words.size());
  if (given > size || given < size - optional || size > kMaxFamilyParams) {
    return InvalidArgument("params " + Quoted(text) + ": expected " +
                           std::to_string(size) + " key=value words");
  }
  p.size = size;
  std::vector<bool> seen(size, false);
  for (size_t w = 0; w < words.size(); ++w) {
    const std::string_view word = words[w];
    const size_t eq = word.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument("params " + Quoted(text) + ": " + Quoted(word) +
                             " is not key=value");
    }
    const int i = f ? f->ParamIndex(word.substr(0, eq)) : static_cast<int>(w);
    if (i < 0 || seen[i]) {
      return InvalidArgument("params " + Quoted(text) + ": unknown or repeated "
                             "key " + Quoted(word.substr(0, eq)) +
                             " for family " + std::string(family));
    }
    seen[i] = true;
    BT_ASSIGN_OR_RETURN(p[i], ParseInt64("params", word.substr(eq + 1)));
  }
  // Only a family's parameters can be absent (the count check above).
  if (const int missing = f ? FillAbsentParams(*f, seen, &p) : -1; missing >= 0) {
    return InvalidArgument("params " + Quoted(text) + ": " +
                           f->params()[missing].name + " is missing for family " +
                           std::string(family));
  }
  return p;
}

int FillAbsentParams(const KernelFamily& family, const std::vector<bool>& seen,
                     Params* params) {
  for (size_t i = 0; i < family.params().size(); ++i) {
    if (seen[i]) continue;
    const ParamSpec& spec = family.params()[i];
    if (!spec.absent_means) return static_cast<int>(i);
    (*params)[static_cast<int>(i)] = *spec.absent_means;
  }
  return -1;
}

bool ModelRecord::IsCurrent() const {
  KernelConfig k{family, generator_version, {}};
  return k.IsCurrent() && data_version == generator_version;
}

std::string_view ToString(TunedSource source) {
  return EnumToString(kTunedSourceNames, source);
}

StatusOr<TunedSource> TunedSourceFromString(std::string_view text,
                                            std::string_view field) {
  return EnumFromString(kTunedSourceNames, text, field);
}

Status WorkLost(int64_t id, int64_t first_seq) {
  return Status(StatusCode::kAborted,
                "campaign " + std::to_string(id) + ": the work item from seq " +
                    std::to_string(first_seq) +
                    " is no longer this daemon's (its lease ran out and "
                    "another daemon claimed it, or it is done)");
}

Status SampleStored(int64_t id, int64_t seq) {
  return AlreadyExists("campaign " + std::to_string(id) + ": sample " +
                       std::to_string(seq) + " is stored already");
}

std::string_view ToString(WorkState state) {
  return EnumToString(kWorkStateNames, state);
}

StatusOr<WorkState> WorkStateFromString(std::string_view text) {
  return EnumFromString(kWorkStateNames, text, "work_items.state");
}

Status Validate(const SampleRecord& s, std::string_view field) {
  BT_RETURN_IF_ERROR(Validate(s.device, JoinField(field, "device")));
  BT_RETURN_IF_ERROR(Validate(s.context, JoinField(field, "context")));
  BT_RETURN_IF_ERROR(Validate(s.kernel, OpOf(s.context), field));
  BT_RETURN_IF_ERROR(Validate(s.measurement, field));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "campaign_id"), s.campaign_id,
                                0, INT64_MAX));
  BT_RETURN_IF_ERROR(CheckKernelDigest(s.kernel_digest,
                                       JoinField(field, "kernel_digest")));
  return CheckRange(JoinField(field, "measured_unix"), s.measured_unix, 0,
                    INT64_MAX);
}

Status CheckKernelDigest(std::string_view digest, std::string_view field) {
  const bool hex =
      std::all_of(digest.begin(), digest.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      });
  if (digest.empty() || (digest.size() == 16 && hex)) return OkStatus();
  return InvalidArgument(std::string(field) +
                         " must be empty or 16 lowercase hex digits, got '" +
                         std::string(digest.substr(0, 40)) +
                         (digest.size() > 40 ? "...'" : "'"));
}

Status Validate(const TunedRecord& t, std::string_view field) {
  BT_RETURN_IF_ERROR(Validate(t.device, JoinField(field, "device")));
  BT_RETURN_IF_ERROR(Validate(t.context, JoinField(field, "context")));
  BT_RETURN_IF_ERROR(Validate(t.kernel, OpOf(t.context), field));
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
      CheckFamily(m.family, m.generator_version, m.op, field).status());
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "data_version"),
                                m.data_version, 0, m.generator_version));
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

Status Validate(const WorkCommit& work) {
  for (size_t i = 0; i < work.samples.size(); ++i)
    BT_RETURN_IF_ERROR(Validate(work.samples[i], Indexed("samples", i)));
  return OkStatus();
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
