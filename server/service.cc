#include "server/service.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>

#include "kernels/validate.h"
#include "models/train.h"
#include "server/answer_mix.h"
#include "server/dataset_import.h"
#include "server/fallback.h"
#include "server/grpc_status.h"
#include "server/log.h"
#include "server/record_convert.h"
#include "server/sample_digest.h"

#ifndef BLOCKTUNE_VERSION
#define BLOCKTUNE_VERSION "0.0.0"
#endif

namespace blocktune {
namespace {

// Why GPU-backed calls cannot run yet. Each message names the missing part,
// so a user knows it is not a fault of their request.
constexpr char kNoCampaigns[] =
    "this blocktuned runs no campaign scheduler; nothing was stored";
constexpr char kNoHeader[] =
    "the daemon exports datasets; C++ headers are written by the client: "
    "blocktune export --op gemm|conv (--shapes FILE | --all-tuned) -o tuned.h";

// Threads that regenerate kernels for sample digests (import, export).
int DigestThreads() {
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
}

Status CheckDeviceName(std::string_view field, const std::string& name) {
  return CheckText(field, name, 0, 256);
}

Status CheckId(std::string_view field, int64_t id) {
  return CheckRange(field, id, 1, INT64_MAX);
}

// An optional op filter: unspecified means every op.
StatusOr<std::optional<Op>> OptionalOp(v1::Op op, std::string_view field) {
  if (op == v1::OP_UNSPECIFIED) return std::optional<Op>();
  BT_ASSIGN_OR_RETURN(Op parsed, FromProto(op, field));
  return std::optional<Op>(parsed);
}

// The answer record of one configuration a model predicted. Its predicted
// time is the one the search ranked it by (RankedSeconds: an ensemble's
// mean charged its members' spread, a conservative estimate), so that
// stored answers, which the cache orders by it, keep the order the query
// gave them.
TunedRecord MakeTuned(const LoadedModel& model, const Context& ctx,
                      const ScoredConfig& s) {
  TunedRecord t;
  t.device = model.device;
  t.context = ctx;
  t.kernel = KernelConfig::Current(*model.family, s.params);
  t.predicted_s = RankedSeconds(s);
  t.source = TunedSource::kPredicted;
  t.model_id = model.id;
  t.updated_unix = NowUnix();
  return t;
}

// Whether stored answers can stand for this query: enough of them, measured
// when verify is asked, and every predicted one made by a model that still
// answers for its family after every model now in use was made (a newer
// model of any family may predict a faster configuration).
bool CacheServes(const std::vector<TunedRecord>& found, int top, bool verify,
                 const std::vector<LoadedModel>& models) {
  if (found.empty() || static_cast<int>(found.size()) < top) return false;
  int64_t newest_model = 0;
  for (const LoadedModel& m : models)
    newest_model = std::max(newest_model, m.created_unix);
  for (const TunedRecord& t : found) {
    const bool measured = t.measured_s > 0;
    if (verify && !measured) return false;
    if (measured || t.source != TunedSource::kPredicted || models.empty())
      continue;
    const bool current = std::any_of(
        models.begin(), models.end(),
        [&](const LoadedModel& m) { return m.id == t.model_id; });
    if (!current || t.updated_unix < newest_model) return false;
  }
  return true;
}

// The families a query of (op, precision) searches: `family` alone when
// named (it must be of the op and implement the precision), else every
// family that implements it. INVALID_ARGUMENT naming `field` and what is
// allowed.
StatusOr<std::vector<const KernelFamily*>> QueryFamilies(
    const Context& ctx, const std::string& family, std::string_view field) {
  const Op op = OpOf(ctx);
  const DType precision = DTypeOf(ctx);
  std::vector<const KernelFamily*> all = FamiliesFor(op, precision);
  auto allowed = [&] {
    std::string list;
    for (const KernelFamily* f : Families()) {
      if (f->op() != op) continue;
      list += (list.empty() ? "" : "; ") + std::string(f->name()) + " (" +
              PrecisionNames(*f) + ")";
    }
    return list;
  };
  if (all.empty()) {
    return InvalidArgument(
        JoinField(field, std::string("context.") + std::string(ToString(op)) +
                             ".dtype") +
        ": no kernel family implements " + std::string(ToString(op)) +
        " in " + std::string(ToString(precision)) + "; the " +
        std::string(ToString(op)) + " families are " + allowed());
  }
  if (family.empty()) return all;
  for (const KernelFamily* f : all) {
    if (f->name() == family) return std::vector<const KernelFamily*>{f};
  }
  return InvalidArgument(JoinField(field, "family") + " '" + family +
                         "' is not a " + std::string(ToString(op)) +
                         " family that implements " +
                         std::string(ToString(precision)) + "; the " +
                         std::string(ToString(op)) + " families are " +
                         allowed());
}

}  // namespace

BlocktuneService::BlocktuneService(TuningStore* store, const TokenAuth* auth)
    : store_(store), auth_(auth), started_(std::chrono::steady_clock::now()) {}

void BlocktuneService::SetSurrogates(SurrogateRegistry* surrogates,
                                     QueryPolicy policy) {
  surrogates_ = surrogates;
  policy_ = policy;
  const int threads = policy.search_threads > 0 ? policy.search_threads
                                                : SearchPool::DefaultThreads();
  searches_ = std::make_unique<SearchPool>(threads, policy.search_queue);
  BT_LOG(kInfo) << "uncached queries: " << threads << " search thread(s) at "
                << "nice +" << kSearchNice << ", at most "
                << policy.search_queue << " waiting";
}

void BlocktuneService::SetAttachedGpus(std::vector<DeviceFingerprint> gpus,
                                       std::string status) {
  attached_ = std::move(gpus);
  gpu_status_ = std::move(status);
}

template <typename Fn>
grpc::Status BlocktuneService::Serve(const char* method,
                                     grpc::ServerContext* ctx, Fn&& fn) {
  Status status = auth_->Check(*ctx);
  if (status.ok()) {
    try {
      status = fn();
    } catch (const std::exception& e) {
      status = Internal(std::string("unexpected error: ") + e.what());
    } catch (...) {
      status = Internal("unexpected error");
    }
  }
  if (!status.ok()) {
    const bool server_fault = status.code() == StatusCode::kInternal ||
                              status.code() == StatusCode::kDataLoss;
    if (server_fault) {
      BT_LOG(kError) << method << ": " << status.ToString();
    } else {
      BT_LOG(kDebug) << method << ": " << status.ToString();
    }
  }
  return ToGrpcStatus(status);
}

grpc::Status BlocktuneService::Health(grpc::ServerContext* ctx,
                                      const v1::HealthRequest*,
                                      v1::HealthResponse* resp) {
  return Serve("Health", ctx, [&]() -> Status {
    BT_ASSIGN_OR_RETURN(int64_t samples, store_->CountSamples({}));
    BT_ASSIGN_OR_RETURN(int64_t tuned, store_->CountTuned());
    resp->set_version(BLOCKTUNE_VERSION);
    resp->set_schema_version(store_->SchemaVersion());
    resp->set_database(store_->Describe());
    resp->set_uptime_seconds(std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::steady_clock::now() - started_)
                                 .count());
    resp->set_gpus_visible(static_cast<int>(attached_.size()));
    resp->set_gpu_status(gpu_status_);
    resp->set_samples(samples);
    resp->set_tuned_answers(tuned);
    resp->set_models(surrogates_ ? surrogates_->size() : 0);
    BT_ASSIGN_OR_RETURN(auto devices, store_->ListDevices());
    for (const DeviceRecord& d : devices) {
      resp->set_stale_samples(resp->stale_samples() + d.stale_samples);
      resp->set_stale_tuned_answers(resp->stale_tuned_answers() + d.stale_tuned);
    }
    StoreFilter stale;
    stale.versions = VersionFilter::kStale;
    BT_ASSIGN_OR_RETURN(auto stale_models, store_->ListModels(stale));
    resp->set_stale_models(static_cast<int32_t>(stale_models.size()));
    return OkStatus();
  });
}

