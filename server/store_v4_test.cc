// Schema v4 (issue 19 part 3): kernel families, generator versions and
// precision in the store, parameters by name; the v3 -> v4 migration on a
// real v3 file (server/testdata/store_v3.db, see its README); stale rows
// (not the family's current generator version) kept but never answered.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "server/schema.h"
#include "server/both_stores_test.h"
#include "server/store_test_util.h"
#include "server/tuning_store.h"

namespace blocktune {
namespace {

using namespace ::blocktune::testing;  // NOLINT

// The K_G reduction change (2d62d6b): v3 rows measured before it are
// generator version 0.
constexpr int64_t kReductionChangeUnix = 1795317143;

std::string Fixture() {
  return std::string(BLOCKTUNE_SOURCE_DIR) + "/server/testdata/store_v3.db";
}

// A private copy of the fixture (the store migrates what it opens).
std::string CopyFixture(const TempDir& dir) {
  const std::string copy = dir.path() + "/v3.db";
  std::filesystem::copy_file(Fixture(), copy);
  return copy;
}

struct RawKernel {
  std::string op;
  BlockShape xb;
  int64_t unix_time = 0;
};

// id -> (op, x_B, measured/updated time) of a v3 table, read with SQL.
std::map<int64_t, RawKernel> ReadV3(const std::string& path,
                                    const std::string& table,
                                    const std::string& time_column) {
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA user_version").getInt(), 3);
  SQLite::Statement q(raw, "SELECT id, op, ml, nl, ms, ns, u, kg, " +
                               time_column + " FROM " + table);
  std::map<int64_t, RawKernel> out;
  while (q.executeStep()) {
    RawKernel k;
    k.op = q.getColumn(1).getString();
    k.xb = {q.getColumn(2).getInt64(), q.getColumn(3).getInt64(),
            q.getColumn(4).getInt64(), q.getColumn(5).getInt64(),
            q.getColumn(6).getInt64(), q.getColumn(7).getInt64()};
    k.unix_time = q.getColumn(8).getInt64();
    out[q.getColumn(0).getInt64()] = k;
  }
  return out;
}

TEST(StoreV4Test, MigratesTheV3Fixture) {
  ASSERT_TRUE(std::filesystem::exists(Fixture())) << Fixture();
  TempDir dir;
  const std::string db = CopyFixture(dir);
  const auto raw_samples = ReadV3(db, "samples", "measured_unix");
  const auto raw_tuned = ReadV3(db, "tuned", "updated_unix");
  ASSERT_EQ(raw_samples.size(), 450u);
  ASSERT_EQ(raw_tuned.size(), 2u);

  auto store = OpenSqliteStore(db);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  // Through v4 (families), v5 (campaigns name their families), v6 (work
  // items, generation counters), v7 (kernel digests) and on to v8
  // (campaigns' work bounds).
  EXPECT_EQ((*store)->SchemaVersion(), 8);
  EXPECT_EQ(CurrentSchemaVersion(), 8);

  // Samples: ffma family by op, version by date, the same x_B by name.
  auto samples = (*store)->ListSamples({});
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), 450u);
  std::map<std::pair<int64_t, int>, int> per_campaign_version;
  auto it = raw_samples.begin();  // both in id order
  for (const SampleRecord& s : *samples) {
    const RawKernel& raw = (it++)->second;
    const Op op = OpOf(s.context);
    EXPECT_EQ(std::string(ToString(op)), raw.op);
    EXPECT_EQ(s.kernel.family, op == Op::kGemm ? "gemm.ffma" : "conv.ffma");
    EXPECT_EQ(DTypeOf(s.context), DType::kFp32);
    ASSERT_TRUE(s.kernel.block_shape().has_value());
    EXPECT_EQ(*s.kernel.block_shape(), raw.xb) << s.seq;
    EXPECT_EQ(s.measured_unix, raw.unix_time);
    EXPECT_EQ(s.kernel_digest, "");  // unknown before v7
    // The README: the first half of each campaign is dated before the change.
    const int64_t half = s.campaign_id == 1 ? 150 : 75;
    const int expected = s.seq < half ? 0 : 1;
    EXPECT_EQ(s.kernel.generator_version, expected)
        << "campaign " << s.campaign_id << " seq " << s.seq;
    EXPECT_EQ(s.kernel.generator_version,
              s.measured_unix < kReductionChangeUnix ? 0 : 1);
    // Version 1 was current until ST (version 2): every row is stale now.
    EXPECT_FALSE(s.kernel.IsCurrent());
    ++per_campaign_version[{s.campaign_id, s.kernel.generator_version}];
  }
  EXPECT_EQ((per_campaign_version[{1, 0}]), 150);
  EXPECT_EQ((per_campaign_version[{1, 1}]), 150);
  EXPECT_EQ((per_campaign_version[{2, 0}]), 75);
  EXPECT_EQ((per_campaign_version[{2, 1}]), 75);

