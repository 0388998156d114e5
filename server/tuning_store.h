// TuningStore: every measurement, campaign, model and tuned answer the
// daemon keeps (DESIGN.md, "The store").
//
// Records name their device by its full fingerprint; the store keeps one row
// per distinct fingerprint and never hands out its internal ids. Writes go
// through Commit(), which applies a whole WriteBatch in one transaction or
// nothing, so a reader (or a process that reopens the store after a crash)
// only ever sees whole batches.
//
// Thread-safety: every method may be called from any thread at once. Readers
// do not wait for a writer's batch to finish.
//
// Errors: INVALID_ARGUMENT for a record that does not validate (naming it,
// e.g. "samples[3].context.gemm.m"), NOT_FOUND for an unknown id,
// UNAVAILABLE when the database is busy past its timeout, DATA_LOSS for a
// corrupt file, INTERNAL for anything else the database reports.
#ifndef BLOCKTUNE_SERVER_TUNING_STORE_H_
#define BLOCKTUNE_SERVER_TUNING_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/block_shape.h"
#include "kernels/context.h"
#include "kernels/device.h"
#include "kernels/family.h"
#include "kernels/status.h"
#include "tuner/campaign_spec.h"
#include "tuner/measurement.h"

namespace blocktune {

// Which kernel a record is about (kernels/family.h, DESIGN.md "Provenance"):
// the family by name, the version of its generator that emitted the kernel,
// and its parameters in the family's ParamSpec order. The store keeps the
// parameters by name, in the family's Format() form ("ML=64 NL=64 ..."), so
// a new family needs no new columns or migration.
//
// fp32 callers that think in block shapes x_B build one with OfBlockShape
// and read one back with block_shape(): the families gemm.ffma and conv.ffma
// are exactly the block shape.
struct KernelConfig {
  std::string family;         // "gemm.ffma"
  int generator_version = 0;  // KernelFamily::version() that emitted it
  Params params;

  // `params` of `family`, with the family's current generator version.
  static KernelConfig Current(const KernelFamily& family, const Params& params);
  // x_B as the ffma family of `op` (gemm.ffma, conv.ffma), current version.
  static KernelConfig OfBlockShape(Op op, const BlockShape& xb);

  // x_B, for the ffma families; nullopt for every other family.
  std::optional<BlockShape> block_shape() const;
  // The registered family of this name, or null when this build has none.
  const KernelFamily* Family() const;
  // Whether the family is registered and generator_version is its current
  // version. Rows that are not current are stale: they stay in the store
  // but never reach training or answers.
  bool IsCurrent() const;
  // The parameters by name, "ML=64 NL=64 ..." (KernelFamily::Format); for
  // a family this build does not know, "p0=64 p1=..." in stored order.
  std::string ParamsText() const;

  friend bool operator==(const KernelConfig& a, const KernelConfig& b) {
    return a.family == b.family && a.generator_version == b.generator_version &&
           a.params == b.params;
  }
  friend bool operator!=(const KernelConfig& a, const KernelConfig& b) {
    return !(a == b);
  }
};

// The store's rules for a kernel: a registered family of `op`, a version in
// [0, the family's current] (a later one is a newer blocktune's), and
// parameters the family accepts (the ffma families:
// Validate(BlockShape), the store's rule for x_B since v1; others:
// KernelFamily::ValidateParams).
Status Validate(const KernelConfig& kernel, Op op, std::string_view field);

// Stored parameters back from their text. By the family's names when it is
// registered (keys in any order, each once, no domain check: a stale row may
// hold values today's domain has dropped), else in the text's order. A
// parameter with ParamSpec::absent_means may be missing: an older row.
StatusOr<Params> ParamsFromText(std::string_view family, std::string_view text);

// Gives each parameter of `family` that `seen` lacks its
// ParamSpec::absent_means (a record from before the parameter existed).
// Returns the index of the first missing one that has none, or -1.
int FillAbsentParams(const KernelFamily& family, const std::vector<bool>& seen,
                     Params* params);

// One benchmark of k(x_B) in context x_C on a device.
struct SampleRecord {
  DeviceFingerprint device;
  int64_t campaign_id = 0;  // 0: not from a campaign of this store
  int64_t seq = -1;         // the campaign's candidate number, or -1
  Context context;          // its dtype is the precision
  KernelConfig kernel;
  Measurement measurement;
  int64_t measured_unix = 0;
  // KernelDigest of the kernel measured (16 lowercase hex digits), or
  // empty where unknown. Lets a generator version bump keep the samples
  // whose kernel it did not change (server/sample_digest.h).
  std::string kernel_digest;
};

// Where a tuned answer came from.
// kVerified: the surrogate's top k re-benchmarked, the fastest kept.
enum class TunedSource { kMeasured, kPredicted, kImported, kVerified };
std::string_view ToString(TunedSource source);
StatusOr<TunedSource> TunedSourceFromString(std::string_view text,
                                            std::string_view field = "source");

// x_C -> kernel for a device, with what is known of its speed. A store holds
// at most one answer per (device, context, family, parameters); committing
// the same again replaces it, whatever its generator version.
struct TunedRecord {
  DeviceFingerprint device;
  Context context;  // its dtype is the precision
  KernelConfig kernel;
  double predicted_s = 0;  // 0: not predicted
  double measured_s = 0;   // 0: not measured
  TunedSource source = TunedSource::kMeasured;
  int64_t model_id = 0;    // 0: no model behind it
  int64_t updated_unix = 0;