grpc::Status BlocktuneService::ListDevices(grpc::ServerContext* ctx,
                                           const v1::ListDevicesRequest*,
                                           v1::ListDevicesResponse* resp) {
  return Serve("ListDevices", ctx, [&]() -> Status {
    BT_ASSIGN_OR_RETURN(auto devices, store_->ListDevices());
    // A stored device is attached when a GPU of this box is the same chip;
    // its driver and ptxas may differ, which makes a new fingerprint.
    auto same_chip = [](const DeviceFingerprint& a, const DeviceFingerprint& b) {
      return a.name == b.name && a.cc_major == b.cc_major &&
             a.cc_minor == b.cc_minor && a.sm_count == b.sm_count;
    };
    std::vector<bool> listed(attached_.size(), false);
    for (const DeviceRecord& d : devices) {
      v1::Device* out = resp->add_devices();
      ToProto(d.fingerprint, out->mutable_fingerprint());
      for (size_t i = 0; i < attached_.size(); ++i) {
        if (same_chip(attached_[i], d.fingerprint)) {
          out->set_attached(true);
          listed[i] = true;
        }
      }
      out->set_samples(d.samples);
      out->set_tuned_answers(d.tuned);
      out->set_stale_samples(d.stale_samples);
      out->set_stale_tuned_answers(d.stale_tuned);
    }
    for (size_t i = 0; i < attached_.size(); ++i) {
      if (listed[i]) continue;
      v1::Device* out = resp->add_devices();
      ToProto(attached_[i], out->mutable_fingerprint());
      out->set_attached(true);
    }
    return OkStatus();
  });
}

grpc::Status BlocktuneService::StartCampaign(grpc::ServerContext* ctx,
                                             const v1::StartCampaignRequest* req,
                                             v1::StartCampaignResponse* resp) {
  return Serve("StartCampaign", ctx, [&]() -> Status {
    BT_ASSIGN_OR_RETURN(CampaignSpec spec, FromProto(req->spec(), "spec"));
    if (campaigns_ == nullptr) return FailedPrecondition(kNoCampaigns);
    BT_ASSIGN_OR_RETURN(CampaignRecord record, campaigns_->Start(spec));
    ToProto(record, resp->mutable_campaign());
    return OkStatus();
  });
}

grpc::Status BlocktuneService::WatchCampaign(
    grpc::ServerContext* ctx, const v1::WatchCampaignRequest* req,
    grpc::ServerWriter<v1::CampaignProgress>* writer) {
  return Serve("WatchCampaign", ctx, [&]() -> Status {
    BT_RETURN_IF_ERROR(CheckId("id", req->id()));
    if (campaigns_ == nullptr) {
      BT_RETURN_IF_ERROR(store_->GetCampaign(req->id()).status());
      return FailedPrecondition(kNoCampaigns);
    }
    auto last_sent = std::chrono::steady_clock::now();
    int64_t sent_done = -1;
    std::optional<CampaignState> sent_state;
    while (true) {
      BT_ASSIGN_OR_RETURN(CampaignProgressInfo p,
                          campaigns_->Progress(req->id()));
      const auto now = std::chrono::steady_clock::now();
      // On every state change, and about once a second while it runs.
      if (p.record.state != sent_state ||
          (p.done != sent_done && now - last_sent >= std::chrono::seconds(1))) {
        v1::CampaignProgress out;
        ToProto(p.record, out.mutable_campaign());
        out.set_samples_per_second(p.samples_per_second);
        out.set_done(p.done);
        out.set_target(p.target);
        out.set_acceptance(p.acceptance);
        for (const auto& [kind, n] : p.failures) (*out.mutable_failures())[kind] = n;
        out.set_best_tflops(p.best_tflops);
        out.set_eta_seconds(p.eta_s);
        out.set_elapsed_seconds(p.elapsed_s);
        out.set_verified(p.verified);
        out.set_workers(p.workers);
        out.set_worker_restarts(p.worker_restarts);
        for (const auto& [family, n] : p.samples_by_family)
          (*out.mutable_samples_by_family())[family] = n;
        for (const auto& [daemon, n] : p.samples_by_daemon)
          (*out.mutable_samples_by_daemon())[daemon] = n;
        if (!writer->Write(out)) return Cancelled("client went away");
        last_sent = now;
        sent_done = p.done;
        sent_state = p.record.state;
      }
      if (IsTerminal(p.record.state)) return OkStatus();
      for (int i = 0; i < 2; ++i) {
        if (ctx->IsCancelled()) return Cancelled("client cancelled the watch");
        if (stopping_) return Unavailable("blocktuned is shutting down");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  });
}

grpc::Status BlocktuneService::ListCampaigns(grpc::ServerContext* ctx,
                                             const v1::ListCampaignsRequest*,
                                             v1::ListCampaignsResponse* resp) {
  return Serve("ListCampaigns", ctx, [&]() -> Status {
    BT_ASSIGN_OR_RETURN(auto campaigns, store_->ListCampaigns());
    for (const CampaignRecord& c : campaigns) ToProto(c, resp->add_campaigns());
    return OkStatus();
  });
}

grpc::Status BlocktuneService::CancelCampaign(
    grpc::ServerContext* ctx, const v1::CancelCampaignRequest* req,
    v1::CancelCampaignResponse* resp) {
  return Serve("CancelCampaign", ctx, [&]() -> Status {
    BT_RETURN_IF_ERROR(CheckId("id", req->id()));
    if (campaigns_ == nullptr) {
      BT_RETURN_IF_ERROR(store_->GetCampaign(req->id()).status());
      return FailedPrecondition(kNoCampaigns);
    }
    BT_ASSIGN_OR_RETURN(CampaignRecord campaign, campaigns_->Cancel(req->id()));
    ToProto(campaign, resp->mutable_campaign());
    return OkStatus();
  });
}

Status BlocktuneService::CheckKnownDevice(const std::string& field,
                                          const std::string& name) {
  if (name.empty()) return OkStatus();
  BT_ASSIGN_OR_RETURN(auto devices, store_->ListDevices());
  bool known = std::any_of(attached_.begin(), attached_.end(),
                           [&](const DeviceFingerprint& g) { return g.name == name; });
  std::string names;
  for (const DeviceRecord& d : devices) {
    known = known || d.fingerprint.name == name;
    names += (names.empty() ? "'" : ", '") + d.fingerprint.name + "'";
  }
  if (known) return OkStatus();
  return NotFound(field + " '" + name + "' is not in the store" +
                  (names.empty() ? std::string() : " (it has " + names + ")") +
                  "; blocktune devices lists them");
}

StatusOr<BlocktuneService::ValidQuery> BlocktuneService::ValidateQuery(
    const v1::QueryRequest& req, std::string_view field) {
  ValidQuery q;
  BT_ASSIGN_OR_RETURN(q.context,
                      FromProto(req.context(), JoinField(field, "context")));
  BT_RETURN_IF_ERROR(
      CheckDeviceName(JoinField(field, "device_name"), req.device_name()));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "top"), req.top(), 0, kMaxTop));
  BT_RETURN_IF_ERROR(CheckText(JoinField(field, "family"), req.family(), 0, 64));
  q.family = req.family();
  BT_RETURN_IF_ERROR(QueryFamilies(q.context, q.family, field).status());
  q.device_name = req.device_name();
  q.top = req.top() == 0 ? 1 : req.top();
  q.verify = req.verify();
  q.fallback = req.fallback();
  return q;
}