  StoreFilter stale, current;
  stale.versions = VersionFilter::kStale;
  current.versions = VersionFilter::kCurrent;
  EXPECT_EQ(*(*store)->CountSamples(stale), 450);
  EXPECT_EQ(*(*store)->CountSamples(current), 0);
  StoreFilter conv_stale = stale;
  conv_stale.family = "conv.ffma";
  EXPECT_EQ(*(*store)->CountSamples(conv_stale), 150);

  // Models: the GEMM model predates the change; the conv model was made
  // after it but learned from version-0 samples, so both are stale.
  auto models = (*store)->ListModels({});
  ASSERT_TRUE(models.ok()) << models.status().ToString();
  ASSERT_EQ(models->size(), 2u);
  const ModelRecord& gemm_model = (*models)[0];
  const ModelRecord& conv_model = (*models)[1];
  EXPECT_EQ(gemm_model.op, Op::kGemm);
  EXPECT_EQ(gemm_model.family, "gemm.ffma");
  EXPECT_EQ(gemm_model.precision, DType::kFp32);
  EXPECT_EQ(gemm_model.generator_version, 0);
  EXPECT_EQ(gemm_model.data_version, 0);
  EXPECT_EQ(conv_model.family, "conv.ffma");
  EXPECT_EQ(conv_model.generator_version, 1);
  EXPECT_EQ(conv_model.data_version, 0);
  EXPECT_FALSE(gemm_model.IsCurrent());
  EXPECT_FALSE(conv_model.IsCurrent());
  EXPECT_FALSE(gemm_model.weights.empty());
  EXPECT_EQ(gemm_model.architecture, "16,16");
  EXPECT_TRUE((*store)->ListModels(current)->empty());
  EXPECT_EQ((*store)->ListModels(stale)->size(), 2u);

  // Tuned answers: the same x_B; both predicted by a stale model, so stale.
  auto tuned = (*store)->ListTuned({});
  ASSERT_TRUE(tuned.ok()) << tuned.status().ToString();
  ASSERT_EQ(tuned->size(), 2u);
  auto raw_t = raw_tuned.begin();
  for (const TunedRecord& t : *tuned) {
    const RawKernel& raw = (raw_t++)->second;
    EXPECT_EQ(std::string(ToString(OpOf(t.context))), raw.op);
    EXPECT_EQ(t.kernel.family, raw.op + ".ffma");
    ASSERT_TRUE(t.kernel.block_shape().has_value());
    EXPECT_EQ(*t.kernel.block_shape(), raw.xb);
    EXPECT_EQ(t.kernel.generator_version, 0);
    EXPECT_EQ(t.source, TunedSource::kPredicted);
    // Stale: never an answer.
    EXPECT_TRUE((*store)->FindTuned(t.context, "", 5)->empty());
  }
  EXPECT_EQ(*(*store)->CountTuned(), 2);
  EXPECT_EQ(*(*store)->CountTuned(stale), 2);
  EXPECT_EQ(*(*store)->CountTuned(current), 0);

  // Everything else as it was.
  auto devices = (*store)->ListDevices();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].samples, 450);
  EXPECT_EQ((*devices)[0].tuned, 2);
  EXPECT_EQ((*devices)[0].stale_samples, 450);  // all, since version 2
  EXPECT_EQ((*devices)[0].stale_tuned, 2);
  auto campaigns = (*store)->ListCampaigns();
  ASSERT_EQ(campaigns->size(), 2u);
  EXPECT_EQ((*campaigns)[0].samples_ok, 297);
  EXPECT_EQ((*campaigns)[1].samples_ok, 149);

  // The old columns are gone; the file is whole.
  store->reset();
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA user_version").getInt(), 8);
  EXPECT_EQ(raw.execAndGet("PRAGMA integrity_check").getString(), "ok");
  for (const char* table : {"samples", "tuned"}) {
    EXPECT_EQ(raw.execAndGet(std::string("SELECT COUNT(*) FROM pragma_table_info('") +
                             table + "') WHERE name IN ('ml', 'kg')")
                  .getInt(),
              0)
        << table;
  }
  EXPECT_EQ(raw.execAndGet("SELECT params FROM samples ORDER BY id LIMIT 1")
                .getString(),
            "ML=8 NL=8 MS=4 NS=8 U=1 KG=16");
}

