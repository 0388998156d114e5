// The SQLite TuningStore. One writer connection behind a mutex applies
// batches in IMMEDIATE transactions; readers use their own connections from a
// small pool, so in WAL mode they read the last committed state while a batch
// is being written.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

#include <fstream>
#include <sstream>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "server/schema.h"
#include "server/store_sql.h"
#include "server/tuned_cache.h"
#include "server/tuning_store.h"

namespace blocktune {
namespace {

constexpr int kBusyTimeoutMs = 10000;
constexpr size_t kMaxIdleReaders = 8;

Status FromSqlite(const SQLite::Exception& e, const std::string& path) {
  std::string message = "sqlite (" + path + "): " + e.what();
  switch (e.getErrorCode() & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Unavailable(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return DataLoss(message);
    case SQLITE_FULL:
      return Status(StatusCode::kResourceExhausted, message);
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
      return FailedPrecondition(message);
    default:
      return Internal(message);
  }
}

// mkdir -p with mode 0700 for the folders it creates.
Status MakeParentDirs(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return FailedPrecondition("cannot create folder " + dir + ": " +
                                std::strerror(errno));
    }
  }
  return OkStatus();
}

// Creates the database file with mode 0600 before SQLite opens it, so it is
// never readable by others, not even for a moment. SQLite gives the -wal and
// -shm files the database file's mode.
Status CreatePrivateFile(const std::string& path) {
  int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return OkStatus();
    return FailedPrecondition("cannot create " + path + ": " +
                              std::strerror(errno));
  }
  fchmod(fd, 0600);  // whatever the umask
  close(fd);
  return OkStatus();
}

// Device columns, joined as d.
constexpr const char* kDeviceColumns =
    "d.name, d.cc_major, d.cc_minor, d.sm_count, d.memory_bytes, "
    "d.sm_clock_mhz, d.memory_clock_mhz, d.driver_version, d.cuda_version, "
    "d.ptxas_version";
constexpr int kDeviceColumnCount = 10;

DeviceFingerprint ReadDevice(SQLite::Statement& q, int col) {
  DeviceFingerprint d;
  d.name = q.getColumn(col + 0).getString();
  d.cc_major = q.getColumn(col + 1).getInt();
  d.cc_minor = q.getColumn(col + 2).getInt();
  d.sm_count = q.getColumn(col + 3).getInt();
  d.memory_bytes = q.getColumn(col + 4).getInt64();
  d.sm_clock_mhz = q.getColumn(col + 5).getInt();
  d.memory_clock_mhz = q.getColumn(col + 6).getInt();
  d.driver_version = q.getColumn(col + 7).getString();
  d.cuda_version = q.getColumn(col + 8).getString();
  d.ptxas_version = q.getColumn(col + 9).getString();
  return d;
}

void BindDevice(SQLite::Statement& q, int first, const DeviceFingerprint& d) {
  q.bind(first + 0, d.name);
  q.bind(first + 1, d.cc_major);
  q.bind(first + 2, d.cc_minor);
  q.bind(first + 3, d.sm_count);
  q.bind(first + 4, static_cast<int64_t>(d.memory_bytes));
  q.bind(first + 5, d.sm_clock_mhz);
  q.bind(first + 6, d.memory_clock_mhz);
  q.bind(first + 7, d.driver_version);
  q.bind(first + 8, d.cuda_version);
  q.bind(first + 9, d.ptxas_version);
}

// dtype, family, generator_version, params: how v4 names a row's kernel.
void BindKernel(SQLite::Statement& q, int first, const Context& ctx,
                const KernelConfig& k) {
  q.bind(first + 0, std::string(ToString(DTypeOf(ctx))));
  q.bind(first + 1, k.family);
  q.bind(first + 2, k.generator_version);
  q.bind(first + 3, k.ParamsText());
}

// family, generator_version, params from column `col` on.
StatusOr<KernelConfig> ReadKernel(SQLite::Statement& q, int col) {
  KernelConfig k;
  k.family = q.getColumn(col + 0).getString();
  k.generator_version = q.getColumn(col + 1).getInt();
  BT_ASSIGN_OR_RETURN(k.params,
                      ParamsFromText(k.family, q.getColumn(col + 2).getString()));
  return k;
}

std::string ReadBlob(SQLite::Statement& q, int col) {
  SQLite::Column c = q.getColumn(col);
  const char* data = static_cast<const char*>(c.getBlob());
  return data ? std::string(data, c.getBytes()) : std::string();
}

// A stored field that does not parse is damage to the file, not bad input.
template <typename T>
StatusOr<T> Stored(StatusOr<T> parsed, std::string_view table, int64_t id) {
  if (parsed.ok()) return parsed;
  return DataLoss(std::string(table) + " row " + std::to_string(id) + ": " +
                  parsed.status().message());
}

class SqliteStore final : public TuningStore {
 public:
  explicit SqliteStore(std::string path) : path_(std::move(path)) {}

  Status Open() {
    BT_RETURN_IF_ERROR(PrepareDatabaseFile(path_).status());
    return Guard([&]() -> Status {
      writer_ = std::make_unique<SQLite::Database>(path_, SQLite::OPEN_READWRITE,
                                                   kBusyTimeoutMs);
      std::string mode =
          writer_->execAndGet("PRAGMA journal_mode = WAL").getString();
      if (mode != "wal") {
        return FailedPrecondition("cannot put " + path_ +
                                  " in WAL mode (journal_mode is " + mode + ")");
      }
      writer_->exec("PRAGMA synchronous = FULL");
      writer_->exec("PRAGMA foreign_keys = ON");
      return Migrate();
    });
  }

  std::string Describe() const override { return path_; }
  int SchemaVersion() const override { return schema_version_; }