// The hardware rules of a stored device; the generic limits where the
// fingerprint names no GPU blocktune has a profile of.
static KernelLimits LimitsOf(const DeviceFingerprint& fp) {
  auto profile = ProfileForFingerprint(fp);
  return profile.ok() ? profile->Limits() : KernelLimits{};
}

StatusOr<std::string> BlocktuneService::StaleNote(const ValidQuery& q) {
  StoreFilter filter;
  filter.op = OpOf(q.context);
  filter.device_name = q.device_name;
  filter.family = q.family;
  filter.versions = VersionFilter::kStale;
  BT_ASSIGN_OR_RETURN(auto stale, store_->ListTuned(filter));
  std::map<std::string, std::pair<int, int>> versions;  // family -> min, max
  auto note = [&](const std::string& family, int version) {
    auto [it, fresh] = versions.try_emplace(family, version, version);
    if (!fresh) {
      it->second.first = std::min(it->second.first, version);
      it->second.second = std::max(it->second.second, version);
    }
  };
  for (const TunedRecord& t : stale) {
    if (t.context == q.context) note(t.kernel.family, t.kernel.generator_version);
  }
  std::string what = versions.empty() ? "" : "stored answers";
  if (versions.empty()) {
    BT_ASSIGN_OR_RETURN(auto models, store_->ListModels(filter));
    for (const ModelRecord& m : models) {
      if (m.precision == DTypeOf(q.context)) note(m.family, m.data_version);
    }
    if (!versions.empty()) what = "trained models";
  }
  if (versions.empty()) return std::string();
  std::string text;
  for (const auto& [family, range] : versions) {
    const auto found = FindFamily(family);
    text += (text.empty() ? "" : "; ") + family + " generator version " +
            std::to_string(range.first) +
            (range.second != range.first ? "-" + std::to_string(range.second)
                                         : std::string()) +
            (found.ok() ? " (current: " + std::to_string((*found)->version()) + ")"
                        : std::string(" (a family this build does not have)"));
  }
  return what + " of " + text;
}

Status BlocktuneService::AnswerFallback(const ValidQuery& q,
                                        const std::string& why,
                                        v1::QueryResponse* resp) {
  StoreFilter filter;
  filter.op = OpOf(q.context);
  filter.device_name = q.device_name;
  filter.family = q.family;
  filter.versions = VersionFilter::kCurrent;  // stale answers never serve
  BT_ASSIGN_OR_RETURN(auto stored, store_->ListTuned(filter));
  if (auto nearest = NearestTuned(stored, q.context, LimitsOf, q.family)) {
    const std::string from = ToString(nearest->context);
    nearest->context = q.context;
    nearest->measured_s = 0;  // measured, if at all, for another context
    nearest->predicted_s = 0;
    ToProto(*nearest, resp->add_answers());
    resp->set_match(v1::MATCH_NEAREST);
    resp->set_source(v1::QUERY_SOURCE_FALLBACK);
    resp->set_note(why + "; this is the stored answer of the nearest context, '" +
                   from + "'");
    return OkStatus();
  }
  // A default for the device asked for (or this box's GPU, or the generic
  // limits when neither is known).
  DeviceFingerprint device;
  BT_ASSIGN_OR_RETURN(auto devices, store_->ListDevices());
  for (const DeviceRecord& d : devices) {
    if (q.device_name.empty() || d.fingerprint.name == q.device_name) {
      device = d.fingerprint;
      break;
    }
  }
  if (device.name.empty() && !attached_.empty()) device = attached_.front();
  if (device.name.empty()) device.name = q.device_name;
  BT_ASSIGN_OR_RETURN(KernelConfig kernel,
                      DefaultKernel(q.context, LimitsOf(device), q.family));
  BT_ASSIGN_OR_RETURN(std::string stale, StaleNote(q));
  TunedRecord t;
  t.device = device;
  t.context = q.context;
  t.kernel = kernel;
  t.source = TunedSource::kImported;
  v1::TunedAnswer* answer = resp->add_answers();
  ToProto(t, answer);
  answer->set_source(v1::SOURCE_DEFAULT);
  resp->set_source(v1::QUERY_SOURCE_FALLBACK);
  if (!stale.empty()) {
    resp->set_match(v1::MATCH_STALE);
    resp->set_note(why + "; only " + stale + " exist for this context, and "
                   "stale rows never answer: this is an untuned default of " +
                   kernel.family + " version " +
                   std::to_string(kernel.generator_version) +
                   ". Re-measure them: blocktune campaign start --op " +
                   std::string(ToString(OpOf(q.context))) + " --dtype " +
                   std::string(ToString(DTypeOf(q.context))) +
                   " --retune-stale");
    return OkStatus();
  }
  resp->set_match(v1::MATCH_DEFAULT);
  resp->set_note(why + " and no stored answer of another context fits; this "
                 "is a default configuration of " + kernel.family +
                 ", untuned");
  return OkStatus();
}

// Thesis §4.4: a stored answer if there is one; else exhaustive search over
// the surrogate of every family that implements the precision (each its own
// model), the fastest predictions of all of them, the top k re-benchmarked
// when asked and a GPU is free; the answer is stored either way.
Status BlocktuneService::AnswerQuery(
    const ValidQuery& asked, std::chrono::system_clock::time_point deadline,
    v1::QueryResponse* resp) {
  if (!asked.device_name.empty() || !surrogates_)
    return AnswerQueryOnDevice(asked, deadline, resp);
  const Op op = OpOf(asked.context);
  const DType precision = DTypeOf(asked.context);
  const std::vector<std::string> devices =
      surrogates_->Devices(op, precision, asked.family);
  if (devices.empty()) return AnswerQueryOnDevice(asked, deadline, resp);
  ValidQuery q = asked;
  const std::string own = attached_.empty() ? "" : attached_.front().name;
  std::string note;
  if (!own.empty() &&
      std::find(devices.begin(), devices.end(), own) != devices.end()) {
    q.device_name = own;  // the daemon's own GPU, which has a model
  } else {
    // As before: the newest model's device predicts (and stored answers of
    // any device serve); said so where it is not the only choice.
    std::string others;
    for (size_t i = 1; i < devices.size(); ++i)
      others += (others.empty() ? "" : ", ") + devices[i];
    const std::string kind = std::string(ToString(op)) + " " +
                             std::string(ToString(precision));
    if (!own.empty()) {
      note = "predicted for " + devices.front() + ": this daemon's GPU (" +
             own + ") has no trained " + kind + " model, and " +
             devices.front() + " has the newest";
    } else if (!others.empty()) {
      note = "predicted for " + devices.front() +
             ", the device of the newest " + kind + " model";
    }
    if (!note.empty() && !others.empty())
      note += " (models of " + others + " too; --device chooses)";
  }
  BT_RETURN_IF_ERROR(AnswerQueryOnDevice(q, deadline, resp));
  if (!note.empty()) {
    resp->set_note(note + (resp->note().empty() ? "" : "; " + resp->note()));
  }
  return OkStatus();
}