  // The time answers are ranked by: measured if known, else predicted.
  double RankSeconds() const { return measured_s > 0 ? measured_s : predicted_s; }
};

// A trained surrogate f(x_B, x_C) (thesis §4.3); weights are opaque here.
struct ModelRecord {
  int64_t id = 0;  // assigned by Commit
  DeviceFingerprint device;
  Op op = Op::kGemm;
  DType precision = DType::kFp32;
  // The family whose kernels it predicts (one of op), the family's
  // generator version when it was trained, and the oldest generator version
  // of the samples it learned from. It is current when both are the
  // family's current version.
  std::string family;  // "gemm.ffma"
  int generator_version = 0;
  int data_version = 0;
  std::string architecture;   // hidden layer sizes, "64,128,64"
  std::string weights;        // serialized parameters
  std::string normalization;  // serialized feature normalization
  int64_t training_samples = 0;
  // Which samples trained it: device, op, count, the newest sample's id
  // and the split's seed, so a training can be repeated.
  std::string training_set;
  std::string libtorch_version;  // that trained it, "1.13.0"
  std::string metrics_json;
  int64_t created_unix = 0;

  bool IsCurrent() const;
};

struct CampaignRecord {
  int64_t id = 0;
  CampaignSpec spec;
  CampaignState state = CampaignState::kQueued;
  std::optional<DeviceFingerprint> device;  // set once it runs on a GPU
  int64_t samples_ok = 0;
  int64_t samples_failed = 0;
  std::string rng_state;  // sampler state, so a campaign resumes exactly
  std::string message;    // why it failed or was cancelled
  int64_t created_unix = 0;
  int64_t updated_unix = 0;
};

struct DeviceRecord {
  DeviceFingerprint fingerprint;
  int64_t samples = 0;  // all of them, stale ones included
  int64_t tuned = 0;
  // Of those, the stale ones (VersionFilter::kStale): kept, never used.
  int64_t stale_samples = 0;
  int64_t stale_tuned = 0;
};

// Everything one transaction writes. Campaign updates ride along with the
// samples they count, so counters and samples never disagree.
struct WriteBatch {
  std::vector<SampleRecord> samples;
  std::vector<TunedRecord> tuned;
  std::vector<ModelRecord> models;
  std::vector<CampaignRecord> campaign_updates;  // replace state and counters
};

struct CommitResult {
  std::vector<int64_t> model_ids;  // ids of batch.models, in order
};

// Which generator versions a listing returns (KernelConfig::IsCurrent,
// ModelRecord::IsCurrent; the current versions come from Families()).
enum class VersionFilter {
  kAll,
  kCurrent,  // what training, oracle evaluation and answers read
  kStale,    // not current: an older (or unknown) generator's
};

// Which records a listing returns; empty fields match everything.
struct StoreFilter {
  std::string device_name;
  std::optional<Op> op;
  std::optional<int64_t> campaign_id;
  std::string family;  // "gemm.ffma"; '' = any
  VersionFilter versions = VersionFilter::kAll;
  int64_t limit = 0;  // 0: no limit
};

// The store's rules for one record; errors name fields under `field`
// ("samples[3].context.gemm.m").
Status Validate(const SampleRecord& sample, std::string_view field);
Status Validate(const TunedRecord& tuned, std::string_view field);
Status Validate(const ModelRecord& model, std::string_view field);
Status Validate(const CampaignRecord& campaign, std::string_view field);
// A SampleRecord::kernel_digest: empty or 16 lowercase hex digits.
Status CheckKernelDigest(std::string_view digest, std::string_view field);
// Validates every record of `batch`, naming the first bad one.
Status Validate(const WriteBatch& batch);

// A slice of a campaign's candidates (issue 22): every daemon on the store
// claims slices for its GPUs, so one campaign runs on all of them.
enum class WorkState { kQueued, kLeased, kDone };
std::string_view ToString(WorkState state);
StatusOr<WorkState> WorkStateFromString(std::string_view text);

struct WorkItem {
  int64_t campaign_id = 0;
  int64_t first_seq = 0;  // candidates first_seq .. first_seq + count - 1
  int64_t count = 0;
  std::string candidates;  // what the planner drew, serialized (opaque here)
  WorkState state = WorkState::kQueued;
  std::string holder;      // the daemon that holds it, or finished it
  int64_t attempts = 0;    // claims so far
};

struct ClaimedWork {
  WorkItem item;
  // Seqs of the item an earlier holder already stored: not measured again.
  std::vector<int64_t> stored_seqs;
};

// One commit of a holder's work: `samples` of the items `items` (their
// first_seq), of which `finished` are complete.
struct WorkCommit {
  std::vector<int64_t> items;
  std::vector<int64_t> finished;
  std::vector<SampleRecord> samples;
};
// The samples of `work`, naming the first bad one ("samples[3]...").
Status Validate(const WorkCommit& work);

// How far a campaign's plan is, for the callbacks below.
struct WorkTotals {
  int64_t items = 0;  // planned
  int64_t open = 0;   // not done
  int64_t seqs = 0;   // candidates planned
};

// The errors of CommitWork, the same from every store: ABORTED when
// `holder` no longer holds item `first_seq` of campaign `id`,
// ALREADY_EXISTS when its sample `seq` is stored already.
Status WorkLost(int64_t id, int64_t first_seq);
Status SampleStored(int64_t id, int64_t seq);

// Which kinds of record changed since a daemon last looked: each counter
// grows with every commit that writes that kind, on any daemon.
struct StoreGeneration {
  int64_t tuned = 0;
  int64_t models = 0;
  friend bool operator==(const StoreGeneration& a, const StoreGeneration& b) {
    return a.tuned == b.tuned && a.models == b.models;
  }
  friend bool operator!=(const StoreGeneration& a, const StoreGeneration& b) {
    return !(a == b);
  }
};

class TuningStore {
 public:
  virtual ~TuningStore() = default;

