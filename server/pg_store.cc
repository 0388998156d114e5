// The PostgreSQL TuningStore (issue 22): the same contract and schema as the
// SQLite store, for several daemons sharing one database server.
//
// The schema is schema.cc's migrations, translated to PostgreSQL's dialect by
// PostgresDialect (column types only; the statements are portable). The
// schema version lives in the one-row table blocktune_schema, since
// PostgreSQL has no PRAGMA user_version. Migrations run under an advisory
// lock, so daemons that start together never migrate twice.
//
// Connections: a small pool; each call takes one, so readers never wait for
// a writer's batch (PostgreSQL's MVCC gives them the last committed state).
// Credentials come from libpq alone (the connection string, PGPASSWORD,
// ~/.pgpass, pg_service.conf); Describe() never shows a password.
#include "server/pg_store.h"

#include <libpq-fe.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <regex>
#include <set>
#include <sstream>

#include "server/schema.h"
#include "server/store_sql.h"
#include "server/tuned_cache.h"
#include "server/tuning_store.h"

namespace blocktune {
namespace {

constexpr size_t kMaxIdleConnections = 8;
// Any constant: the key of the advisory lock that serializes migrations.
constexpr int64_t kMigrationLockKey = 0x626c6b74756e65;

constexpr const char* kDeviceColumns =
    "d.name, d.cc_major, d.cc_minor, d.sm_count, d.memory_bytes, "
    "d.sm_clock_mhz, d.memory_clock_mhz, d.driver_version, d.cuda_version, "
    "d.ptxas_version";
constexpr int kDeviceColumnCount = 10;

DeviceFingerprint ReadDevice(const pqxx::row& r, int col) {
  DeviceFingerprint d;
  d.name = r[col + 0].as<std::string>();
  d.cc_major = r[col + 1].as<int>();
  d.cc_minor = r[col + 2].as<int>();
  d.sm_count = r[col + 3].as<int>();
  d.memory_bytes = r[col + 4].as<int64_t>();
  d.sm_clock_mhz = r[col + 5].as<int>();
  d.memory_clock_mhz = r[col + 6].as<int>();
  d.driver_version = r[col + 7].as<std::string>();
  d.cuda_version = r[col + 8].as<std::string>();
  d.ptxas_version = r[col + 9].as<std::string>();
  return d;
}

StatusOr<KernelConfig> ReadKernel(const pqxx::row& r, int col) {
  KernelConfig k;
  k.family = r[col + 0].as<std::string>();
  k.generator_version = r[col + 1].as<int>();
  BT_ASSIGN_OR_RETURN(k.params,
                      ParamsFromText(k.family, r[col + 2].as<std::string>()));
  return k;
}

std::string ReadBytea(const pqxx::field& f) {
  return pqxx::binarystring(f).str();
}

// bytea's text input form, "\x0a1b...": bound as text, cast with ::bytea.
std::string ByteaText(const std::string& bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\\x";
  out.reserve(2 + 2 * bytes.size());
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

template <typename T>
StatusOr<T> Stored(StatusOr<T> parsed, std::string_view table, int64_t id) {
  if (parsed.ok()) return parsed;
  return DataLoss(std::string(table) + " row " + std::to_string(id) + ": " +
                  parsed.status().message());
}

std::string LimitClause(int64_t limit) {
  return limit > 0 ? " LIMIT " + std::to_string(limit) : std::string();
}

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

std::string GpusText(const std::vector<int>& gpus) {
  std::string out;
  for (int g : gpus) out += (out.empty() ? "" : ",") + std::to_string(g);
  return out;
}

class PgStore final : public TuningStore {
 public:
  PgStore(std::string conninfo, std::string description)
      : conninfo_(std::move(conninfo)), description_(std::move(description)) {}

  Status Open() {
    return Guard([&]() -> Status { return Migrate(); });
  }

  std::string Describe() const override { return description_; }
  int SchemaVersion() const override { return schema_version_; }

  StatusOr<CommitResult> Commit(const WriteBatch& batch) override {
    BT_RETURN_IF_ERROR(Validate(batch));
    CommitResult result;
    // After the write, even a failed one (as the SQLite store).
    struct Invalidate {
      TunedCache* cache;
      bool needed;
      ~Invalidate() {
        if (needed) cache->Invalidate();
      }
    } invalidate{&tuned_cache_, !batch.tuned.empty() || !batch.models.empty()};
    BT_RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) -> Status {
      pqxx::work w(c);
      const DeviceIdFn device_id = DeviceIds(w);
      const int64_t now = NowUnix();
      InsertSamples(w, batch.samples, device_id, now);
      for (const TunedRecord& t : batch.tuned) {
        w.exec_params(
            "INSERT INTO tuned (device_id, op, context, dtype, family, "
            "generator_version, params, predicted_s, measured_s, source, "
            "model_id, updated_unix) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, "
            "$9, $10, $11, $12) "
            "ON CONFLICT (device_id, context, family, params) DO UPDATE "
            "SET generator_version = excluded.generator_version, "
            "predicted_s = excluded.predicted_s, "
            "measured_s = excluded.measured_s, source = excluded.source, "
            "model_id = excluded.model_id, updated_unix = "
            "excluded.updated_unix",
            device_id(t.device), std::string(ToString(OpOf(t.context))),
            ToString(t.context), std::string(ToString(DTypeOf(t.context))),
            t.kernel.family, t.kernel.generator_version, t.kernel.ParamsText(),
            t.predicted_s, t.measured_s, std::string(ToString(t.source)),
            t.model_id, t.updated_unix ? t.updated_unix : now);
      }
      for (const ModelRecord& m : batch.models) {
        pqxx::result r = w.exec_params(
            "INSERT INTO models (device_id, op, architecture, weights, "
            "normalization, training_samples, metrics_json, created_unix, "
            "training_set, libtorch_version, dtype, family, "
            "generator_version, data_version) VALUES ($1, $2, $3, $4::bytea, "
            "$5::bytea, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id",
            device_id(m.device), std::string(ToString(m.op)), m.architecture,
            ByteaText(m.weights), ByteaText(m.normalization),
            m.training_samples, m.metrics_json,
            m.created_unix ? m.created_unix : now, m.training_set,
            m.libtorch_version, std::string(ToString(m.precision)), m.family,
            m.generator_version, m.data_version);
        result.model_ids.push_back(r[0][0].as<int64_t>());
      }
      for (const CampaignRecord& cr : batch.campaign_updates) {
        // w is never committed on an error
        BT_RETURN_IF_ERROR(WriteCampaign(w, cr, device_id, now));
      }
      if (!batch.tuned.empty() || !batch.models.empty()) {
        w.exec_params(
            "UPDATE store_generation SET tuned = tuned + $1, "
            "models = models + $2",
            int64_t{!batch.tuned.empty()}, int64_t{!batch.models.empty()});
      }
      w.commit();
      return OkStatus();
    }));
    return result;
  }