Status BlocktuneService::AnswerQueryOnDevice(
    const ValidQuery& q, std::chrono::system_clock::time_point deadline,
    v1::QueryResponse* resp) {
  const Op op = OpOf(q.context);
  const DType precision = DTypeOf(q.context);
  const bool verify = q.verify || policy_.verify_always;
  BT_ASSIGN_OR_RETURN(auto families, QueryFamilies(q.context, q.family, ""));
  std::vector<LoadedModel> models;
  if (surrogates_) {
    models = surrogates_->Find(op, precision, q.device_name, q.family);
  }
  // The stored answers, measured ones first (FindTuned's order: a model is
  // often optimistic, and a --verify stores its measured top k beside the
  // earlier predictions); every one when a family is asked for, to keep
  // that family's.
  BT_ASSIGN_OR_RETURN(auto found,
                      store_->FindTuned(q.context, q.device_name,
                                        q.family.empty() ? q.top : kMaxTop));
  if (!q.family.empty()) {
    found.erase(std::remove_if(found.begin(), found.end(),
                               [&](const TunedRecord& t) {
                                 return t.kernel.family != q.family;
                               }),
                found.end());
    if (static_cast<int>(found.size()) > q.top) found.resize(q.top);
  }
  // Without a GPU to verify on, stored predictions serve a verify query.
  const bool can_verify = campaigns_ && campaigns_->has_gpu();
  auto answer_stored = [&] {
    for (const TunedRecord& t : found) ToProto(t, resp->add_answers());
    resp->set_match(v1::MATCH_EXACT);
    resp->set_source(v1::QUERY_SOURCE_CACHED);
    return OkStatus();
  };
  if (CacheServes(found, q.top, verify && can_verify && !models.empty(),
                  models) ||
      (models.empty() && !found.empty())) {
    return answer_stored();
  }
  const std::string kind = std::string(ToString(op)) + " " +
                           std::string(ToString(precision)) +
                           (q.family.empty() ? "" : " " + q.family);
  if (models.empty()) {
    std::string where =
        q.device_name.empty() ? "any device" : "device '" + q.device_name + "'";
    const std::string why =
        "no tuned answer and no trained " + kind + " model on " + where;
    if (q.fallback) return AnswerFallback(q, why, resp);
    BT_ASSIGN_OR_RETURN(std::string stale, StaleNote(q));
    // A device named that has no model: the ones that have (a misspelt
    // or short name, "h100", is the usual reason).
    std::string have;
    if (!q.device_name.empty() && surrogates_) {
      for (const std::string& d : surrogates_->Devices(op, precision, q.family))
        have += (have.empty() ? "" : "', '") + d;
    }
    return NotFound(
        "no tuned answer for '" + ToString(q.context) + "' on " + where +
        " and no trained " + kind + " model to predict one" +
        (have.empty() ? std::string()
                      : " (the devices with one: '" + have +
                            "'; --device takes the name as they say it)") +
        (stale.empty() ? std::string()
                       : " (" + stale + " exist: stale, they never answer; "
                         "blocktune campaign start --retune-stale re-measures "
                         "them)") +
        ". Train one (blocktune train --op " + std::string(ToString(op)) +
        " --dtype " + std::string(ToString(precision)) +
        ") on campaign data, import a dataset with a model (blocktune "
        "import FILE), or ask with --fallback");
  }

  // One search per family with a model, then the fastest predictions of all.
  const int search_k = verify ? std::max(q.top, policy_.verify_top) : q.top;
  SearchStats stats;
  struct Scored {
    const LoadedModel* model;
    ScoredConfig config;
  };
  std::vector<Scored> top;
  // Families with no model that could have answered: those that take the
  // context (their first default configuration that fits; a family whose
  // rules refuse the shape, as gemm.gemv refuses N > 8, is not named).
  std::string unmodelled;
  for (const KernelFamily* f : families) {
    if (std::none_of(models.begin(), models.end(),
                     [&](const LoadedModel& m) { return m.family == f; }) &&
        f->Default(Problem(q.context), KernelLimits{}).ok()) {
      unmodelled += (unmodelled.empty() ? "" : ", ") + std::string(f->name());
    }
  }
  BT_RETURN_IF_ERROR(searches_->Run(
      [&] {
        for (const LoadedModel& m : models) {
          SearchStats one;
          for (ScoredConfig& c : m.search->Top(q.context, search_k, &one))
            top.push_back({&m, std::move(c)});
          stats.candidates += one.candidates;
          stats.implausible += one.implausible;
          stats.seconds += one.seconds;
        }
      },
      deadline));
  // Fastest first by the time each search ranked by (RankedSeconds: an
  // ensemble's members' disagreement counts against a configuration); a
  // tie goes to the newer model, then the parameters.
  std::stable_sort(top.begin(), top.end(), [](const Scored& a, const Scored& b) {
    const double ra = RankedSeconds(a.config), rb = RankedSeconds(b.config);
    if (ra != rb) return ra < rb;
    if (a.model->id != b.model->id) return a.model->id > b.model->id;
    return a.config.params < b.config.params;
  });
  // search_k of them, each family's fastest among them.
  KeepEachFamilysFastest(&top, static_cast<size_t>(search_k),
                         [](const Scored& s) { return s.model->family; });
  resp->set_candidates(stats.candidates);
  resp->set_search_seconds(stats.seconds);
  std::string model_ids;
  for (const LoadedModel& m : models) {
    model_ids += (model_ids.empty() ? "" : ", ") + std::to_string(m.id) +
                 " (" + std::string(m.family->name()) + ")";
  }
  if (top.empty() && stats.implausible > 0) {
    // A model that passed validation yet predicts nonsense here must not
    // fail the query: it is answered as if there were no model.
    BT_LOG(kWarning) << "models " << model_ids << " predicted no plausible "
                     << "time for '" << ToString(q.context) << "' ("
                     << stats.implausible << " configurations); skipped";
    if (!found.empty()) return answer_stored();
    return AnswerFallback(q,
                          "models " + model_ids +
                              " predict no plausible time for this context",
                          resp);
  }
  if (top.empty()) {
    const std::string why = "no configuration in the search range of models " +
                            model_ids + " fits this context";
    if (q.fallback) return AnswerFallback(q, why, resp);
    return FailedPrecondition(why + " ('" + ToString(q.context) + "' on " +
                              models.front().device.name + ")");
  }
  std::vector<TunedRecord> answers;
  for (const Scored& s : top)
    answers.push_back(MakeTuned(*s.model, q.context, s.config));
  v1::QuerySource source = v1::QUERY_SOURCE_PREDICTED;

  if (verify) {
    std::string why;
    if (!campaigns_ || !campaigns_->has_gpu()) {
      why = "no GPU: blocktuned owns no GPU";
    } else {
      std::vector<Candidate> list;
      for (const Scored& s : top)
        list.push_back({s.model->family, q.context, s.config.params});
      auto measured = campaigns_->Measure(list);
      if (!measured.ok()) {
        why = measured.status().message();
      } else {
        int ok = 0;
        for (size_t i = 0; i < answers.size(); ++i) {
          const Measurement& m = measured->measurements[i];
          answers[i].device = measured->device;
          if (m.status == SampleStatus::kOk) {
            answers[i].measured_s = m.median_s;
            answers[i].source = TunedSource::kVerified;
            ++ok;
          }
        }
        if (ok == 0) {
          why = "none of the top " + std::to_string(list.size()) +
                " configurations ran correctly (first: " +
                std::string(ToString(measured->measurements[0].status)) + " " +
                measured->measurements[0].error + ")";
          answers.clear();
        } else {
          // Measured ones first, fastest first; failures dropped.
          answers.erase(std::remove_if(answers.begin(), answers.end(),
                                       [](const TunedRecord& t) {
                                         return t.measured_s <= 0;
                                       }),
                        answers.end());
          std::stable_sort(answers.begin(), answers.end(),
                           [](const TunedRecord& a, const TunedRecord& b) {
                             return a.measured_s < b.measured_s;
                           });
          source = v1::QUERY_SOURCE_VERIFIED;
        }
      }
    }
    if (!why.empty()) {
      resp->set_note("not re-benchmarked: " + why);
      if (answers.empty()) {
        for (const Scored& s : top)
          answers.push_back(MakeTuned(*s.model, q.context, s.config));
      }
    }
  }
  if (static_cast<int>(answers.size()) > q.top) answers.resize(q.top);
  // A context far from what the answering model learned (a 1 x 1 x 10^9
  // GEMM was predicted at 8 s, and said nothing): said so.
  if (const std::string far =
          top.front().model->search->model().Extrapolation(q.context);
      !far.empty()) {
    resp->set_note(resp->note() + (resp->note().empty() ? "" : "; ") + "model " +
                   std::to_string(top.front().model->id) + " (" +
                   std::string(top.front().model->family->name()) +
                   ") extrapolates here: " + far +
                   "; its prediction is a guess (--verify measures it)");
  }
  if (!unmodelled.empty()) {
    resp->set_note(resp->note() + (resp->note().empty() ? "" : "; ") +
                   "families without a trained model were not searched: " +
                   unmodelled);
  }
  // The answers of one family are not the context's answer: stored, they
  // would be what the cache serves every later query of the context,
  // whichever family is faster. Only a search over every family is kept.
  if (q.family.empty()) {
    WriteBatch batch;
    batch.tuned = answers;
    BT_RETURN_IF_ERROR(store_->Commit(batch).status());
  }
  for (const TunedRecord& t : answers) ToProto(t, resp->add_answers());
  resp->set_match(v1::MATCH_PREDICTED);
  resp->set_source(source);
  return OkStatus();
}