  // Where the data lives, for people: a path, or ":memory:".
  virtual std::string Describe() const = 0;
  virtual int SchemaVersion() const = 0;

  // Applies the whole batch in one transaction, or nothing.
  virtual StatusOr<CommitResult> Commit(const WriteBatch& batch) = 0;

  virtual StatusOr<std::vector<DeviceRecord>> ListDevices() = 0;

  // Oldest first.
  virtual StatusOr<std::vector<SampleRecord>> ListSamples(
      const StoreFilter& filter) = 0;
  virtual StatusOr<int64_t> CountSamples(const StoreFilter& filter) = 0;

  // The current stored answers for exactly `ctx`, at most `top`: those
  // measured on a GPU first, then predictions, each fastest first
  // (RankSeconds, then family and parameters) -- a prediction, however
  // fast, never outranks a measurement. Stale answers are never returned.
  // An empty device name matches every device.
  virtual StatusOr<std::vector<TunedRecord>> FindTuned(
      const Context& ctx, std::string_view device_name, int top) = 0;
  // Oldest first; filter.campaign_id does not apply.
  virtual StatusOr<std::vector<TunedRecord>> ListTuned(
      const StoreFilter& filter) = 0;
  virtual StatusOr<int64_t> CountTuned() = 0;
  virtual StatusOr<int64_t> CountTuned(const StoreFilter& filter) = 0;

  virtual StatusOr<ModelRecord> GetModel(int64_t id) = 0;
  // Oldest first; filter.campaign_id does not apply.
  virtual StatusOr<std::vector<ModelRecord>> ListModels(
      const StoreFilter& filter) = 0;