// A gemm.mma row: bf16 context, the family's own parameter names.
KernelConfig MmaKernel(int which = 0) {
  const KernelFamily* mma = *FindFamily("gemm.mma");
  return KernelConfig::Current(*mma, mma->DefaultCandidates().at(which));
}

GemmContext Bf16Gemm(int64_t m) {
  GemmContext g = TestGemm(m, 4096, 4096);
  g.dtype = DType::kBf16;
  return g;
}

using StoreV4BothTest = BothStoresTest;

TEST_P(StoreV4BothTest, RoundTripsGemmMmaRecordsByName) {
  const KernelConfig mma = MmaKernel();
  ASSERT_EQ(mma.family, "gemm.mma");
  ASSERT_TRUE(mma.IsCurrent());
  EXPECT_FALSE(mma.block_shape().has_value());
  WriteBatch batch;
  SampleRecord s = TestSample(1, 0);
  s.context = Bf16Gemm(2048);
  s.kernel = mma;
  batch.samples.push_back(s);
  batch.samples.push_back(TestSample(1, 1));  // a gemm.ffma fp32 one beside it
  batch.tuned.push_back(TestTuned(Bf16Gemm(2048), TestShape(64, 64), 2e-5));
  batch.tuned.back().kernel = mma;
  ModelRecord m;
  m.device = TestDevice();
  m.op = Op::kGemm;
  m.precision = DType::kBf16;
  m.family = "gemm.mma";
  m.generator_version = m.data_version = mma.generator_version;
  m.architecture = "16,16";
  batch.models.push_back(m);
  auto committed = store_->Commit(batch);
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();

  auto samples = store_->ListSamples({});
  ASSERT_EQ(samples->size(), 2u);
  EXPECT_EQ((*samples)[0].kernel, mma);
  EXPECT_EQ(ToString((*samples)[0].context), ToString(Context(Bf16Gemm(2048))));
  EXPECT_EQ((*samples)[1].kernel.family, "gemm.ffma");
  StoreFilter only_mma;
  only_mma.family = "gemm.mma";
  EXPECT_EQ(*store_->CountSamples(only_mma), 1);

  auto found = store_->FindTuned(Bf16Gemm(2048), "", 3);
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].kernel, mma);
  auto model = store_->GetModel(committed->model_ids.at(0));
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->family, "gemm.mma");
  EXPECT_EQ(model->precision, DType::kBf16);
  EXPECT_TRUE(model->IsCurrent());

  // The same parameters again replace the answer; others add one.
  WriteBatch again;
  again.tuned.push_back((*found)[0]);
  again.tuned.back().measured_s = 1e-5;
  again.tuned.push_back((*found)[0]);
  again.tuned.back().kernel = MmaKernel(1);
  ASSERT_TRUE(store_->Commit(again).ok());
  EXPECT_EQ(*store_->CountTuned(), 2);
  found = store_->FindTuned(Bf16Gemm(2048), "", 3);
  ASSERT_EQ(found->size(), 2u);
  EXPECT_DOUBLE_EQ((*found)[0].measured_s, 1e-5);

  if (IsSqlite()) {  // by name in the file
    store_.reset();
    SQLite::Database raw(dir_.path() + "/store.db", SQLite::OPEN_READONLY);
    SQLite::Statement q(raw,
        "SELECT family, generator_version, dtype, params FROM samples "
        "ORDER BY id LIMIT 1");
    ASSERT_TRUE(q.executeStep());
    EXPECT_EQ(q.getColumn(0).getString(), "gemm.mma");
    EXPECT_EQ(q.getColumn(1).getInt(), mma.generator_version);
    EXPECT_EQ(q.getColumn(2).getString(), "bf16");
    EXPECT_EQ(q.getColumn(3).getString(),
              (*FindFamily("gemm.mma"))->Format(mma.params));
  }
}