grpc::Status BlocktuneService::TrainModel(
    grpc::ServerContext* ctx, const v1::TrainModelRequest* req,
    grpc::ServerWriter<v1::TrainProgress>* writer) {
  return Serve("TrainModel", ctx, [&]() -> Status {
    BT_ASSIGN_OR_RETURN(Op op, FromProto(req->op(), "op"));
    BT_ASSIGN_OR_RETURN(DType precision,
                        ContextDTypeFromProto(req->dtype(), "dtype"));
    BT_RETURN_IF_ERROR(CheckDeviceName("device_name", req->device_name()));
    BT_RETURN_IF_ERROR(CheckText("family", req->family(), 0, 64));
    // The families to train: the one named, else every one of (op,
    // precision) with samples (below).
    std::vector<const KernelFamily*> families = FamiliesFor(op, precision);
    if (families.empty()) {
      return InvalidArgument("dtype: no kernel family implements " +
                             std::string(ToString(op)) + " in " +
                             std::string(ToString(precision)));
    }
    if (!req->family().empty()) {
      auto named = std::find_if(families.begin(), families.end(),
                                [&](const KernelFamily* f) {
                                  return f->name() == req->family();
                                });
      if (named == families.end()) {
        std::string names;
        for (const KernelFamily* f : families)
          names += (names.empty() ? "" : ", ") + std::string(f->name());
        return InvalidArgument("family '" + req->family() + "' is not a " +
                               std::string(ToString(op)) + " family of " +
                               std::string(ToString(precision)) +
                               "; those are " + names);
      }
      families = {*named};
    }
    TrainOptions options;
    if (req->hidden_layers_size() > 0) {
      options.hidden.assign(req->hidden_layers().begin(),
                            req->hidden_layers().end());
    }
    if (req->epochs() != 0) options.epochs = req->epochs();
    if (req->seed() != 0) options.seed = req->seed();
    BT_RETURN_IF_ERROR(CheckRange("epochs", req->epochs(), 0, 100000));
    BT_RETURN_IF_ERROR(CheckRange("members", req->members(), 0, 16));
    if (req->members() > 1) options.members = req->members();
    BT_RETURN_IF_ERROR(
        CheckRange("feature_set", req->feature_set(), 0, kNewestFeatureSet));
    options.feature_set = req->feature_set();
    options.top_weight = req->top_weight();
    BT_RETURN_IF_ERROR(Validate(options));
    for (const KernelFamily* f : families)
      BT_RETURN_IF_ERROR(CheckTrainingSize(*f, options.hidden, options.members));
    if (!surrogates_) {
      return FailedPrecondition("this blocktuned keeps no surrogates");
    }
    // A training whose client has just gone away (Ctrl-C, then the same
    // command again) needs up to a mini-batch to notice; wait that long
    // before calling the trainer busy.
    std::unique_lock training(training_mu_, std::defer_lock);
    if (!training.try_lock_for(std::chrono::seconds(3))) {
      return FailedPrecondition(
          "another TrainModel is running; wait for it to end");
    }

    // The device: the one named, or the only one with samples of (op,
    // precision). Samples measured with a family's current generator only:
    // stale rows (an older generator's) never reach a model.
    struct Job {
      const KernelFamily* family;
      std::vector<TrainingRow> rows;
      int64_t newest = 0;
    };
    std::vector<Job> jobs;
    std::map<std::string, int64_t> per_device;
    DeviceFingerprint device;
    int64_t stale = 0;
    std::vector<SampleRecord> samples;
    for (const KernelFamily* f : families) {
      StoreFilter filter;
      filter.op = op;
      filter.device_name = req->device_name();
      filter.family = std::string(f->name());
      filter.versions = VersionFilter::kCurrent;
      BT_ASSIGN_OR_RETURN(auto of_family, store_->ListSamples(filter));
      for (SampleRecord& s : of_family) {
        if (s.measurement.status != SampleStatus::kOk ||
            DTypeOf(s.context) != precision) {
          continue;
        }
        ++per_device[s.device.name];
        samples.push_back(std::move(s));
      }
      filter.versions = VersionFilter::kStale;
      BT_ASSIGN_OR_RETURN(int64_t n, store_->CountSamples(filter));
      stale += n;
    }
    const std::string kind =
        std::string(ToString(op)) + " " + std::string(ToString(precision));
    if (per_device.empty()) {
      return FailedPrecondition(
          "no measured " + kind + " samples" +
          (req->device_name().empty() ? std::string()
                                      : " for device '" + req->device_name() + "'") +
          (stale > 0 ? " of a current generator (" + std::to_string(stale) +
                           " stale ones of an older generator are not used)"
                     : std::string()) +
          " to train on: run a campaign (blocktune campaign start --op " +
          std::string(ToString(op)) + " --dtype " +
          std::string(ToString(precision)) + ") or import a dataset");
    }
    if (per_device.size() > 1) {
      std::string names;
      for (const auto& [name, n] : per_device)
        names += (names.empty() ? "" : ", ") + name + " (" + std::to_string(n) + ")";
      return InvalidArgument("device_name must name one device; samples of " +
                             kind + " come from " + names);
    }
    const std::string device_name = per_device.begin()->first;
    // Each model is filed under the fingerprint of the newest sample (the
    // lists are oldest first); its name and compute capability are those of
    // every sample here.
    int64_t newest_of_all = 0;
    for (const KernelFamily* f : families) {
      Job job{f, {}, 0};
      for (const SampleRecord& s : samples) {
        if (s.kernel.family != f->name()) continue;
        job.rows.push_back({s.context, s.kernel.params, s.measurement.median_s});
        job.newest = std::max(job.newest, s.measured_unix);
        if (s.measured_unix >= newest_of_all) {
          newest_of_all = s.measured_unix;
          device = s.device;
        }
      }
      if (!job.rows.empty()) jobs.push_back(std::move(job));
    }
    samples.clear();
    // Feature wave_fill counts the SMs of the device the samples ran on (0,
    // unknown, keeps the models below that feature set).
    options.wave_sms = device.sm_count;
    if (options.feature_set >= kWaveFeatures && device.sm_count < 1) {
      return FailedPrecondition(
          "feature_set " + std::to_string(options.feature_set) +
          " counts the device's SMs, and the samples of '" + device_name +
          "' do not say how many it has; ask for feature_set 3 or less");
    }
    for (const Job& job : jobs) {
      const KernelFamily& family = *job.family;
      const std::vector<TrainingRow>& rows = job.rows;
      const int64_t newest = job.newest;
      BT_LOG(kInfo) << "training a " << kind << " " << family.name()
                    << " model for " << device_name << " on " << rows.size()
                    << " samples, "
                    << ArchitectureString(options.hidden)
                    << (options.members > 1
                            ? " x " + std::to_string(options.members) + " members"
                            : std::string());
      const auto started = std::chrono::steady_clock::now();
      auto since = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                             started)
            .count();
      };
      // Why the training must stop: the daemon is stopping, the call's
      // deadline passed, or its client went away (gRPC cancels the call when
      // the connection closes, so a killed or Ctrl-C'd CLI lands here too).
      // IsCancelled() polls the call's completion queue; asked at most every
      // 50 ms, it costs nothing next to the mini-batches of a small network.
      auto next_poll = started;
      auto stop = [&]() -> Status {
        auto after = [&](const char* why) {
          char text[160];
          std::snprintf(text, sizeof(text),
                        "%s after %.1f s of training; nothing was stored", why,
                        since());
          return std::string(text);
        };
        if (stopping_) return Unavailable(after("blocktuned is shutting down"));
        const auto now = std::chrono::steady_clock::now();
        if (now < next_poll) return OkStatus();
        next_poll = now + std::chrono::milliseconds(50);
        // A client whose deadline passes cancels the call itself, which may
        // arrive a moment before the daemon's copy of the deadline (set on
        // arrival of the call) passes: a cancel that close is the deadline.
        const bool cancelled = ctx->IsCancelled();
        const auto wall = std::chrono::system_clock::now();
        if (wall >= ctx->deadline() ||
            (cancelled && wall + std::chrono::seconds(1) >= ctx->deadline())) {
          return Status(StatusCode::kDeadlineExceeded,
                        after("the call's deadline passed"));
        }
        if (cancelled) return Cancelled(after("the client went away"));
        return OkStatus();
      };
      auto report_epoch = [&](const EpochReport& r) {
        v1::TrainProgress p;
        p.set_epoch(r.epoch);
        p.set_epochs(r.epochs);
        p.set_train_mse(r.train_mse);
        p.set_validation_mse(r.validation_mse);
        p.set_best_validation_mse(r.best_validation_mse);
        p.set_seconds(since());
        p.set_member(r.member);
        p.set_members(r.members);
        p.set_family(std::string(family.name()));
        p.set_dtype(ToProto(precision));
        // A client that cannot be written to ends the training.
        return writer->Write(p);
      };
      auto trained = Train(family, precision, rows, options, report_epoch, stop);
      Status why = trained.status();
      if (why.ok() || why.code() == StatusCode::kCancelled) {
        // A broken stream is reported by its cause; and a client that went
        // away as the last epoch ended is told nothing was stored, so nothing
        // is.
        next_poll = started;
        if (Status s = stop(); !s.ok()) why = s;
      }
      if (!why.ok()) {
        training.unlock();  // the log line below means: the next may start
        if (why.code() == StatusCode::kCancelled ||
            why.code() == StatusCode::kDeadlineExceeded ||
            why.code() == StatusCode::kUnavailable) {
          BT_LOG(kInfo) << "training stopped: " << why.message();
        }
        return why;
      }

      ModelRecord record;
      record.device = device;
      record.op = op;
      record.precision = precision;
      record.family = std::string(family.name());
      // Trained on current samples only (the filter above).
      record.generator_version = record.data_version = family.version();
      record.architecture = ArchitectureString(options.hidden);
      record.weights = trained->surrogate.SerializeWeights();
      record.normalization = trained->surrogate.SerializeNormalization();
      record.training_samples = trained->training_samples;
      record.training_set =
          "device=" + device_name + " op=" + std::string(ToString(op)) +
          " dtype=" + std::string(ToString(precision)) + " family=" +
          record.family + " generator_version=" +
          std::to_string(record.generator_version) +
          " ok_samples=" + std::to_string(rows.size()) +
          " newest_measured_unix=" + std::to_string(newest) +
          " validation_fraction=" + std::to_string(options.validation_fraction) +
          " seed=" + std::to_string(options.seed) +
          (options.members > 1 ? " members=" + std::to_string(options.members)
                               : std::string());
      record.libtorch_version = LibtorchVersion();
      record.metrics_json = trained->metrics_json;
      record.created_unix = NowUnix();
      WriteBatch batch;
      batch.models.push_back(record);
      BT_ASSIGN_OR_RETURN(CommitResult committed, store_->Commit(batch));
      record.id = committed.model_ids.at(0);
      BT_RETURN_IF_ERROR(surrogates_->Add(record));

      v1::TrainProgress last;
      last.set_epoch(trained->epochs_run);
      last.set_epochs(options.epochs);
      last.set_train_mse(trained->train_mse);
      last.set_validation_mse(trained->validation_mse);
      last.set_best_validation_mse(trained->validation_mse);
      last.set_model_id(record.id);
      last.set_metrics_json(trained->metrics_json);
      last.set_seconds(since());
      last.set_family(record.family);
      last.set_dtype(ToProto(precision));
      writer->Write(last);
      BT_LOG(kInfo) << "model " << record.id << " trained: " << trained->metrics_json;
    }
    return OkStatus();
  });
}