  StatusOr<std::vector<DeviceRecord>> ListDevices() override {
    std::vector<DeviceRecord> out;
    BT_RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) {
      pqxx::read_transaction w(c);
      pqxx::result r = w.exec(
          std::string("SELECT ") + kDeviceColumns +
          ", (SELECT COUNT(*) FROM samples s WHERE s.device_id = d.id), "
          "(SELECT COUNT(*) FROM tuned t WHERE t.device_id = d.id), "
          "(SELECT COUNT(*) FROM samples s WHERE s.device_id = d.id AND " +
          VersionCondition(VersionFilter::kStale, "s") +
          "), "
          "(SELECT COUNT(*) FROM tuned t WHERE t.device_id = d.id AND " +
          VersionCondition(VersionFilter::kStale, "t") +
          ") "
          "FROM devices d ORDER BY d.id");
      for (const pqxx::row& row : r) {
        out.push_back({ReadDevice(row, 0), row[10].as<int64_t>(),
                       row[11].as<int64_t>(), row[12].as<int64_t>(),
                       row[13].as<int64_t>()});
      }
      return OkStatus();
    }));
    return out;
  }

  StatusOr<std::vector<SampleRecord>> ListSamples(
      const StoreFilter& filter) override {
    std::vector<SampleRecord> out;
    BT_RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) -> Status {
      pqxx::read_transaction w(c);
      pqxx::result r = ExecFilter(
          w,
          std::string("SELECT ") + kDeviceColumns +
              ", s.id, s.campaign_id, s.context, s.family, "
              "s.generator_version, "
              "s.params, s.status, s.median_s, s.spread, s.repetitions, "
              "s.sm_clock_mhz, s.measured_unix, s.error, s.seq, "
              "s.kernel_digest "
              "FROM samples s JOIN devices d ON d.id = s.device_id " +
              SampleWhere(filter) + " ORDER BY s.id" +
              LimitClause(filter.limit),
          filter);
      const int k = kDeviceColumnCount;
      for (const pqxx::row& row : r) {
        SampleRecord s;
        const int64_t id = row[k].as<int64_t>();
        s.device = ReadDevice(row, 0);
        s.campaign_id = row[k + 1].as<int64_t>();
        BT_ASSIGN_OR_RETURN(
            s.context, Stored(ContextFromString(row[k + 2].as<std::string>()),
                              "samples", id));
        BT_ASSIGN_OR_RETURN(s.kernel,
                            Stored(ReadKernel(row, k + 3), "samples", id));
        BT_ASSIGN_OR_RETURN(
            s.measurement.status,
            Stored(SampleStatusFromString(row[k + 6].as<std::string>()),
                   "samples", id));
        s.measurement.median_s = row[k + 7].as<double>();
        s.measurement.spread = row[k + 8].as<double>();
        s.measurement.repetitions = row[k + 9].as<int64_t>();
        s.measurement.sm_clock_mhz = row[k + 10].as<double>();
        s.measured_unix = row[k + 11].as<int64_t>();
        s.measurement.error = row[k + 12].as<std::string>();
        s.seq = row[k + 13].as<int64_t>();
        s.kernel_digest = row[k + 14].as<std::string>();
        out.push_back(std::move(s));
      }
      return OkStatus();
    }));
    return out;
  }

  StatusOr<int64_t> CountSamples(const StoreFilter& filter) override {
    return Count(
        "SELECT COUNT(*) FROM (SELECT 1 FROM samples s "
        "JOIN devices d ON d.id = s.device_id " +
            SampleWhere(filter) + LimitClause(filter.limit) + ") n",
        filter);
  }

  StatusOr<std::vector<TunedRecord>> FindTuned(const Context& ctx,
                                               std::string_view device_name,
                                               int top) override {
    // Cached queries are the hot path: answered from memory until this
    // store commits tuned answers or models, or the store's generation
    // counter (any daemon's such commits) moves; it is read at most every
    // kGenerationCheckMs, so another daemon's write shows here within that.
    CheckGeneration();
    const std::string key = TunedCache::Key(ctx, device_name, top);
    uint64_t generation = 0;
    if (auto hit = tuned_cache_.Get(key, &generation)) return *std::move(hit);
    std::vector<TunedRecord> out;
    BT_RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) {
      pqxx::read_transaction w(c);
      pqxx::result r = w.exec_params(
          TunedSelect() +
              " WHERE t.context = $1 AND ($2 = '' OR d.name = $2) "
              "AND " +
              VersionCondition(VersionFilter::kCurrent, "t") +
              " ORDER BY t.measured_s <= 0, "
              "CASE WHEN t.measured_s > 0 THEN t.measured_s "
              "ELSE t.predicted_s END, t.device_id, t.family, t.params "
              "LIMIT GREATEST($3::bigint, 0)",
          ToString(ctx), std::string(device_name), static_cast<int64_t>(top));
      return ReadTuned(r, &out);
    }));
    tuned_cache_.Put(key, generation, out);
    return out;
  }

  StatusOr<std::vector<TunedRecord>> ListTuned(
      const StoreFilter& filter) override {
    std::vector<TunedRecord> out;
    BT_RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) {
      pqxx::read_transaction w(c);
      return ReadTuned(
          ExecFilter(w,
                     TunedSelect() + " " + TunedWhere(filter) +
                         " ORDER BY t.id" + LimitClause(filter.limit),
                     filter),
          &out);
    }));
    return out;
  }

  StatusOr<int64_t> CountTuned() override {
    return Count("SELECT COUNT(*) FROM tuned", std::nullopt);
  }

  StatusOr<int64_t> CountTuned(const StoreFilter& filter) override {
    return Count(
        "SELECT COUNT(*) FROM (SELECT 1 FROM tuned t "
        "JOIN devices d ON d.id = t.device_id " +
            TunedWhere(filter) + LimitClause(filter.limit) + ") n",
        filter);
  }

  StatusOr<ModelRecord> GetModel(int64_t id) override {
    std::vector<ModelRecord> found;
    BT_RETURN_IF_ERROR(ReadModels(StoreFilter(), id, &found));
    if (found.empty())
      return NotFound("model " + std::to_string(id) + " does not exist");
    return found.front();
  }

  StatusOr<std::vector<ModelRecord>> ListModels(
      const StoreFilter& filter) override {
    std::vector<ModelRecord> out;
    BT_RETURN_IF_ERROR(ReadModels(filter, 0, &out));
    return out;
  }

  StatusOr<CampaignRecord> CreateCampaign(const CampaignSpec& spec) override {
    BT_RETURN_IF_ERROR(Validate(spec));
    int64_t id = 0;
    BT_RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) {
      pqxx::work w(c);
      const int64_t now = NowUnix();
      pqxx::result r = w.exec_params(
          "INSERT INTO campaigns (op, dtype, gpus, sampler, minutes, "
          "max_samples, seed, label, families, retune_stale, state, "
          "created_unix, updated_unix, min_flops, max_flops) VALUES ($1, $2, "
          "$3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) "
          "RETURNING id",
          std::string(ToString(spec.op)), std::string(ToString(spec.dtype)),
          GpusText(spec.gpus), spec.sampler, static_cast<int64_t>(spec.minutes),
          static_cast<int64_t>(spec.max_samples),
          static_cast<int64_t>(spec.seed), spec.label, Joined(spec.families),
          spec.retune_stale ? 1 : 0,
          std::string(ToString(CampaignState::kQueued)), now, now,
          spec.min_flops, spec.max_flops);
      id = r[0][0].as<int64_t>();
      w.commit();
      return OkStatus();
    }));
    return GetCampaign(id);
  }

  StatusOr<CampaignRecord> GetCampaign(int64_t id) override {
    std::vector<CampaignRecord> found;
    BT_RETURN_IF_ERROR(ReadCampaigns(id, &found));
    if (found.empty())
      return NotFound("campaign " + std::to_string(id) + " does not exist");
    return found.front();
  }

  StatusOr<std::vector<CampaignRecord>> ListCampaigns() override {
    std::vector<CampaignRecord> out;
    BT_RETURN_IF_ERROR(ReadCampaigns(0, &out));
    return out;
  }

  // The campaign's row lock (FOR UPDATE) serializes PlanWork and CommitWork
  // of one campaign across daemons; ClaimWork skips items others hold
  // locked (SKIP LOCKED), so claimers never wait on each other.
  StatusOr<CampaignRecord> PlanWork(int64_t id, const PlanFn& plan) override {
    CampaignRecord record;
    BT_RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) -> Status {
      pqxx::work w(c);
      BT_ASSIGN_OR_RETURN(record, LockCampaign(w, id));
      const WorkTotals totals = ReadTotals(w, id);
      BT_ASSIGN_OR_RETURN(std::vector<WorkItem> items, plan(record, totals));
      BT_RETURN_IF_ERROR(Validate(record, "campaign"));
      int64_t next = totals.seqs;
      for (const WorkItem& item : items) {
        w.exec_params(
            "INSERT INTO work_items (campaign_id, first_seq, count, "
            "candidates, state) VALUES ($1, $2, $3, $4::bytea, $5)",
            id, next, item.count, ByteaText(item.candidates),
            std::string(ToString(item.state == WorkState::kDone
                                     ? WorkState::kDone
                                     : WorkState::kQueued)));
        next += item.count;
      }
      const int64_t now = NowUnix();
      BT_RETURN_IF_ERROR(WriteCampaign(w, record, DeviceIds(w), now));
      w.commit();
      record.updated_unix = now;
      return OkStatus();
    }));
    return record;  // as written: no second read
  }

  StatusOr<std::optional<ClaimedWork>> ClaimWork(int64_t id,
                                                 const std::string& holder,
                                                 int lease_s) override {
    std::optional<ClaimedWork> claimed;
    BT_RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) -> Status {
      pqxx::work w(c);
      pqxx::result r = w.exec_params(
          std::string("UPDATE work_items SET state = 'leased', holder = $2, "
                      "attempts = attempts + 1, lease_until_ms = ") +
              kNowMs +
              " + $3 WHERE campaign_id = $1 AND first_seq = ("
              "SELECT first_seq FROM work_items WHERE campaign_id = $1 AND "
              "(state = 'queued' OR (state = 'leased' AND lease_until_ms < " +
              kNowMs +
              ")) ORDER BY first_seq LIMIT 1 FOR UPDATE SKIP LOCKED) "
              "RETURNING first_seq, count, candidates, attempts",
          id, holder, int64_t{1000} * lease_s);
      if (r.empty()) return OkStatus();
      ClaimedWork work;
      work.item.campaign_id = id;
      work.item.first_seq = r[0][0].as<int64_t>();
      work.item.count = r[0][1].as<int64_t>();
      work.item.candidates = ReadBytea(r[0][2]);
      work.item.attempts = r[0][3].as<int64_t>();
      work.item.state = WorkState::kLeased;
      work.item.holder = holder;
      for (const pqxx::row& row : w.exec_params(
               "SELECT seq FROM samples WHERE campaign_id = $1 AND seq >= 0 "
               "AND seq >= $2 AND seq < $3 ORDER BY seq",
               id, work.item.first_seq, work.item.first_seq + work.item.count))
        work.stored_seqs.push_back(row[0].as<int64_t>());
      w.commit();
      claimed = std::move(work);
      return OkStatus();
    }));
    return claimed;
  }

  StatusOr<std::vector<int64_t>> RenewWork(int64_t id,
                                           const std::string& holder,
                                           const std::vector<int64_t>& items,
                                           int lease_s) override {
    std::vector<int64_t> lost;
    BT_RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) -> Status {
      pqxx::work w(c);
      for (int64_t first : items) {
        pqxx::result r = w.exec_params(
            std::string("UPDATE work_items SET lease_until_ms = ") + kNowMs +
                " + $4 WHERE campaign_id = $1 AND first_seq = $2 AND "
                "state = 'leased' AND holder = $3",
            id, first, holder, int64_t{1000} * lease_s);
        if (r.affected_rows() != 1) lost.push_back(first);
      }
      w.commit();
      return OkStatus();
    }));
    return lost;
  }

  StatusOr<CampaignRecord> CommitWork(int64_t id, const std::string& holder,
                                      const WorkCommit& work,
                                      const UpdateFn& update) override {
    BT_RETURN_IF_ERROR(Validate(work));
    CampaignRecord record;
    BT_RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) -> Status {
      pqxx::work w(c);
      BT_ASSIGN_OR_RETURN(record, LockCampaign(w, id));
      for (int64_t first : work.items) {
        pqxx::result held = w.exec_params(
            "SELECT 1 FROM work_items WHERE campaign_id = $1 AND "
            "first_seq = $2 AND state = 'leased' AND holder = $3 FOR UPDATE",
            id, first, holder);
        if (held.empty()) return WorkLost(id, first);
      }
      // One read for the whole batch's seqs, not one per sample.
      std::set<int64_t> seqs;
      for (const SampleRecord& s : work.samples)
        if (s.seq >= 0) seqs.insert(s.seq);
      if (!seqs.empty()) {
        for (const pqxx::row& row : w.exec_params(
                 "SELECT seq FROM samples WHERE campaign_id = $1 AND "
                 "seq >= 0 AND seq >= $2 AND seq <= $3",
                 id, *seqs.begin(), *seqs.rbegin())) {
          const int64_t seq = row[0].as<int64_t>();
          if (seqs.count(seq)) return SampleStored(id, seq);
        }
      }
      const int64_t now = NowUnix();
      const DeviceIdFn device_id = DeviceIds(w);
      InsertSamples(w, work.samples, device_id, now);
      for (int64_t first : work.finished) {
        w.exec_params(
            "UPDATE work_items SET state = 'done' WHERE campaign_id = $1 AND "
            "first_seq = $2",
            id, first);
      }
      BT_RETURN_IF_ERROR(update(record, ReadTotals(w, id)));
      BT_RETURN_IF_ERROR(Validate(record, "campaign"));
      BT_RETURN_IF_ERROR(WriteCampaign(w, record, device_id, now));
      w.commit();
      record.updated_unix = now;
      return OkStatus();
    }));
    return record;  // as written: no second read
  }

  Status ReleaseWork(int64_t id, const std::string& holder,
                     const std::vector<int64_t>& items) override {
    return WithConnection([&](pqxx::connection& c) -> Status {
      pqxx::work w(c);
      for (int64_t first : items) {
        w.exec_params(
            "UPDATE work_items SET state = 'queued', holder = '', "
            "lease_until_ms = 0 WHERE campaign_id = $1 AND first_seq = $2 "
            "AND state = 'leased' AND holder = $3",
            id, first, holder);
      }
      w.commit();
      return OkStatus();
    });
  }

  Status ExpireLeases() override {
    return WithConnection([&](pqxx::connection& c) -> Status {
      pqxx::work w(c);
      w.exec("UPDATE work_items SET lease_until_ms = 0 WHERE state = 'leased'");
      w.commit();
      return OkStatus();
    });
  }

  StatusOr<std::vector<WorkItem>> ListWork(int64_t id) override {
    std::vector<WorkItem> out;
    BT_RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) -> Status {
      pqxx::read_transaction w(c);
      for (const pqxx::row& row : w.exec_params(
               "SELECT first_seq, count, state, holder, attempts FROM "
               "work_items WHERE campaign_id = $1 ORDER BY first_seq",
               id)) {
        WorkItem item;
        item.campaign_id = id;
        item.first_seq = row[0].as<int64_t>();
        item.count = row[1].as<int64_t>();
        BT_ASSIGN_OR_RETURN(item.state,
                            WorkStateFromString(row[2].as<std::string>()));
        item.holder = row[3].as<std::string>();
        item.attempts = row[4].as<int64_t>();
        out.push_back(std::move(item));
      }
      return OkStatus();
    }));
    return out;
  }

  StatusOr<StoreGeneration> Generation() override {
    StoreGeneration g;
    BT_RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) -> Status {
      pqxx::read_transaction w(c);
      pqxx::result r = w.exec("SELECT tuned, models FROM store_generation");
      if (!r.empty()) {
        g.tuned = r[0][0].as<int64_t>();
        g.models = r[0][1].as<int64_t>();
      }
      return OkStatus();
    }));
    return g;
  }

 private:
  // $1 device name ('' = any), $2 op ('' = any), $3 campaign id (-1 = any),
  // $4 family ('' = any); the versions are written in.
  static std::string SampleWhere(const StoreFilter& f) {
    return "WHERE ($1 = '' OR d.name = $1) AND ($2 = '' OR s.op = $2) "
           "AND ($3::bigint < 0 OR s.campaign_id = $3::bigint) "
           "AND ($4 = '' OR s.family = $4) AND " +
           VersionCondition(f.versions, "s");
  }
  static std::string TunedWhere(const StoreFilter& f) {
    return "WHERE ($1 = '' OR d.name = $1) AND ($2 = '' OR t.op = $2) "
           "AND $3::bigint = $3::bigint "
           "AND ($4 = '' OR t.family = $4) AND " +
           VersionCondition(f.versions, "t");
  }
  static pqxx::result ExecFilter(pqxx::transaction_base& w,
                                 const std::string& sql, const StoreFilter& f) {
    return w.exec_params(
        sql, f.device_name, f.op ? std::string(ToString(*f.op)) : std::string(),
        static_cast<int64_t>(f.campaign_id ? *f.campaign_id : -1), f.family);
  }

  StatusOr<int64_t> Count(const std::string& sql,
                          const std::optional<StoreFilter>& filter) {
    int64_t count = 0;
    BT_RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) {
      pqxx::read_transaction w(c);
      pqxx::result r = filter ? ExecFilter(w, sql, *filter) : w.exec(sql);
      count = r[0][0].as<int64_t>();
      return OkStatus();
    }));
    return count;
  }

  static std::string TunedSelect() {
    return std::string("SELECT ") + kDeviceColumns +
           ", t.id, t.context, t.family, t.generator_version, t.params, "
           "t.predicted_s, t.measured_s, t.source, t.model_id, t.updated_unix "
           "FROM tuned t JOIN devices d ON d.id = t.device_id";
  }

  static Status ReadTuned(const pqxx::result& r,
                          std::vector<TunedRecord>* out) {
    const int k = kDeviceColumnCount;
    for (const pqxx::row& row : r) {
      TunedRecord t;
      const int64_t id = row[k].as<int64_t>();
      t.device = ReadDevice(row, 0);
      BT_ASSIGN_OR_RETURN(
          t.context,
          Stored(ContextFromString(row[k + 1].as<std::string>()), "tuned", id));
      BT_ASSIGN_OR_RETURN(t.kernel,
                          Stored(ReadKernel(row, k + 2), "tuned", id));
      t.predicted_s = row[k + 5].as<double>();
      t.measured_s = row[k + 6].as<double>();
      BT_ASSIGN_OR_RETURN(
          t.source, Stored(TunedSourceFromString(row[k + 7].as<std::string>()),
                           "tuned", id));
      t.model_id = row[k + 8].as<int64_t>();
      t.updated_unix = row[k + 9].as<int64_t>();
      out->push_back(std::move(t));
    }
    return OkStatus();
  }

  Status ReadModels(const StoreFilter& filter, int64_t id,
                    std::vector<ModelRecord>* out) {
    return WithConnection([&](pqxx::connection& c) -> Status {
      pqxx::read_transaction w(c);
      pqxx::result r = w.exec_params(
          std::string("SELECT ") + kDeviceColumns +
              ", m.id, m.op, m.architecture, m.weights, m.normalization, "
              "m.training_samples, m.metrics_json, m.created_unix, "
              "m.training_set, "
              "m.libtorch_version, m.dtype, m.family, m.generator_version, "
              "m.data_version FROM models m JOIN devices d ON d.id = "
              "m.device_id "
              "WHERE ($1 = '' OR d.name = $1) AND ($2 = '' OR m.op = $2) "
              "AND ($3::bigint = 0 OR m.id = $3::bigint) "
              "AND ($4 = '' OR m.family = $4) AND " +
              VersionCondition(id > 0 ? VersionFilter::kAll : filter.versions,
                               "m",
                               /*model=*/true) +
              " ORDER BY m.id" + LimitClause(filter.limit),
          filter.device_name,
          filter.op ? std::string(ToString(*filter.op)) : std::string(), id,
          filter.family);
      const int k = kDeviceColumnCount;
      for (const pqxx::row& row : r) {
        ModelRecord m;
        m.device = ReadDevice(row, 0);
        m.id = row[k].as<int64_t>();
        BT_ASSIGN_OR_RETURN(
            m.op,
            Stored(OpFromString(row[k + 1].as<std::string>()), "models", m.id));
        m.architecture = row[k + 2].as<std::string>();
        m.weights = ReadBytea(row[k + 3]);
        m.normalization = ReadBytea(row[k + 4]);
        m.training_samples = row[k + 5].as<int64_t>();
        m.metrics_json = row[k + 6].as<std::string>();
        m.created_unix = row[k + 7].as<int64_t>();
        m.training_set = row[k + 8].as<std::string>();
        m.libtorch_version = row[k + 9].as<std::string>();
        BT_ASSIGN_OR_RETURN(
            m.precision, Stored(DTypeFromString(row[k + 10].as<std::string>()),
                                "models", m.id));
        m.family = row[k + 11].as<std::string>();
        m.generator_version = row[k + 12].as<int>();
        m.data_version = row[k + 13].as<int>();
        out->push_back(std::move(m));
      }
      return OkStatus();
    });
  }

  Status ReadCampaigns(int64_t id, std::vector<CampaignRecord>* out) {
    return WithConnection([&](pqxx::connection& c) -> Status {
      pqxx::read_transaction w(c);
      return ReadCampaignRows(w, id, /*lock=*/false, out);
    });
  }

  // lock: FOR UPDATE of the campaign rows, inside a write transaction.
  static Status ReadCampaignRows(pqxx::transaction_base& w, int64_t id,
                                 bool lock, std::vector<CampaignRecord>* out) {
    {
      pqxx::result r = w.exec_params(
          std::string("SELECT ") + kDeviceColumns +
              ", c.id, c.op, c.dtype, c.gpus, c.minutes, c.max_samples, "
              "c.seed, "
              "c.label, c.state, c.samples_ok, c.samples_failed, c.rng_state, "
              "c.message, c.created_unix, c.updated_unix, c.device_id, "
              "c.sampler, c.families, c.retune_stale, c.min_flops, "
              "c.max_flops "
              "FROM campaigns c LEFT JOIN devices d ON d.id = c.device_id "
              "WHERE ($1::bigint = 0 OR c.id = $1::bigint) ORDER BY c.id" +
              std::string(lock ? " FOR UPDATE OF c" : ""),
          id);
      const int k = kDeviceColumnCount;
      for (const pqxx::row& row : r) {
        CampaignRecord cr;
        cr.id = row[k].as<int64_t>();
        BT_ASSIGN_OR_RETURN(cr.spec.op,
                            Stored(OpFromString(row[k + 1].as<std::string>()),
                                   "campaigns", cr.id));
        BT_ASSIGN_OR_RETURN(
            cr.spec.dtype, Stored(DTypeFromString(row[k + 2].as<std::string>()),
                                  "campaigns", cr.id));
        {
          std::stringstream gpus(row[k + 3].as<std::string>());
          std::string g;
          while (std::getline(gpus, g, ','))
            cr.spec.gpus.push_back(std::stoi(g));
        }
        cr.spec.sampler = row[k + 16].as<std::string>();
        {
          std::stringstream families(row[k + 17].as<std::string>());
          std::string f;
          while (std::getline(families, f, ',')) cr.spec.families.push_back(f);
        }
        cr.spec.retune_stale = row[k + 18].as<int64_t>() != 0;
        cr.spec.min_flops = row[k + 19].as<double>();
        cr.spec.max_flops = row[k + 20].as<double>();
        cr.spec.minutes = row[k + 4].as<int64_t>();
        cr.spec.max_samples = row[k + 5].as<int64_t>();
        cr.spec.seed = static_cast<uint64_t>(row[k + 6].as<int64_t>());
        cr.spec.label = row[k + 7].as<std::string>();
        BT_ASSIGN_OR_RETURN(
            cr.state,
            Stored(CampaignStateFromString(row[k + 8].as<std::string>()),
                   "campaigns", cr.id));
        cr.samples_ok = row[k + 9].as<int64_t>();
        cr.samples_failed = row[k + 10].as<int64_t>();
        cr.rng_state = ReadBytea(row[k + 11]);
        cr.message = row[k + 12].as<std::string>();
        cr.created_unix = row[k + 13].as<int64_t>();
        cr.updated_unix = row[k + 14].as<int64_t>();
        if (!row[k + 15].is_null()) cr.device = ReadDevice(row, 0);
        out->push_back(std::move(cr));
      }
      return OkStatus();
    }
  }

  // Milliseconds since the epoch on the database server's clock.
  static constexpr const char* kNowMs =
      "(extract(epoch from clock_timestamp()) * 1000)::bigint";

  static StatusOr<CampaignRecord> LockCampaign(pqxx::work& w, int64_t id) {
    std::vector<CampaignRecord> found;
    BT_RETURN_IF_ERROR(ReadCampaignRows(w, id, /*lock=*/true, &found));
    if (found.empty())
      return NotFound("campaign " + std::to_string(id) + " does not exist");
    return found.front();
  }

  static WorkTotals ReadTotals(pqxx::work& w, int64_t id) {
    pqxx::result r = w.exec_params(
        "SELECT COUNT(*), COUNT(*) FILTER (WHERE state <> 'done'), "
        "COALESCE(SUM(count), 0) FROM work_items WHERE campaign_id = $1",
        id);
    return {r[0][0].as<int64_t>(), r[0][1].as<int64_t>(),
            r[0][2].as<int64_t>()};
  }

  using DeviceIdFn = std::function<int64_t(const DeviceFingerprint&)>;

  // Device ids for one transaction, each looked up (or added) once.
  static DeviceIdFn DeviceIds(pqxx::work& w) {
    auto ids = std::make_shared<std::map<DeviceFingerprint, int64_t>>();
    return [&w, ids](const DeviceFingerprint& d) {
      auto it = ids->find(d);
      if (it != ids->end()) return it->second;
      return (*ids)[d] = UpsertDevice(w, d);
    };
  }

  static void InsertSamples(pqxx::work& w,
                            const std::vector<SampleRecord>& samples,
                            const DeviceIdFn& device_id, int64_t now) {
    for (const SampleRecord& s : samples) {
      const Measurement& m = s.measurement;
      w.exec_params(
          "INSERT INTO samples (device_id, campaign_id, op, context, dtype, "
          "family, generator_version, params, status, median_s, spread, "
          "repetitions, sm_clock_mhz, measured_unix, error, seq, "
          "kernel_digest) VALUES "
          "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, "
          "$15, $16, $17)",
          device_id(s.device), s.campaign_id,
          std::string(ToString(OpOf(s.context))), ToString(s.context),
          std::string(ToString(DTypeOf(s.context))), s.kernel.family,
          s.kernel.generator_version, s.kernel.ParamsText(),
          std::string(ToString(m.status)), m.median_s, m.spread,
          static_cast<int64_t>(m.repetitions), m.sm_clock_mhz,
          s.measured_unix ? s.measured_unix : now, m.error, s.seq,
          s.kernel_digest);
    }
  }

  static Status WriteCampaign(pqxx::work& w, const CampaignRecord& cr,
                              const DeviceIdFn& device_id, int64_t now) {
    const CampaignSpec& s = cr.spec;
    // A campaign that has not run on a GPU keeps device_id NULL.
    const std::string device =
        cr.device ? std::to_string(device_id(*cr.device)) : "NULL";
    pqxx::result r = w.exec_params(
        "UPDATE campaigns SET op = $1, dtype = $2, gpus = $3, "
        "sampler = $4, minutes = $5, max_samples = $6, seed = $7, "
        "label = $8, families = $9, retune_stale = $10, state = $11, "
        "device_id = " +
            device +
            ", samples_ok = $12, "
            "samples_failed = $13, rng_state = $14::bytea, message = $15, "
            "updated_unix = $16, min_flops = $18, max_flops = $19 "
            "WHERE id = $17",
        std::string(ToString(s.op)), std::string(ToString(s.dtype)),
        GpusText(s.gpus), s.sampler, static_cast<int64_t>(s.minutes),
        static_cast<int64_t>(s.max_samples),
        static_cast<int64_t>(s.seed),  // stored bit for bit
        s.label, Joined(s.families), s.retune_stale ? 1 : 0,
        std::string(ToString(cr.state)), cr.samples_ok, cr.samples_failed,
        ByteaText(cr.rng_state), cr.message, now, cr.id, s.min_flops,
        s.max_flops);
    if (r.affected_rows() != 1) {
      return NotFound("campaign " + std::to_string(cr.id) +
                      " does not exist");
    }
    return OkStatus();
  }

  // Inside the caller's transaction; ON CONFLICT, so two daemons that meet
  // the same new device at once both get its one row.
  static int64_t UpsertDevice(pqxx::work& w, const DeviceFingerprint& d) {
    pqxx::result r = w.exec_params(
        "INSERT INTO devices (name, cc_major, cc_minor, sm_count, "
        "memory_bytes, sm_clock_mhz, memory_clock_mhz, driver_version, "
        "cuda_version, ptxas_version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, "
        "$9, $10) ON CONFLICT (name, cc_major, cc_minor, sm_count, "
        "memory_bytes, sm_clock_mhz, memory_clock_mhz, driver_version, "
        "cuda_version, ptxas_version) DO UPDATE SET name = excluded.name "
        "RETURNING id",
        d.name, d.cc_major, d.cc_minor, d.sm_count, d.memory_bytes,
        d.sm_clock_mhz, d.memory_clock_mhz, d.driver_version, d.cuda_version,
        d.ptxas_version);
    return r[0][0].as<int64_t>();
  }

  Status Migrate() {
    auto conn = std::make_unique<pqxx::connection>(conninfo_);
    const int current = CurrentSchemaVersion();
    {
      pqxx::work w(*conn);
      w.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
      w.exec(
          "CREATE TABLE IF NOT EXISTS blocktune_schema ("
          "version INTEGER NOT NULL)");
      w.exec(
          "INSERT INTO blocktune_schema (version) SELECT 0 "
          "WHERE NOT EXISTS (SELECT 1 FROM blocktune_schema)");
      w.commit();
    }
    for (;;) {
      pqxx::work w(*conn);
      w.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
      const int version =
          w.exec("SELECT version FROM blocktune_schema")[0][0].as<int>();
      if (version > current) {
        return FailedPrecondition(
            description_ + " has schema version " + std::to_string(version) +
            ", newer than this blocktuned knows (" + std::to_string(current) +
            "); use a newer blocktuned or another --db");
      }
      const Migration* next = nullptr;
      for (const Migration& m : Migrations()) {
        if (m.version > version) {
          next = &m;
          break;
        }
      }
      if (!next) {
        schema_version_ = version;
        break;
      }
      w.exec(PostgresDialect(next->sql));
      w.exec_params("UPDATE blocktune_schema SET version = $1", next->version);
      w.commit();
    }
    std::lock_guard lock(pool_mu_);
    pool_.push_back(std::move(conn));
    return OkStatus();
  }

  // Runs `fn` on a pooled connection; a connection that failed is dropped.
  template <typename Fn>
  Status WithConnection(Fn&& fn) {
    std::unique_ptr<pqxx::connection> conn;
    {
      std::lock_guard lock(pool_mu_);
      if (!pool_.empty()) {
        conn = std::move(pool_.back());
        pool_.pop_back();
      }
    }
    Status status = Guard([&]() -> Status {
      if (!conn) conn = std::make_unique<pqxx::connection>(conninfo_);
      return fn(*conn);
    });
    if (conn && status.ok() && conn->is_open()) {
      std::lock_guard lock(pool_mu_);
      if (pool_.size() < kMaxIdleConnections) pool_.push_back(std::move(conn));
    }
    return status;
  }

  template <typename Fn>
  Status Guard(Fn&& fn) {
    const std::string where = "postgresql (" + description_ + "): ";
    try {
      return fn();
    } catch (const pqxx::broken_connection& e) {
      return Unavailable(where +
                         "cannot connect or lost the connection: " + e.what());
    } catch (const pqxx::sql_error& e) {
      const std::string state = e.sqlstate();
      // serialization failure, deadlock, lock timeout, too many connections,
      // shutting down: worth retrying later.
      if (state == "40001" || state == "40P01" || state == "55P03" ||
          state == "53300" || state.rfind("57P", 0) == 0 ||
          state.rfind("08", 0) == 0) {
        return Unavailable(where + e.what());
      }
      if (state == "53100") {
        return Status(StatusCode::kResourceExhausted, where + e.what());
      }
      if (state.rfind("28", 0) == 0 || state == "42501") {
        return FailedPrecondition(where + e.what());
      }
      return Internal(where + e.what());
    } catch (const std::exception& e) {
      return Internal(where + e.what());
    }
  }

  // Invalidates the answer cache when the store's generation moved since
  // the last look, which is at most every kGenerationCheckMs.
  void CheckGeneration() {
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard lock(generation_mu_);
      if (now - generation_checked_ <
          std::chrono::milliseconds(kGenerationCheckMs))
        return;
      generation_checked_ = now;
    }
    auto g = Generation();
    if (!g.ok()) {
      tuned_cache_.Invalidate();  // cannot tell: read the database
      return;
    }
    std::lock_guard lock(generation_mu_);
    if (!seen_generation_ || *seen_generation_ != *g) {
      seen_generation_ = *g;
      tuned_cache_.Invalidate();
    }
  }

  static constexpr int kGenerationCheckMs = 250;

  const std::string conninfo_;
  const std::string description_;
  TunedCache tuned_cache_;
  std::mutex generation_mu_;
  std::chrono::steady_clock::time_point generation_checked_{};
  std::optional<StoreGeneration> seen_generation_;
  int schema_version_ = 0;
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<pqxx::connection>> pool_;
};

}  // namespace