  // A new campaign in state queued.
  virtual StatusOr<CampaignRecord> CreateCampaign(const CampaignSpec& spec) = 0;
  virtual StatusOr<CampaignRecord> GetCampaign(int64_t id) = 0;
  // Oldest first.
  virtual StatusOr<std::vector<CampaignRecord>> ListCampaigns() = 0;

  // ---- One campaign over several daemons (server/campaigns.h). Every
  // daemon's PlanWork and CommitWork of a campaign take one lock on it, so
  // its record (state, counters, the planner's cursor) is read, changed
  // and written whole. Leases run on the store's clock, never a daemon's.

  // Runs `plan` on campaign `id`'s record under that lock, with the plan's
  // totals so far; the record it leaves and the items it returns (numbered
  // on from totals.seqs, queued, or done when the plan says so) are
  // written in one transaction. Returns the record
  // as written.
  using PlanFn = std::function<StatusOr<std::vector<WorkItem>>(
      CampaignRecord& record, const WorkTotals& totals)>;
  virtual StatusOr<CampaignRecord> PlanWork(int64_t id, const PlanFn& plan) = 0;

  // Leases to `holder` for `lease_s` seconds the first item of campaign
  // `id` that is queued or whose lease ran out; nullopt when none is.
  // Claimers at the same time get different items and never wait on each
  // other (PostgreSQL: FOR UPDATE SKIP LOCKED).
  virtual StatusOr<std::optional<ClaimedWork>> ClaimWork(
      int64_t id, const std::string& holder, int lease_s) = 0;

  // Extends holder's leases of these items (first_seq) by `lease_s`
  // seconds from now; returns those it no longer holds (another daemon
  // claimed it after its lease ran out, or it is done).
  virtual StatusOr<std::vector<int64_t>> RenewWork(
      int64_t id, const std::string& holder,
      const std::vector<int64_t>& items, int lease_s) = 0;

  // In one transaction: stores `work.samples`, marks `work.finished` done
  // and calls `update` on the campaign's record under the lock (with the
  // totals after this commit), then writes the record. ABORTED, naming the
  // item, and nothing written, when holder no longer holds one of
  // `work.items`; ALREADY_EXISTS when a sample's (campaign, seq) is stored.
  using UpdateFn =
      std::function<Status(CampaignRecord& record, const WorkTotals& totals)>;
  virtual StatusOr<CampaignRecord> CommitWork(int64_t id,
                                              const std::string& holder,
                                              const WorkCommit& work,
                                              const UpdateFn& update) = 0;

  // Gives holder's items back (queued, no holder): a daemon that stops.
  virtual Status ReleaseWork(int64_t id, const std::string& holder,
                             const std::vector<int64_t>& items) = 0;

  // Ends every lease now: a daemon that owns the store alone (SQLite, whose
  // file it locks) calls it at start, since every lease is then a dead
  // daemon's, and its items need not wait for them to run out.
  virtual Status ExpireLeases() = 0;

  // The campaign's items, without their candidates, by first_seq.
  virtual StatusOr<std::vector<WorkItem>> ListWork(int64_t id) = 0;

  // The store's generation counters (caches: server/surrogates.h, the
  // stores' FindTuned). Bumped in the transaction of every commit that
  // writes tuned answers or models, whichever daemon commits it.
  virtual StatusOr<StoreGeneration> Generation() = 0;
};

// Makes the database's folders (mode 0700, mkdir -p) and the file itself
// (mode 0600) when missing, and takes an existing file that others may read
// down to 0600. Returns warnings to log: a mode it tightened, a file this
// process cannot write. OpenSqliteStore calls it; the daemon calls it first,
// so that its lock on the file's identity has a file to lock.
StatusOr<std::vector<std::string>> PrepareDatabaseFile(const std::string& path);

// The production store: one SQLite file in WAL mode, created with mode 0600
// (and its folder with 0700) when missing, migrated to the current schema on
// open. Refuses a file whose schema is newer than this build knows.
StatusOr<std::unique_ptr<TuningStore>> OpenSqliteStore(const std::string& path);

// A store in this process's memory, for tests: same contract, no file.
std::unique_ptr<TuningStore> NewMemoryStore();

// Seconds since the epoch, the unit of every *_unix field.
int64_t NowUnix();

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_TUNING_STORE_H_