grpc::Status BlocktuneService::Query(grpc::ServerContext* ctx,
                                     const v1::QueryRequest* req,
                                     v1::QueryResponse* resp) {
  return Serve("Query", ctx, [&]() -> Status {
    BT_ASSIGN_OR_RETURN(ValidQuery q, ValidateQuery(*req, ""));
    return AnswerQuery(q, ctx->deadline(), resp);
  });
}

grpc::Status BlocktuneService::BatchQuery(grpc::ServerContext* ctx,
                                          const v1::BatchQueryRequest* req,
                                          v1::BatchQueryResponse* resp) {
  return Serve("BatchQuery", ctx, [&]() -> Status {
    BT_RETURN_IF_ERROR(CheckRange("queries size", req->queries_size(), 1,
                                  kMaxBatchQueries));
    std::vector<ValidQuery> queries;
    int64_t answers = 0;
    for (int i = 0; i < req->queries_size(); ++i) {
      const std::string field = "queries[" + std::to_string(i) + "]";
      BT_ASSIGN_OR_RETURN(ValidQuery q, ValidateQuery(req->queries(i), field));
      answers += std::max(q.top, 1);
      queries.push_back(std::move(q));
    }
    if (answers > kMaxBatchAnswers) {
      return InvalidArgument(
          "the sum of queries[].top must be at most " +
          std::to_string(kMaxBatchAnswers) + " answers per batch, got " +
          std::to_string(answers) + "; split the batch");
    }
    for (size_t i = 0; i < queries.size(); ++i) {
      // A client that went away stops its batch's searches.
      if (ctx->IsCancelled()) return Cancelled("client cancelled the batch");
      v1::BatchQueryResult* result = resp->add_results();
      Status s =
          AnswerQuery(queries[i], ctx->deadline(), result->mutable_response());
      // Lack of data is a per-query answer; a store failure or a busy
      // daemon fails the call (the answers found so far are stored, and a
      // retry gets them from the cache).
      if (!s.ok() && (s.code() == StatusCode::kInternal ||
                      s.code() == StatusCode::kDataLoss ||
                      s.code() == StatusCode::kUnavailable ||
                      s.code() == StatusCode::kResourceExhausted ||
                      s.code() == StatusCode::kDeadlineExceeded)) {
        return s.Annotate("queries[" + std::to_string(i) + "]");
      }
      result->set_code(static_cast<int>(s.code()));
      result->set_message(s.message());
    }
    return OkStatus();
  });
}