bool IsPostgresUri(std::string_view db) {
  if (db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0)
    return true;
  // A keyword string: "dbname=... host=...", never an existing file.
  const std::string path(db);
  return db.find('=') != std::string_view::npos &&
         access(path.c_str(), F_OK) != 0;
}

StatusOr<std::string> DescribePostgres(const std::string& conninfo) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (!options) {
    std::string message = error ? error : "out of memory";
    if (error) PQfreemem(error);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    // libpq's message names the bad part in quotes, and for a URI that
    // part can be the whole URI, password included: such quotes are
    // dropped, a quoted keyword ("dbname") is kept.
    std::string safe;
    for (size_t at = 0; at < message.size();) {
      const size_t open = message.find('"', at);
      const size_t close =
          open == std::string::npos ? open : message.find('"', open + 1);
      if (close == std::string::npos) {
        safe += message.substr(at);
        break;
      }
      const std::string quoted = message.substr(open, close + 1 - open);
      safe += message.substr(at, open - at);
      const bool secret = quoted.find('@') != std::string::npos ||
                          quoted.find(':') != std::string::npos ||
                          quoted.find("password") != std::string::npos;
      safe += secret ? "(the connection string, not shown)" : quoted;
      at = close + 1;
    }
    message = safe;
    return InvalidArgument("--db: not a PostgreSQL connection string: " +
                           message);
  }
  std::map<std::string, std::string> values;
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    if (o->val && *o->val) values[o->keyword] = o->val;
  }
  PQconninfoFree(options);
  // Everything that says where, nothing that is secret (password, and the
  // TLS key's file names are harmless but noisy).
  std::string out = "postgresql://";
  if (values.count("user")) out += values["user"] + "@";
  out += values.count("host") ? values["host"] : "";
  if (values.count("port")) out += ":" + values["port"];
  out += "/" + (values.count("dbname") ? values["dbname"] : std::string());
  std::string query;
  for (const char* key : {"service", "sslmode"}) {
    if (values.count(key))
      query += std::string(query.empty() ? "?" : "&") + key + "=" + values[key];
  }
  return out + query;
}

StatusOr<std::unique_ptr<TuningStore>> OpenPostgresStore(
    const std::string& conninfo) {
  BT_ASSIGN_OR_RETURN(std::string description, DescribePostgres(conninfo));
  auto store = std::make_unique<PgStore>(conninfo, description);
  BT_RETURN_IF_ERROR(store->Open());
  return std::unique_ptr<TuningStore>(std::move(store));
}

}  // namespace blocktune