  StatusOr<CommitResult> Commit(const WriteBatch& batch) override {
    BT_RETURN_IF_ERROR(Validate(batch));
    std::lock_guard lock(write_mu_);
    CommitResult result;
    Status status = Guard([&]() -> Status {
      SQLite::Transaction txn(*writer_, SQLite::TransactionBehavior::IMMEDIATE);
      const DeviceIdFn device_id = DeviceIds();
      const int64_t now = NowUnix();
      InsertSamples(batch.samples, device_id, now);
      if (!batch.tuned.empty()) {
        SQLite::Statement q(*writer_,
            "INSERT INTO tuned (device_id, op, context, dtype, family, "
            "generator_version, params, predicted_s, measured_s, source, "
            "model_id, updated_unix) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (device_id, context, family, params) DO UPDATE "
            "SET generator_version = excluded.generator_version, "
            "predicted_s = excluded.predicted_s, "
            "measured_s = excluded.measured_s, source = excluded.source, "
            "model_id = excluded.model_id, updated_unix = excluded.updated_unix");
        for (const TunedRecord& t : batch.tuned) {
          q.bind(1, device_id(t.device));
          q.bind(2, std::string(ToString(OpOf(t.context))));
          q.bind(3, ToString(t.context));
          BindKernel(q, 4, t.context, t.kernel);
          q.bind(8, t.predicted_s);
          q.bind(9, t.measured_s);
          q.bind(10, std::string(ToString(t.source)));
          q.bind(11, static_cast<int64_t>(t.model_id));
          q.bind(12, static_cast<int64_t>(t.updated_unix ? t.updated_unix : now));
          q.exec();
          q.reset();
        }
      }
      for (const ModelRecord& m : batch.models) {
        SQLite::Statement q(*writer_,
            "INSERT INTO models (device_id, op, architecture, weights, "
            "normalization, training_samples, metrics_json, created_unix, "
            "training_set, libtorch_version, dtype, family, "
            "generator_version, data_version) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        q.bind(1, device_id(m.device));
        q.bind(2, std::string(ToString(m.op)));
        q.bind(3, m.architecture);
        q.bind(4, m.weights.data(), static_cast<int>(m.weights.size()));
        q.bind(5, m.normalization.data(),
               static_cast<int>(m.normalization.size()));
        q.bind(6, static_cast<int64_t>(m.training_samples));
        q.bind(7, m.metrics_json);
        q.bind(8, static_cast<int64_t>(m.created_unix ? m.created_unix : now));
        q.bind(9, m.training_set);
        q.bind(10, m.libtorch_version);
        q.bind(11, std::string(ToString(m.precision)));
        q.bind(12, m.family);
        q.bind(13, m.generator_version);
        q.bind(14, m.data_version);
        q.exec();
        result.model_ids.push_back(writer_->getLastInsertRowid());
      }
      for (const CampaignRecord& c : batch.campaign_updates) {
        BT_RETURN_IF_ERROR(WriteCampaign(c, device_id, now));  // rolls back
      }
      BumpGeneration(batch);
      txn.commit();
      return OkStatus();
    });
    // FindTuned reads the tuned rows and the devices they name, and a device
    // row never changes once written. A batch without tuned answers or
    // models (a campaign commits its samples every 250 ms) leaves every kept
    // answer right, so cached queries stay cached while a campaign runs.
    if (!batch.tuned.empty() || !batch.models.empty()) {
      tuned_cache_.Invalidate();  // after the write, even a failed one
    }
    if (!status.ok()) return status;
    return result;
  }

  StatusOr<std::vector<DeviceRecord>> ListDevices() override {
    std::vector<DeviceRecord> out;
    BT_RETURN_IF_ERROR(Read([&](SQLite::Database& db) {
      SQLite::Statement q(db, std::string("SELECT ") + kDeviceColumns +
          ", (SELECT COUNT(*) FROM samples s WHERE s.device_id = d.id), "
          "(SELECT COUNT(*) FROM tuned t WHERE t.device_id = d.id), "
          "(SELECT COUNT(*) FROM samples s WHERE s.device_id = d.id AND " +
          VersionCondition(VersionFilter::kStale, "s") + "), "
          "(SELECT COUNT(*) FROM tuned t WHERE t.device_id = d.id AND " +
          VersionCondition(VersionFilter::kStale, "t") + ") "
          "FROM devices d ORDER BY d.id");
      while (q.executeStep()) {
        out.push_back({ReadDevice(q, 0), q.getColumn(10).getInt64(),
                       q.getColumn(11).getInt64(), q.getColumn(12).getInt64(),
                       q.getColumn(13).getInt64()});
      }
      return OkStatus();
    }));
    return out;
  }

  StatusOr<std::vector<SampleRecord>> ListSamples(
      const StoreFilter& filter) override {
    std::vector<SampleRecord> out;
    BT_RETURN_IF_ERROR(Read([&](SQLite::Database& db) -> Status {
      SQLite::Statement q(db, std::string("SELECT ") + kDeviceColumns +
          ", s.id, s.campaign_id, s.context, s.family, s.generator_version, "
          "s.params, s.status, s.median_s, s.spread, s.repetitions, "
          "s.sm_clock_mhz, s.measured_unix, s.error, s.seq, "
          "s.kernel_digest "
          "FROM samples s JOIN devices d ON d.id = s.device_id " +
          SampleWhere(filter) + " ORDER BY s.id LIMIT ?4");
      BindFilter(q, filter);
      const int c = kDeviceColumnCount;
      while (q.executeStep()) {
        SampleRecord s;
        const int64_t id = q.getColumn(c).getInt64();
        s.device = ReadDevice(q, 0);
        s.campaign_id = q.getColumn(c + 1).getInt64();
        BT_ASSIGN_OR_RETURN(
            s.context,
            Stored(ContextFromString(q.getColumn(c + 2).getString()),
                   "samples", id));
        BT_ASSIGN_OR_RETURN(s.kernel, Stored(ReadKernel(q, c + 3), "samples", id));
        BT_ASSIGN_OR_RETURN(
            s.measurement.status,
            Stored(SampleStatusFromString(q.getColumn(c + 6).getString()),
                   "samples", id));
        s.measurement.median_s = q.getColumn(c + 7).getDouble();
        s.measurement.spread = q.getColumn(c + 8).getDouble();
        s.measurement.repetitions = q.getColumn(c + 9).getInt64();
        s.measurement.sm_clock_mhz = q.getColumn(c + 10).getDouble();
        s.measured_unix = q.getColumn(c + 11).getInt64();
        s.measurement.error = q.getColumn(c + 12).getString();
        s.seq = q.getColumn(c + 13).getInt64();
        s.kernel_digest = q.getColumn(c + 14).getString();
        out.push_back(std::move(s));
      }
      return OkStatus();
    }));
    return out;
  }

  StatusOr<int64_t> CountSamples(const StoreFilter& filter) override {
    int64_t count = 0;
    BT_RETURN_IF_ERROR(Read([&](SQLite::Database& db) {
      SQLite::Statement q(db, std::string(
          "SELECT COUNT(*) FROM (SELECT 1 FROM samples s "
          "JOIN devices d ON d.id = s.device_id ") + SampleWhere(filter) +
          " LIMIT ?4)");
      BindFilter(q, filter);
      q.executeStep();
      count = q.getColumn(0).getInt64();
      return OkStatus();
    }));
    return count;
  }

  StatusOr<std::vector<TunedRecord>> FindTuned(const Context& ctx,
                                               std::string_view device_name,
                                               int top) override {
    // Cached queries are the hot path (thousands a second): answered from
    // memory until the next commit.
    const std::string key = TunedCache::Key(ctx, device_name, top);
    uint64_t generation = 0;
    if (auto hit = tuned_cache_.Get(key, &generation)) return *std::move(hit);
    std::vector<TunedRecord> out;
    BT_RETURN_IF_ERROR(Read([&](SQLite::Database& db) {
      SQLite::Statement q(db, TunedSelect() +
          " WHERE t.context = ?1 AND (?2 = '' OR d.name = ?2) AND " +
          VersionCondition(VersionFilter::kCurrent, "t") +
          " ORDER BY t.measured_s <= 0, "
          "CASE WHEN t.measured_s > 0 THEN t.measured_s "
          "ELSE t.predicted_s END, t.device_id, t.family, t.params LIMIT ?3");
      q.bind(1, ToString(ctx));
      q.bind(2, std::string(device_name));
      q.bind(3, top);
      return ReadTuned(q, &out);
    }));
    tuned_cache_.Put(key, generation, out);
    return out;
  }

  StatusOr<std::vector<TunedRecord>> ListTuned(
      const StoreFilter& filter) override {
    std::vector<TunedRecord> out;
    BT_RETURN_IF_ERROR(Read([&](SQLite::Database& db) {
      SQLite::Statement q(db, TunedSelect() +
          " " + TunedWhere(filter) + " ORDER BY t.id LIMIT ?4");
      BindFilter(q, filter);
      return ReadTuned(q, &out);
    }));
    return out;
  }

  StatusOr<int64_t> CountTuned() override {
    int64_t count = 0;
    BT_RETURN_IF_ERROR(Read([&](SQLite::Database& db) {
      count = db.execAndGet("SELECT COUNT(*) FROM tuned").getInt64();
      return OkStatus();
    }));
    return count;
  }

  StatusOr<int64_t> CountTuned(const StoreFilter& filter) override {
    int64_t count = 0;
    BT_RETURN_IF_ERROR(Read([&](SQLite::Database& db) {
      SQLite::Statement q(db,
          "SELECT COUNT(*) FROM (SELECT 1 FROM tuned t "
          "JOIN devices d ON d.id = t.device_id " + TunedWhere(filter) +
          " LIMIT ?4)");
      BindFilter(q, filter);
      q.executeStep();
      count = q.getColumn(0).getInt64();
      return OkStatus();
    }));
    return count;
  }

  StatusOr<ModelRecord> GetModel(int64_t id) override {
    StoreFilter filter;
    std::vector<ModelRecord> found;
    BT_RETURN_IF_ERROR(ReadModels(filter, id, &found));
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
    std::lock_guard lock(write_mu_);
    int64_t id = 0;
    BT_RETURN_IF_ERROR(Guard([&]() {
      SQLite::Statement q(*writer_,
          "INSERT INTO campaigns (op, dtype, gpus, sampler, minutes, "
          "max_samples, seed, label, families, retune_stale, min_flops, "
          "max_flops, state, created_unix, updated_unix) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      const int k = BindSpec(q, 1, spec);
      q.bind(k, std::string(ToString(CampaignState::kQueued)));
      const int64_t now = NowUnix();
      q.bind(k + 1, static_cast<int64_t>(now));
      q.bind(k + 2, static_cast<int64_t>(now));
      q.exec();
      id = writer_->getLastInsertRowid();
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

  // One daemon opens the file, so write_mu_ is the campaign lock.
  StatusOr<CampaignRecord> PlanWork(int64_t id, const PlanFn& plan) override {
    std::lock_guard lock(write_mu_);
    BT_ASSIGN_OR_RETURN(CampaignRecord record, GetCampaign(id));
    BT_RETURN_IF_ERROR(Guard([&]() -> Status {
      SQLite::Transaction txn(*writer_, SQLite::TransactionBehavior::IMMEDIATE);
      const WorkTotals totals = ReadTotals(id);
      BT_ASSIGN_OR_RETURN(std::vector<WorkItem> items, plan(record, totals));
      BT_RETURN_IF_ERROR(Validate(record, "campaign"));
      SQLite::Statement q(*writer_,
          "INSERT INTO work_items (campaign_id, first_seq, count, candidates, "
          "state) VALUES (?, ?, ?, ?, ?)");
      int64_t next = totals.seqs;
      for (const WorkItem& item : items) {
        q.bind(1, static_cast<int64_t>(id));
        q.bind(2, static_cast<int64_t>(next));
        q.bind(3, static_cast<int64_t>(item.count));
        q.bind(4, item.candidates.data(),
               static_cast<int>(item.candidates.size()));
        q.bind(5, std::string(ToString(item.state == WorkState::kDone
                                           ? WorkState::kDone
                                           : WorkState::kQueued)));
        q.exec();
        q.reset();
        next += item.count;
      }
      const int64_t now = NowUnix();
      BT_RETURN_IF_ERROR(WriteCampaign(record, DeviceIds(), now));
      txn.commit();
      record.updated_unix = now;
      return OkStatus();
    }));
    return record;  // as written: no second read
  }

  StatusOr<std::optional<ClaimedWork>> ClaimWork(int64_t id,
                                                 const std::string& holder,
                                                 int lease_s) override {
    std::lock_guard lock(write_mu_);
    std::optional<ClaimedWork> claimed;
    BT_RETURN_IF_ERROR(Guard([&]() -> Status {
      SQLite::Transaction txn(*writer_, SQLite::TransactionBehavior::IMMEDIATE);
      SQLite::Statement find(*writer_,
          std::string("SELECT first_seq, count, candidates, attempts "
                      "FROM work_items WHERE campaign_id = ? AND "
                      "(state = 'queued' OR (state = 'leased' AND "
                      "lease_until_ms < ") + kNowMs +
              ")) ORDER BY first_seq LIMIT 1");
      find.bind(1, static_cast<int64_t>(id));
      if (!find.executeStep()) return OkStatus();
      WorkItem item;
      item.campaign_id = id;
      item.first_seq = find.getColumn(0).getInt64();
      item.count = find.getColumn(1).getInt64();
      item.candidates = ReadBlob(find, 2);
      item.attempts = find.getColumn(3).getInt64() + 1;
      item.state = WorkState::kLeased;
      item.holder = holder;
      SQLite::Statement lease(*writer_,
          std::string("UPDATE work_items SET state = 'leased', holder = ?, "
                      "attempts = attempts + 1, lease_until_ms = ") +
              kNowMs + " + ? WHERE campaign_id = ? AND first_seq = ?");
      lease.bind(1, holder);
      lease.bind(2, static_cast<int64_t>(1000LL * lease_s));
      lease.bind(3, static_cast<int64_t>(id));
      lease.bind(4, static_cast<int64_t>(item.first_seq));
      lease.exec();
      ClaimedWork work{std::move(item), {}};
      // "seq >= 0" lets SQLite use the partial index samples_campaign_seq
      // (WHERE seq >= 0): a bound parameter does not imply it, and without
      // it each claim and each stored sample's check scanned every sample
      // of the campaign (a campaign's commits grew with its square).
      SQLite::Statement seqs(*writer_,
          "SELECT seq FROM samples WHERE campaign_id = ? AND seq >= 0 AND "
          "seq >= ? AND seq < ? ORDER BY seq");
      seqs.bind(1, static_cast<int64_t>(id));
      seqs.bind(2, static_cast<int64_t>(work.item.first_seq));
      seqs.bind(3, static_cast<int64_t>(work.item.first_seq + work.item.count));
      while (seqs.executeStep())
        work.stored_seqs.push_back(seqs.getColumn(0).getInt64());
      txn.commit();
      claimed = std::move(work);
      return OkStatus();
    }));
    return claimed;
  }

  StatusOr<std::vector<int64_t>> RenewWork(int64_t id,
                                           const std::string& holder,
                                           const std::vector<int64_t>& items,
                                           int lease_s) override {
    std::lock_guard lock(write_mu_);
    std::vector<int64_t> lost;
    BT_RETURN_IF_ERROR(Guard([&]() -> Status {
      SQLite::Transaction txn(*writer_, SQLite::TransactionBehavior::IMMEDIATE);
      SQLite::Statement q(*writer_,
          std::string("UPDATE work_items SET lease_until_ms = ") + kNowMs +
              " + ? WHERE campaign_id = ? AND first_seq = ? AND "
              "state = 'leased' AND holder = ?");
      for (int64_t first : items) {
        q.bind(1, static_cast<int64_t>(1000LL * lease_s));
        q.bind(2, static_cast<int64_t>(id));
        q.bind(3, static_cast<int64_t>(first));
        q.bind(4, holder);
        if (q.exec() != 1) lost.push_back(first);
        q.reset();
      }
      txn.commit();
      return OkStatus();
    }));
    return lost;
  }

  StatusOr<CampaignRecord> CommitWork(int64_t id, const std::string& holder,
                                      const WorkCommit& work,
                                      const UpdateFn& update) override {
    BT_RETURN_IF_ERROR(Validate(work));
    std::lock_guard lock(write_mu_);
    BT_ASSIGN_OR_RETURN(CampaignRecord record, GetCampaign(id));
    BT_RETURN_IF_ERROR(Guard([&]() -> Status {
      SQLite::Transaction txn(*writer_, SQLite::TransactionBehavior::IMMEDIATE);
      SQLite::Statement held(*writer_,
          "SELECT 1 FROM work_items WHERE campaign_id = ? AND first_seq = ? "
          "AND state = 'leased' AND holder = ?");
      for (int64_t first : work.items) {
        held.bind(1, static_cast<int64_t>(id));
        held.bind(2, static_cast<int64_t>(first));
        held.bind(3, holder);
        if (!held.executeStep()) return WorkLost(id, first);
        held.reset();
      }
      SQLite::Statement stored(*writer_,
          "SELECT 1 FROM samples WHERE campaign_id = ? AND seq >= 0 AND "
          "seq = ?");  // seq >= 0: the partial index (see ClaimWork)
      for (const SampleRecord& s : work.samples) {
        if (s.seq < 0) continue;
        stored.bind(1, static_cast<int64_t>(id));
        stored.bind(2, static_cast<int64_t>(s.seq));
        if (stored.executeStep()) return SampleStored(id, s.seq);
        stored.reset();
      }
      const int64_t now = NowUnix();
      const DeviceIdFn device_id = DeviceIds();
      InsertSamples(work.samples, device_id, now);
      SQLite::Statement done(*writer_,
          "UPDATE work_items SET state = 'done' WHERE campaign_id = ? AND "
          "first_seq = ?");
      for (int64_t first : work.finished) {
        done.bind(1, static_cast<int64_t>(id));
        done.bind(2, static_cast<int64_t>(first));
        done.exec();
        done.reset();
      }
      BT_RETURN_IF_ERROR(update(record, ReadTotals(id)));
      BT_RETURN_IF_ERROR(Validate(record, "campaign"));
      BT_RETURN_IF_ERROR(WriteCampaign(record, device_id, now));
      txn.commit();
      record.updated_unix = now;
      return OkStatus();
    }));
    return record;  // as written: no second read
  }

  Status ReleaseWork(int64_t id, const std::string& holder,
                     const std::vector<int64_t>& items) override {
    std::lock_guard lock(write_mu_);
    return Guard([&]() -> Status {
      SQLite::Transaction txn(*writer_, SQLite::TransactionBehavior::IMMEDIATE);
      SQLite::Statement q(*writer_,
          "UPDATE work_items SET state = 'queued', holder = '', "
          "lease_until_ms = 0 WHERE campaign_id = ? AND first_seq = ? AND "
          "state = 'leased' AND holder = ?");
      for (int64_t first : items) {
        q.bind(1, static_cast<int64_t>(id));
        q.bind(2, static_cast<int64_t>(first));
        q.bind(3, holder);
        q.exec();
        q.reset();
      }
      txn.commit();
      return OkStatus();
    });
  }

  Status ExpireLeases() override {
    std::lock_guard lock(write_mu_);
    return Guard([&]() -> Status {
      writer_->exec(
          "UPDATE work_items SET lease_until_ms = 0 WHERE state = 'leased'");
      return OkStatus();
    });
  }

  StatusOr<std::vector<WorkItem>> ListWork(int64_t id) override {
    std::vector<WorkItem> out;
    BT_RETURN_IF_ERROR(Read([&](SQLite::Database& db) -> Status {
      SQLite::Statement q(db,
          "SELECT first_seq, count, state, holder, attempts FROM work_items "
          "WHERE campaign_id = ? ORDER BY first_seq");
      q.bind(1, static_cast<int64_t>(id));
      while (q.executeStep()) {
        WorkItem w;
        w.campaign_id = id;
        w.first_seq = q.getColumn(0).getInt64();
        w.count = q.getColumn(1).getInt64();
        BT_ASSIGN_OR_RETURN(w.state,
                            WorkStateFromString(q.getColumn(2).getString()));
        w.holder = q.getColumn(3).getString();
        w.attempts = q.getColumn(4).getInt64();
        out.push_back(std::move(w));
      }
      return OkStatus();
    }));
    return out;
  }

  StatusOr<StoreGeneration> Generation() override {
    StoreGeneration g;
    BT_RETURN_IF_ERROR(Read([&](SQLite::Database& db) -> Status {
      SQLite::Statement q(db, "SELECT tuned, models FROM store_generation");
      if (q.executeStep()) {
        g.tuned = q.getColumn(0).getInt64();
        g.models = q.getColumn(1).getInt64();
      }
      return OkStatus();
    }));
    return g;
  }

 private:
  // ?1 device name ('' = any), ?2 op ('' = any), ?3 campaign id (-1 = any),
  // ?4 limit (-1 = none), ?5 family ('' = any); the versions are written in.
  static std::string SampleWhere(const StoreFilter& f) {
    return "WHERE (?1 = '' OR d.name = ?1) AND (?2 = '' OR s.op = ?2) "
           "AND (?3 < 0 OR s.campaign_id = ?3) "
           "AND (?5 = '' OR s.family = ?5) AND " +
           VersionCondition(f.versions, "s");
  }
  static std::string TunedWhere(const StoreFilter& f) {
    return "WHERE (?1 = '' OR d.name = ?1) AND (?2 = '' OR t.op = ?2) "
           "AND (?5 = '' OR t.family = ?5) AND " +
           VersionCondition(f.versions, "t");
  }

  static void BindFilter(SQLite::Statement& q, const StoreFilter& f) {
    q.bind(1, f.device_name);
    q.bind(2, f.op ? std::string(ToString(*f.op)) : std::string());
    q.bind(3, static_cast<int64_t>(f.campaign_id ? *f.campaign_id : -1));
    q.bind(4, static_cast<int64_t>(f.limit > 0 ? f.limit : -1));
    q.bind(5, f.family);
  }

  // Binds the spec's columns from `first` on (op, dtype, gpus, sampler,
  // minutes, max_samples, seed, label, families, retune_stale, min_flops,
  // max_flops); returns the next position.
  static int BindSpec(SQLite::Statement& q, int first, const CampaignSpec& s) {
    q.bind(first + 0, std::string(ToString(s.op)));
    q.bind(first + 1, std::string(ToString(s.dtype)));
    std::string gpus;
    for (int g : s.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    q.bind(first + 2, gpus);
    q.bind(first + 3, s.sampler);
    q.bind(first + 4, static_cast<int64_t>(s.minutes));
    q.bind(first + 5, static_cast<int64_t>(s.max_samples));
    q.bind(first + 6, static_cast<int64_t>(s.seed));  // stored bit for bit
    q.bind(first + 7, s.label);
    std::string families;
    for (const std::string& f : s.families)
      families += (families.empty() ? "" : ",") + f;
    q.bind(first + 8, families);
    q.bind(first + 9, s.retune_stale ? 1 : 0);
    q.bind(first + 10, s.min_flops);
    q.bind(first + 11, s.max_flops);
    return first + 12;
  }

  static std::string TunedSelect() {
    return std::string("SELECT ") + kDeviceColumns +
           ", t.id, t.context, t.family, t.generator_version, t.params, "
           "t.predicted_s, t.measured_s, t.source, t.model_id, t.updated_unix "
           "FROM tuned t JOIN devices d ON d.id = t.device_id";
  }

  static Status ReadTuned(SQLite::Statement& q, std::vector<TunedRecord>* out) {
    const int c = kDeviceColumnCount;
    while (q.executeStep()) {
      TunedRecord t;
      const int64_t id = q.getColumn(c).getInt64();
      t.device = ReadDevice(q, 0);
      BT_ASSIGN_OR_RETURN(
          t.context, Stored(ContextFromString(q.getColumn(c + 1).getString()),
                            "tuned", id));
      BT_ASSIGN_OR_RETURN(t.kernel, Stored(ReadKernel(q, c + 2), "tuned", id));
      t.predicted_s = q.getColumn(c + 5).getDouble();
      t.measured_s = q.getColumn(c + 6).getDouble();
      BT_ASSIGN_OR_RETURN(
          t.source,
          Stored(TunedSourceFromString(q.getColumn(c + 7).getString()),
                 "tuned", id));
      t.model_id = q.getColumn(c + 8).getInt64();
      t.updated_unix = q.getColumn(c + 9).getInt64();
      out->push_back(std::move(t));
    }
    return OkStatus();
  }

  // id > 0: that model only; else every model matching `filter`.
  Status ReadModels(const StoreFilter& filter, int64_t id,
                    std::vector<ModelRecord>* out) {
    return Read([&](SQLite::Database& db) -> Status {
      SQLite::Statement q(db, std::string("SELECT ") + kDeviceColumns +
          ", m.id, m.op, m.architecture, m.weights, m.normalization, "
          "m.training_samples, m.metrics_json, m.created_unix, m.training_set, "
          "m.libtorch_version, m.dtype, m.family, m.generator_version, "
          "m.data_version "
          "FROM models m JOIN devices d ON d.id = m.device_id "
          "WHERE (?1 = '' OR d.name = ?1) AND (?2 = '' OR m.op = ?2) "
          "AND (?3 = 0 OR m.id = ?3) AND (?5 = '' OR m.family = ?5) AND " +
          VersionCondition(id > 0 ? VersionFilter::kAll : filter.versions, "m",
                           /*model=*/true) +
          " ORDER BY m.id LIMIT ?4");
      BindFilter(q, filter);
      q.bind(3, static_cast<int64_t>(id));
      const int c = kDeviceColumnCount;
      while (q.executeStep()) {
        ModelRecord m;
        m.device = ReadDevice(q, 0);
        m.id = q.getColumn(c).getInt64();
        BT_ASSIGN_OR_RETURN(
            m.op, Stored(OpFromString(q.getColumn(c + 1).getString()),
                         "models", m.id));
        m.architecture = q.getColumn(c + 2).getString();
        m.weights = ReadBlob(q, c + 3);
        m.normalization = ReadBlob(q, c + 4);
        m.training_samples = q.getColumn(c + 5).getInt64();
        m.metrics_json = q.getColumn(c + 6).getString();
        m.created_unix = q.getColumn(c + 7).getInt64();
        m.training_set = q.getColumn(c + 8).getString();
        m.libtorch_version = q.getColumn(c + 9).getString();
        BT_ASSIGN_OR_RETURN(
            m.precision, Stored(DTypeFromString(q.getColumn(c + 10).getString()),
                                "models", m.id));
        m.family = q.getColumn(c + 11).getString();
        m.generator_version = q.getColumn(c + 12).getInt();
        m.data_version = q.getColumn(c + 13).getInt();
        out->push_back(std::move(m));
      }
      return OkStatus();
    });
  }

  // id > 0: that campaign only; else all of them.
  Status ReadCampaigns(int64_t id, std::vector<CampaignRecord>* out) {
    return Read([&](SQLite::Database& db) -> Status {
      SQLite::Statement q(db, std::string("SELECT ") + kDeviceColumns +
          ", c.id, c.op, c.dtype, c.gpus, c.minutes, c.max_samples, c.seed, "
          "c.label, c.state, c.samples_ok, c.samples_failed, c.rng_state, "
          "c.message, c.created_unix, c.updated_unix, c.device_id, "
          "c.sampler, c.families, c.retune_stale, c.min_flops, c.max_flops "
          "FROM campaigns c LEFT JOIN devices d ON d.id = c.device_id "
          "WHERE (?1 = 0 OR c.id = ?1) ORDER BY c.id");
      q.bind(1, static_cast<int64_t>(id));
      const int k = kDeviceColumnCount;
      while (q.executeStep()) {
        CampaignRecord c;
        c.id = q.getColumn(k).getInt64();
        BT_ASSIGN_OR_RETURN(
            c.spec.op, Stored(OpFromString(q.getColumn(k + 1).getString()),
                              "campaigns", c.id));
        BT_ASSIGN_OR_RETURN(
            c.spec.dtype,
            Stored(DTypeFromString(q.getColumn(k + 2).getString()),
                   "campaigns", c.id));
        {
          std::stringstream gpus(q.getColumn(k + 3).getString());
          std::string g;
          while (std::getline(gpus, g, ',')) c.spec.gpus.push_back(std::stoi(g));
        }
        c.spec.sampler = q.getColumn(k + 16).getString();
        {
          std::stringstream families(q.getColumn(k + 17).getString());
          std::string f;
          while (std::getline(families, f, ',')) c.spec.families.push_back(f);
        }
        c.spec.retune_stale = q.getColumn(k + 18).getInt() != 0;
        c.spec.min_flops = q.getColumn(k + 19).getDouble();
        c.spec.max_flops = q.getColumn(k + 20).getDouble();
        c.spec.minutes = q.getColumn(k + 4).getInt64();
        c.spec.max_samples = q.getColumn(k + 5).getInt64();
        c.spec.seed = static_cast<uint64_t>(q.getColumn(k + 6).getInt64());
        c.spec.label = q.getColumn(k + 7).getString();
        BT_ASSIGN_OR_RETURN(
            c.state,
            Stored(CampaignStateFromString(q.getColumn(k + 8).getString()),
                   "campaigns", c.id));
        c.samples_ok = q.getColumn(k + 9).getInt64();
        c.samples_failed = q.getColumn(k + 10).getInt64();
        c.rng_state = ReadBlob(q, k + 11);
        c.message = q.getColumn(k + 12).getString();
        c.created_unix = q.getColumn(k + 13).getInt64();
        c.updated_unix = q.getColumn(k + 14).getInt64();
        if (!q.getColumn(k + 15).isNull()) c.device = ReadDevice(q, 0);
        out->push_back(std::move(c));
      }
      return OkStatus();
    });
  }

  using DeviceIdFn = std::function<int64_t(const DeviceFingerprint&)>;

  // Device ids for one transaction, each looked up (or added) once.
  // Caller holds write_mu_ inside a transaction.
  DeviceIdFn DeviceIds() {
    auto ids = std::make_shared<std::map<DeviceFingerprint, int64_t>>();
    return [this, ids](const DeviceFingerprint& d) {
      auto it = ids->find(d);
      if (it != ids->end()) return it->second;
      return (*ids)[d] = UpsertDevice(d);
    };
  }

  // Caller holds write_mu_ inside a transaction.
  void InsertSamples(const std::vector<SampleRecord>& samples,
                     const DeviceIdFn& device_id, int64_t now) {
    if (samples.empty()) return;
    SQLite::Statement q(*writer_,
        "INSERT INTO samples (device_id, campaign_id, op, context, "
        "dtype, family, generator_version, params, status, median_s, "
        "spread, repetitions, sm_clock_mhz, measured_unix, error, seq, "
        "kernel_digest) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    for (const SampleRecord& s : samples) {
      const Measurement& m = s.measurement;
      q.bind(1, device_id(s.device));
      q.bind(2, static_cast<int64_t>(s.campaign_id));
      q.bind(3, std::string(ToString(OpOf(s.context))));
      q.bind(4, ToString(s.context));
      BindKernel(q, 5, s.context, s.kernel);
      q.bind(9, std::string(ToString(m.status)));
      q.bind(10, m.median_s);
      q.bind(11, m.spread);
      q.bind(12, static_cast<int64_t>(m.repetitions));
      q.bind(13, m.sm_clock_mhz);
      q.bind(14, static_cast<int64_t>(s.measured_unix ? s.measured_unix
                                                      : now));
      q.bind(15, m.error);
      q.bind(16, static_cast<int64_t>(s.seq));
      q.bind(17, s.kernel_digest);
      q.exec();
      q.reset();
    }
  }

  // Caller holds write_mu_ inside a transaction.
  Status WriteCampaign(const CampaignRecord& c, const DeviceIdFn& device_id,
                       int64_t now) {
    SQLite::Statement q(*writer_,
        "UPDATE campaigns SET op = ?, dtype = ?, gpus = ?, sampler = ?, "
        "minutes = ?, max_samples = ?, seed = ?, label = ?, families = ?, "
        "retune_stale = ?, min_flops = ?, max_flops = ?, state = ?, "
        "device_id = ?, samples_ok = ?, "
        "samples_failed = ?, rng_state = ?, message = ?, "
        "updated_unix = ? WHERE id = ?");
    const int k = BindSpec(q, 1, c.spec);
    q.bind(k, std::string(ToString(c.state)));
    if (c.device) q.bind(k + 1, device_id(*c.device));
    else q.bind(k + 1);
    q.bind(k + 2, static_cast<int64_t>(c.samples_ok));
    q.bind(k + 3, static_cast<int64_t>(c.samples_failed));
    q.bind(k + 4, c.rng_state.data(), static_cast<int>(c.rng_state.size()));
    q.bind(k + 5, c.message);
    q.bind(k + 6, static_cast<int64_t>(now));
    q.bind(k + 7, static_cast<int64_t>(c.id));
    if (q.exec() != 1) {
      return NotFound("campaign " + std::to_string(c.id) +
                      " does not exist");
    }
    return OkStatus();
  }

  // Caller holds write_mu_ inside a transaction.
  void BumpGeneration(const WriteBatch& batch) {
    if (batch.tuned.empty() && batch.models.empty()) return;
    SQLite::Statement q(*writer_,
        "UPDATE store_generation SET tuned = tuned + ?, models = models + ?");
    q.bind(1, static_cast<int64_t>(!batch.tuned.empty()));
    q.bind(2, static_cast<int64_t>(!batch.models.empty()));
    q.exec();
  }

  // Caller holds write_mu_ inside a transaction.
  WorkTotals ReadTotals(int64_t id) {
    SQLite::Statement q(*writer_,
        "SELECT COUNT(*), COALESCE(SUM(state <> 'done'), 0), "
        "COALESCE(SUM(count), 0) FROM work_items WHERE campaign_id = ?");
    q.bind(1, static_cast<int64_t>(id));
    q.executeStep();
    return {q.getColumn(0).getInt64(), q.getColumn(1).getInt64(),
            q.getColumn(2).getInt64()};
  }

  // Milliseconds since the epoch on the database's clock (here: this
  // machine's, the only one that opens the file).
  static constexpr const char* kNowMs =
      "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

  // Caller holds write_mu_ inside a transaction.
  int64_t UpsertDevice(const DeviceFingerprint& d) {
    SQLite::Statement find(*writer_,
        "SELECT id FROM devices WHERE name = ? AND cc_major = ? AND "
        "cc_minor = ? AND sm_count = ? AND memory_bytes = ? AND "
        "sm_clock_mhz = ? AND memory_clock_mhz = ? AND driver_version = ? AND "
        "cuda_version = ? AND ptxas_version = ?");
    BindDevice(find, 1, d);
    if (find.executeStep()) return find.getColumn(0).getInt64();
    SQLite::Statement insert(*writer_,
        "INSERT INTO devices (name, cc_major, cc_minor, sm_count, "
        "memory_bytes, sm_clock_mhz, memory_clock_mhz, driver_version, "
        "cuda_version, ptxas_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    BindDevice(insert, 1, d);
    insert.exec();
    return writer_->getLastInsertRowid();
  }

  Status Migrate() {
    int version = writer_->execAndGet("PRAGMA user_version").getInt();
    const int current = CurrentSchemaVersion();
    if (version > current) {
      return FailedPrecondition(
          path_ + " has schema version " + std::to_string(version) +
          ", newer than this blocktuned knows (" + std::to_string(current) +
          "); use a newer blocktuned or another --db");
    }
    for (const Migration& m : Migrations()) {
      if (m.version <= version) continue;
      SQLite::Transaction txn(*writer_, SQLite::TransactionBehavior::IMMEDIATE);
      writer_->exec(std::string(m.sql));
      writer_->exec("PRAGMA user_version = " + std::to_string(m.version));
      txn.commit();
      version = m.version;
    }
    schema_version_ = version;
    return OkStatus();
  }

  // Runs `fn` on a reader connection from the pool.
  template <typename Fn>
  Status Read(Fn&& fn) {
    std::unique_ptr<SQLite::Database> db;
    {
      std::lock_guard lock(readers_mu_);
      if (!readers_.empty()) {
        db = std::move(readers_.back());
        readers_.pop_back();
      }
    }
    Status status = Guard([&]() -> Status {
      if (!db) {
        db = std::make_unique<SQLite::Database>(path_, SQLite::OPEN_READWRITE,
                                                kBusyTimeoutMs);
        db->exec("PRAGMA query_only = 1");
      }
      return fn(*db);
    });
    if (db && status.ok()) {
      std::lock_guard lock(readers_mu_);
      if (readers_.size() < kMaxIdleReaders) readers_.push_back(std::move(db));
    }
    return status;
  }

  template <typename Fn>
  Status Guard(Fn&& fn) {
    try {
      return fn();
    } catch (const SQLite::Exception& e) {
      return FromSqlite(e, path_);
    } catch (const std::exception& e) {
      return Internal("sqlite (" + path_ + "): " + e.what());
    }
  }

  const std::string path_;
  TunedCache tuned_cache_;
  int schema_version_ = 0;
  std::mutex write_mu_;
  std::unique_ptr<SQLite::Database> writer_;
  std::mutex readers_mu_;
  std::vector<std::unique_ptr<SQLite::Database>> readers_;
};

}  // namespace

StatusOr<std::vector<std::string>> PrepareDatabaseFile(const std::string& path) {
  if (path.empty()) return InvalidArgument("database path must not be empty");
  // A file that is there and is not a database is refused before anything
  // (its mode included) is changed.
  if (struct stat there {}; stat(path.c_str(), &there) == 0) {
    if (S_ISDIR(there.st_mode)) {
      return FailedPrecondition(path + " is a folder, not a database file; "
                                "give --db a file's path");
    }
    if (there.st_size > 0) {
      char header[16] = {};
      std::ifstream in(path, std::ios::binary);
      in.read(header, sizeof(header));
      if (in.gcount() < 16 || std::memcmp(header, "SQLite format 3", 16) != 0) {
        return DataLoss(path + " is not a blocktune database (not "
                                  "an SQLite file); left as it is. Give --db "
                                  "a new path or an existing database");
      }
    }
  }
  BT_RETURN_IF_ERROR(MakeParentDirs(path));
  BT_RETURN_IF_ERROR(CreatePrivateFile(path));
  std::vector<std::string> warnings;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return FailedPrecondition("cannot stat " + path + ": " + std::strerror(errno));
  }
  if ((st.st_mode & 077) != 0 && st.st_uid == geteuid()) {
    // An older blocktune, or a copy, left it readable by others.
    if (chmod(path.c_str(), st.st_mode & 0700) == 0) {
      char mode[8];
      std::snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
      warnings.push_back(path + " had mode " + mode +
                         ", readable by others; it is now 0600");
    }
  }
  if (access(path.c_str(), W_OK) != 0) {
    warnings.push_back(path + " is not writable (" + std::strerror(errno) +
                       "): queries answer from it, but imports, campaigns "
                       "and training will fail");
  }
  return warnings;
}

StatusOr<std::unique_ptr<TuningStore>> OpenSqliteStore(const std::string& path) {
  if (path.empty()) return InvalidArgument("database path must not be empty");
  auto store = std::make_unique<SqliteStore>(path);
  BT_RETURN_IF_ERROR(store->Open());
  return std::unique_ptr<TuningStore>(std::move(store));
}

}  // namespace blocktune