namespace {

void ToProto(const std::vector<KernelParam>& params,
             google::protobuf::RepeatedPtrField<v1::KernelParam>* out) {
  for (const KernelParam& p : params) {
    v1::KernelParam* o = out->Add();
    o->set_name(p.name);
    o->set_type(p.type);
    o->set_offset(p.offset);
    o->set_size(p.size);
    o->set_meaning(p.meaning);
  }
}

void ToProto(const std::vector<TensorMapParam>& maps,
             google::protobuf::RepeatedPtrField<v1::TensorMapDesc>* out) {
  for (const TensorMapParam& t : maps) {
    v1::TensorMapDesc* o = out->Add();
    o->set_param_index(t.param_index);
    o->set_operand(std::string(1, t.operand));
    o->set_offset(t.offset);
    o->set_data_type(static_cast<int32_t>(t.map.type));
    o->set_element_type(ToString(t.map.type));
    const TensorMapSpec& m = t.map;
    const bool im2col = m.mode == TensorMapMode::kIm2col;
    o->set_mode(ToString(m.mode));
    for (int i = 0; i < m.rank; ++i) {
      o->add_dims(m.dims[i]);
      o->add_element_strides(m.element_strides[i]);
      if (!im2col) o->add_box(m.box[i]);
      if (i > 0) o->add_strides(m.strides[i - 1]);
      if (im2col && i > 0 && i < m.rank - 1) {
        o->add_lower_corner(m.lower[i - 1]);
        o->add_upper_corner(m.upper[i - 1]);
      }
    }
    o->set_row_stride_bytes(m.strides[0]);
    if (im2col) {
      o->set_channels_per_pixel(m.channels);
      o->set_pixels_per_column(m.pixels);
    }
  }
}

}  // namespace

grpc::Status BlocktuneService::GetKernel(grpc::ServerContext* ctx,
                                         const v1::GetKernelRequest* req,
                                         v1::GetKernelResponse* resp) {
  return Serve("GetKernel", ctx, [&]() -> Status {
    BT_ASSIGN_OR_RETURN(Context context, FromProto(req->context(), "context"));
    const Op op = OpOf(context);
    if (req->has_kernel() && req->has_block_shape()) {
      return InvalidArgument(
          "set kernel or block_shape (the block-shape family's form), not both");
    }
    std::optional<KernelConfig> kernel;
    if (req->has_kernel() || req->has_block_shape()) {
      BT_ASSIGN_OR_RETURN(
          kernel, KernelOf(req->has_kernel() ? &req->kernel() : nullptr,
                           req->has_block_shape() ? &req->block_shape() : nullptr,
                           op, KernelVersions::kCurrent, ""));
    }
    BT_RETURN_IF_ERROR(CheckDeviceName("device_name", req->device_name()));
    BT_RETURN_IF_ERROR(CheckText("family", req->family(), 0, 64));
    if (!req->arch().empty()) BT_RETURN_IF_ERROR(CheckArch("arch", req->arch()));
    if (kernel && !req->family().empty() && kernel->family != req->family()) {
      return InvalidArgument("family '" + req->family() +
                             "' differs from kernel.family '" + kernel->family +
                             "'");
    }
    BT_RETURN_IF_ERROR(QueryFamilies(context,
                                     kernel ? kernel->family : req->family(), "")
                           .status());

    // The device: the query answer's, else the one named, else this box's
    // GPU; unknown devices get the generic limits.
    DeviceFingerprint device;
    // A device named must be one the store knows (or this box's GPU):
    // else a fallback answer carried the bare name, and its fingerprint
    // failed as "answer.device.cc_major must be in [1, 99], got 0".
    BT_RETURN_IF_ERROR(CheckKnownDevice("device_name", req->device_name()));
    if (!kernel) {
      ValidQuery q;
      q.context = context;
      q.device_name = req->device_name();
      q.family = req->family();
      q.fallback = true;
      BT_RETURN_IF_ERROR(
          AnswerQuery(q, ctx->deadline(), resp->mutable_query()));
      const v1::TunedAnswer& best = resp->query().answers(0);
      BT_ASSIGN_OR_RETURN(kernel, FromProto(best.kernel(), op,
                                            KernelVersions::kCurrent,
                                            "answer.kernel"));
      if (!best.device().name().empty()) {
        BT_ASSIGN_OR_RETURN(device, FromProto(best.device(), "answer.device"));
      }
    } else {
      BT_ASSIGN_OR_RETURN(auto devices, store_->ListDevices());
      for (const DeviceRecord& d : devices) {
        if (!req->device_name().empty() && d.fingerprint.name == req->device_name()) {
          device = d.fingerprint;
        }
      }
      if (device.name.empty() && !attached_.empty()) device = attached_.front();
      if (device.name.empty() && !req->device_name().empty()) {
        return NotFound("device_name '" + req->device_name() +
                        "' is not in the store; blocktune devices lists them");
      }
    }
    const KernelFamily& family = *kernel->Family();
    const KernelLimits limits = LimitsOf(device);
    const Problem problem(context);
    if (Status fits = family.CanImplement(problem, kernel->params, limits);
        !fits.ok()) {
      return FailedPrecondition(
          kernel->family + " " + family.Format(kernel->params) + " cannot run" +
          (device.name.empty() ? std::string() : " on " + device.name) + ": " +
          std::string(fits.message()));
    }
    std::string arch = req->arch();
    if (arch.empty()) {
      arch = device.cc_major >= 7 ? "sm_" + std::to_string(device.cc_major) +
                                        std::to_string(device.cc_minor)
                                  : "sm_80";
    }
    const int arch_cc = std::atoi(arch.c_str() + 3);
    if (arch_cc < family.min_compute_capability()) {
      return FailedPrecondition(
          "arch " + arch + ": " + kernel->family + " needs compute capability " +
          std::to_string(family.min_compute_capability() / 10) + "." +
          std::to_string(family.min_compute_capability() % 10) +
          " or later (--arch sm_" +
          std::to_string(family.min_compute_capability()) + ")");
    }
    BT_ASSIGN_OR_RETURN(GeneratedKernel k,
                        family.Generate(problem, kernel->params, arch));
    resp->set_ptx(k.ptx);
    resp->set_entry(k.entry);
    for (unsigned d : k.grid) resp->add_grid(d);
    for (unsigned d : k.block) resp->add_block(d);
    resp->set_cluster(k.cluster);
    resp->set_persistent(k.persistent);
    ToProto(*kernel, resp->mutable_kernel());
    resp->set_dtype(ToProto(DTypeOf(context)));
    if (auto xb = kernel->block_shape()) {
      ToProto(*xb, resp->mutable_block_shape());
      resp->set_shared_bytes(GemmSharedBytes(*xb));
      resp->set_vector_a(static_cast<int32_t>(k.align_a));
      resp->set_vector_b(static_cast<int32_t>(k.align_b));
    }
    resp->set_dynamic_shared_bytes(k.dynamic_shared_bytes);
    resp->set_arch(TargetOf(k, arch));  // sm_90a for gemm.wgmma
    ToProto(k.entry_params, resp->mutable_params());
    ToProto(k.tensor_maps, resp->mutable_tensor_maps());
    if (!k.pack_entry.empty()) {
      resp->set_pack_entry(k.pack_entry);
      for (unsigned d : k.pack_grid) resp->add_pack_grid(d);
      for (unsigned d : k.pack_block) resp->add_pack_block(d);
    }
    if (!k.reduce_entry.empty()) {
      resp->set_reduce_entry(k.reduce_entry);
      for (unsigned d : k.reduce_grid) resp->add_reduce_grid(d);
      for (unsigned d : k.reduce_block) resp->add_reduce_block(d);
      resp->set_reduce_dependent(k.reduce_dependent);
      ToProto(k.reduce_params, resp->mutable_reduce_params());
    }
    resp->set_workspace_bytes(k.workspace_bytes);
    resp->set_counter_offset(k.counter_offset);
    resp->set_align_a(k.align_a);
    resp->set_align_b(k.align_b);
    resp->set_align_c(k.align_c);
    resp->set_align_bytes(k.align_bytes);
    if (!device.name.empty()) ToProto(device, resp->mutable_device());
    return OkStatus();
  });
}