TEST_P(StoreV4BothTest, RefusesKernelsThatDoNotFit) {
  WriteBatch batch;
  batch.samples.push_back(TestSample(1, 0));
  batch.samples[0].kernel.family = "gemm.nope";
  auto r = store_->Commit(batch);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("samples[0].family"), std::string::npos)
      << r.status().ToString();
  batch.samples[0].kernel = KernelConfig::OfBlockShape(Op::kConv, TestShape(64, 64));
  r = store_->Commit(batch);  // a conv family for a GEMM context
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  batch.samples[0].kernel = MmaKernel();
  batch.samples[0].kernel.generator_version += 1;  // a newer blocktune's
  r = store_->Commit(batch);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("samples[0].generator_version"),
            std::string::npos)
      << r.status().ToString();
  batch.samples[0].kernel = MmaKernel();
  batch.samples[0].kernel.params.size = 3;
  EXPECT_EQ(store_->Commit(batch).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(*store_->CountSamples({}), 0);
}

// Rows of an older generator stay, are listed and counted as stale, and
// never reach a reader of current data (training) or an answer.
TEST_P(StoreV4BothTest, StaleRowsNeverReachTrainingOrAnswers) {
  const Context ctx = TestGemm(4096, 16, 4096);
  WriteBatch batch;
  for (int i = 0; i < 4; ++i) {
    SampleRecord s = TestSample(1, i);
    s.context = ctx;
    if (i % 2 == 0) s.kernel.generator_version = 0;  // before the change
    batch.samples.push_back(s);
  }
  TunedRecord stale_fast = TestTuned(ctx, TestShape(128, 16), 1e-6);
  stale_fast.kernel.generator_version = 0;
  batch.tuned = {stale_fast, TestTuned(ctx, TestShape(64, 16), 3e-5)};
  ModelRecord m;
  m.device = TestDevice();
  m.op = Op::kGemm;
  m.family = "gemm.ffma";
  m.architecture = "16";
  m.generator_version = m.data_version = 0;
  batch.models.push_back(m);
  m.generator_version = m.data_version = BlockShapeFamily(Op::kGemm).version();
  batch.models.push_back(m);
  ASSERT_TRUE(store_->Commit(batch).ok());

  StoreFilter current, stale;
  current.versions = VersionFilter::kCurrent;
  stale.versions = VersionFilter::kStale;
  // What TrainModel reads.
  current.family = "gemm.ffma";
  current.op = Op::kGemm;
  auto training = store_->ListSamples(current);
  ASSERT_EQ(training->size(), 2u);
  for (const SampleRecord& s : *training) EXPECT_TRUE(s.kernel.IsCurrent());
  EXPECT_EQ(*store_->CountSamples(stale), 2);
  EXPECT_EQ(*store_->CountSamples({}), 4);
  // Answers: the stale one is faster and still never comes back.
  auto found = store_->FindTuned(ctx, "", 5);
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ(*(*found)[0].kernel.block_shape(), TestShape(64, 16));
  EXPECT_EQ(store_->ListTuned(current)->size(), 1u);
  auto stale_tuned = store_->ListTuned(stale);
  ASSERT_EQ(stale_tuned->size(), 1u);
  EXPECT_EQ((*stale_tuned)[0].kernel.generator_version, 0);
  EXPECT_EQ(*store_->CountTuned(), 2);
  auto devices = store_->ListDevices();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].samples, 4);
  EXPECT_EQ((*devices)[0].stale_samples, 2);
  EXPECT_EQ((*devices)[0].stale_tuned, 1);
  // Models: what the daemon loads.
  StoreFilter current_models;
  current_models.versions = VersionFilter::kCurrent;
  auto models = store_->ListModels(current_models);
  ASSERT_EQ(models->size(), 1u);
  EXPECT_TRUE((*models)[0].IsCurrent());
  EXPECT_EQ(store_->ListModels(stale)->size(), 1u);

  // Re-measured with the current generator, the answer is current again.
  WriteBatch retuned;
  retuned.tuned = {TestTuned(ctx, TestShape(128, 16), 2e-6)};
  ASSERT_TRUE(store_->Commit(retuned).ok());
  found = store_->FindTuned(ctx, "", 5);
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ(*(*found)[0].kernel.block_shape(), TestShape(128, 16));
  EXPECT_EQ(*store_->CountTuned(stale), 0);
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreV4BothTest, AllStoreKinds(), StoreKindName);

}  // namespace
}  // namespace blocktune