grpc::Status BlocktuneService::Export(
    grpc::ServerContext* ctx, const v1::ExportRequest* req,
    grpc::ServerWriter<v1::ExportResponse>* writer) {
  return Serve("Export", ctx, [&]() -> Status {
    StoreFilter filter;
    BT_RETURN_IF_ERROR(CheckDeviceName("device_name", req->device_name()));
    BT_RETURN_IF_ERROR(CheckKnownDevice("device_name", req->device_name()));
    filter.device_name = req->device_name();
    BT_ASSIGN_OR_RETURN(filter.op, OptionalOp(req->op(), "op"));
    // Every record names its family and generator version, so stale rows
    // travel as stale ones when asked for.
    filter.versions =
        req->include_stale() ? VersionFilter::kAll : VersionFilter::kCurrent;
    std::optional<DType> precision;
    if (req->dtype() != v1::DTYPE_UNSPECIFIED) {
      BT_ASSIGN_OR_RETURN(precision, FromProto(req->dtype(), "dtype"));
    }
    auto wanted = [&](DType d) { return !precision || d == *precision; };
    switch (req->format()) {
      case v1::EXPORT_FORMAT_UNSPECIFIED:
      case v1::EXPORT_FORMAT_DATASET:
        break;
      case v1::EXPORT_FORMAT_HEADER:
        return Unimplemented(kNoHeader);
      default:
        return InvalidArgument("format must be one of dataset, header; got " +
                               std::to_string(req->format()));
    }
    // Chunks of about kDatasetChunkBytes: a store's dataset is larger than
    // one message may be.
    DatasetChunker chunker([&](v1::Dataset& chunk) -> Status {
      v1::ExportResponse out;
      out.mutable_dataset()->Swap(&chunk);
      if (!writer->Write(out)) return Cancelled("the client went away");
      return OkStatus();
    });
    BT_ASSIGN_OR_RETURN(auto tuned, store_->ListTuned(filter));
    for (const TunedRecord& t : tuned) {
      if (!wanted(DTypeOf(t.context))) continue;
      v1::TunedAnswer out;
      ToProto(t, &out);
      BT_RETURN_IF_ERROR(chunker.Add(std::move(out)));
    }
    if (req->include_samples()) {
      BT_ASSIGN_OR_RETURN(auto samples, store_->ListSamples(filter));
      // Rows stored without a digest (before schema 7, or imported without
      // one) leave with their kernel's, so that a later generator version
      // that emits the same kernel keeps them (server/sample_digest.h).
      FillMissingDigests(&samples, DigestThreads());
      for (const SampleRecord& s : samples) {
        if (!wanted(DTypeOf(s.context))) continue;
        v1::Sample out;
        ToProto(s, &out);
        BT_RETURN_IF_ERROR(chunker.Add(std::move(out)));
      }
    }
    if (req->include_models()) {
      BT_ASSIGN_OR_RETURN(auto models, store_->ListModels(filter));
      for (const ModelRecord& m : models) {
        if (!wanted(m.precision)) continue;
        v1::Model out;
        ToProto(m, &out);
        BT_RETURN_IF_ERROR(chunker.Add(std::move(out)));
      }
    }
    return chunker.Finish();
  });
}

StatusOr<WriteBatch> BlocktuneService::ReadImport(
    grpc::ServerContext* ctx,
    grpc::ServerReaderInterface<v1::ImportRequest>* reader) {
  DatasetImport import(max_import_bytes_);
  v1::ImportRequest chunk;
  while (reader->Read(&chunk)) BT_RETURN_IF_ERROR(import.Add(chunk));
  // The stream also ends when the client dies midway; only the chunk marked
  // commit says the client sent everything.
  if (!import.complete() || ctx->IsCancelled()) {
    return Cancelled("the import stream ended before its chunk marked "
                     "commit (after " + std::to_string(import.chunks()) +
                     " chunks); nothing was stored");
  }
  return std::move(import.batch());
}

grpc::Status BlocktuneService::Import(
    grpc::ServerContext* ctx,
    grpc::ServerReader<v1::ImportRequest>* reader,
    v1::ImportResponse* resp) {
  return Serve("Import", ctx, [&]() -> Status {
    // One import at a time: each holds its records in memory until its
    // commit, so concurrent imports would multiply the bound. A waiting
    // import reads nothing, and gRPC's flow control keeps its client from
    // sending much.
    std::unique_lock<std::timed_mutex> one_at_a_time(import_mu_,
                                                     std::defer_lock);
    while (!one_at_a_time.try_lock_for(std::chrono::milliseconds(100))) {
      if (ctx->IsCancelled()) return Cancelled("the client went away");
      if (stopping_) return Unavailable("blocktuned is shutting down");
    }
    BT_ASSIGN_OR_RETURN(WriteBatch batch, ReadImport(ctx, reader));
    // Stale samples whose kernel this build's generator still emits are
    // stored as current (server/sample_digest.h).
    const int64_t relabeled = RelabelUnchanged(&batch.samples, DigestThreads());
    // A model that cannot answer queries is refused before anything of the
    // dataset is stored: stored, it would take over its device's queries.
    // A stale model (an older generator version) never answers: it is kept
    // as the record of what was trained, and its features may be an older
    // family's (ffma version 1 had no ST), so it is not loaded here.
    for (size_t i = 0; i < batch.models.size(); ++i) {
      if (!batch.models[i].IsCurrent()) continue;
      BT_RETURN_IF_ERROR(SurrogateRegistry::Validate(batch.models[i])
                             .Annotate("dataset.models[" + std::to_string(i) +
                                       "]"));
    }
    BT_ASSIGN_OR_RETURN(CommitResult committed, store_->Commit(batch));
    if (surrogates_) {
      for (size_t i = 0; i < batch.models.size(); ++i) {
        ModelRecord m = batch.models[i];
        m.id = committed.model_ids[i];
        if (Status s = surrogates_->Add(m); !s.ok()) {
          BT_LOG(kWarning) << "imported model " << m.id
                           << " does not load: " << s.ToString();
        }
      }
    }
    BT_LOG(kInfo) << "imported " << batch.samples.size() << " samples ("
                  << relabeled << " of an older generator re-labeled current: "
                  << "the same kernel digest), " << batch.tuned.size()
                  << " tuned answers, " << batch.models.size() << " models";
    resp->set_samples(static_cast<int64_t>(batch.samples.size()));
    resp->set_relabeled_samples(relabeled);
    resp->set_tuned(static_cast<int64_t>(batch.tuned.size()));
    resp->set_models(static_cast<int64_t>(batch.models.size()));
    return OkStatus();
  });
}

}  // namespace blocktune
