// One suite, run against every TuningStore implementation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <type_traits>

#include "server/pg_store.h"
#include "server/pg_test_server.h"
#include "server/store_test_util.h"
#include "server/tuning_store.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using namespace ::blocktune::testing;  // NOLINT

struct MemoryFactory {
  std::unique_ptr<TuningStore> Make() { return NewMemoryStore(); }
};

struct SqliteFactory {
  TempDir dir;
  std::unique_ptr<TuningStore> Make() {
    auto store = OpenSqliteStore(dir.path() + "/store.db");
    if (!store.ok()) ADD_FAILURE() << store.status().ToString();
    return std::move(store).value();
  }
};

// A fresh database on the test binary's PostgreSQL server; null (and the
// test skipped) where the PostgreSQL binaries are absent.
struct PostgresFactory {
  std::string skip;
  std::unique_ptr<TuningStore> Make() {
    PgTestServer* server = PgTestServer::Shared(&skip);
    if (!server) return nullptr;
    auto store = OpenPostgresStore(server->NewDatabase());
    if (!store.ok()) ADD_FAILURE() << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }
};

template <typename Factory>
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = factory_.Make();
    if constexpr (std::is_same_v<Factory, PostgresFactory>) {
      if (!factory_.skip.empty())
        GTEST_SKIP() << "no PostgreSQL server: " << factory_.skip;
    }
    ASSERT_NE(store_, nullptr);
  }
  Factory factory_;
  std::unique_ptr<TuningStore> store_;
};

using Factories =
    ::testing::Types<MemoryFactory, SqliteFactory, PostgresFactory>;
TYPED_TEST_SUITE(StoreTest, Factories);

TYPED_TEST(StoreTest, SamplesRoundTripWithEveryField) {
  WriteBatch batch;
  batch.samples.push_back(TestSample(7, 0));
  SampleRecord failed = TestSample(7, 1);
  ConvContext conv;
  conv.n = 1;
  conv.h = conv.w = 56;
  conv.c = conv.k = 64;
  conv.r = conv.s = 3;
  conv.pad_h = conv.pad_w = 1;
  conv.stride_w = 2;
  failed.context = conv;
  // The same x_B, of the conv family now that records name their family.
  failed.kernel =
      KernelConfig::OfBlockShape(Op::kConv, *failed.kernel.block_shape());
  failed.campaign_id = 3;
  failed.measurement = Measurement{};
  failed.measurement.status = SampleStatus::kCompileError;
  failed.measurement.error = "ptxas: too many registers\nline 2";
  batch.samples.push_back(failed);
  ASSERT_TRUE(this->store_->Commit(batch).ok());

  auto samples = this->store_->ListSamples({});
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), 2u);
  const SampleRecord& a = (*samples)[0];
  EXPECT_EQ(a.device, TestDevice());
  EXPECT_EQ(a.context, batch.samples[0].context);
  EXPECT_EQ(a.kernel, batch.samples[0].kernel);
  EXPECT_DOUBLE_EQ(a.measurement.median_s, 1e-5);
  EXPECT_EQ(a.measurement.repetitions, 20);
  EXPECT_EQ(a.measured_unix, 7);
  const SampleRecord& b = (*samples)[1];
  EXPECT_EQ(b.context, Context(conv));
  EXPECT_EQ(b.campaign_id, 3);
  EXPECT_EQ(b.measurement.status, SampleStatus::kCompileError);
  EXPECT_EQ(b.measurement.error, "ptxas: too many registers\nline 2");
}

TYPED_TEST(StoreTest, DevicesAreKeptOncePerFingerprint) {
  WriteBatch batch;
  batch.samples = {TestSample(1, 0), TestSample(1, 1),
                   TestSample(1, 2, TestDevice("NVIDIA A100-SXM4-40GB"))};
  DeviceFingerprint new_driver = TestDevice();
  new_driver.driver_version = "13.1";
  batch.samples.push_back(TestSample(1, 3, new_driver));
  ASSERT_TRUE(this->store_->Commit(batch).ok());
  auto devices = this->store_->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 3u);
  EXPECT_EQ((*devices)[0].fingerprint, TestDevice());
  EXPECT_EQ((*devices)[0].samples, 2);
  EXPECT_EQ((*devices)[2].fingerprint.driver_version, "13.1");
}

TYPED_TEST(StoreTest, ABadRecordWritesNothing) {
  WriteBatch batch;
  for (int i = 0; i < 5; ++i) batch.samples.push_back(TestSample(1, i));
  batch.samples.push_back(TestSample(1, 5));
  std::get<GemmContext>(batch.samples[5].context).k = 0;
  Status s = this->store_->Commit(batch).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("samples[5].context.gemm.k must be in"));
  EXPECT_EQ(*this->store_->CountSamples({}), 0);

  WriteBatch stamped;
  stamped.tuned.push_back(TestTuned(TestGemm(8, 8, 8), TestShape(8, 8), 1e-5));
  stamped.tuned[0].updated_unix = -1;
  EXPECT_THAT(this->store_->Commit(stamped).status().message(),
              HasSubstr("tuned[0].updated_unix must be in [0,"));

  // An update of a campaign that does not exist rolls back its samples too.
  WriteBatch orphan;
  orphan.samples.push_back(TestSample(2, 0));
  CampaignRecord ghost;
  ghost.id = 42;
  ghost.spec.minutes = 1;
  orphan.campaign_updates.push_back(ghost);
  EXPECT_EQ(this->store_->Commit(orphan).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(*this->store_->CountSamples({}), 0);
  EXPECT_TRUE(this->store_->ListDevices()->empty() ||
              (*this->store_->ListDevices())[0].samples == 0);
}

TYPED_TEST(StoreTest, FiltersByDeviceOpCampaignAndLimit) {
  WriteBatch batch;
  for (int i = 0; i < 6; ++i) {
    SampleRecord s = TestSample(1, i, i < 4 ? TestDevice() : TestDevice("A100"));
    s.campaign_id = i % 2 + 1;
    batch.samples.push_back(s);
  }
  ASSERT_TRUE(this->store_->Commit(batch).ok());
  StoreFilter by_device;
  by_device.device_name = "A100";
  EXPECT_EQ(*this->store_->CountSamples(by_device), 2);
  StoreFilter by_campaign;
  by_campaign.campaign_id = 2;
  EXPECT_EQ(this->store_->ListSamples(by_campaign)->size(), 3u);
  StoreFilter by_op;
  by_op.op = Op::kConv;
  EXPECT_EQ(*this->store_->CountSamples(by_op), 0);
  StoreFilter limited;
  limited.limit = 4;
  auto first4 = this->store_->ListSamples(limited);
  ASSERT_EQ(first4->size(), 4u);
  EXPECT_EQ(std::get<GemmContext>((*first4)[3].context).m, 64 + 3);
}

TYPED_TEST(StoreTest, TunedAnswersRankFastestFirstAndReplace) {
  Context ctx = TestGemm(4096, 16, 4096);
  WriteBatch batch;
  batch.tuned = {TestTuned(ctx, TestShape(64, 16), 3e-4),
                 TestTuned(ctx, TestShape(128, 16), 1e-4),
                 TestTuned(ctx, TestShape(32, 16, 4), 2e-4),
                 TestTuned(TestGemm(1024, 16, 4096), TestShape(64, 16), 1e-5),
                 TestTuned(ctx, TestShape(64, 16), 9e-5, TestDevice("A100"))};
  TunedRecord predicted = TestTuned(ctx, TestShape(256, 16), 0);
  predicted.predicted_s = 5e-4;
  predicted.source = TunedSource::kPredicted;
  predicted.model_id = 9;
  batch.tuned.push_back(predicted);
  ASSERT_TRUE(this->store_->Commit(batch).ok());

  auto top = this->store_->FindTuned(ctx, "NVIDIA H100 80GB HBM3", 3);
  ASSERT_TRUE(top.ok()) << top.status().ToString();
  ASSERT_EQ(top->size(), 3u);
  EXPECT_EQ(*(*top)[0].kernel.block_shape(), TestShape(128, 16));
  EXPECT_EQ(*(*top)[1].kernel.block_shape(), TestShape(32, 16, 4));
  EXPECT_EQ(*(*top)[2].kernel.block_shape(), TestShape(64, 16));
  auto all = this->store_->FindTuned(ctx, "", 100);
  ASSERT_EQ(all->size(), 5u);
  EXPECT_EQ((*all)[0].device.name, "A100");
  EXPECT_EQ((*all)[4].source, TunedSource::kPredicted);
  EXPECT_EQ((*all)[4].model_id, 9);
  EXPECT_GT((*all)[4].updated_unix, 0);

  // Committing the same (device, context, block shape) replaces the answer.
  WriteBatch again;
  again.tuned = {TestTuned(ctx, TestShape(64, 16), 5e-5)};
  ASSERT_TRUE(this->store_->Commit(again).ok());
  top = this->store_->FindTuned(ctx, "NVIDIA H100 80GB HBM3", 1);
  ASSERT_EQ(top->size(), 1u);
  EXPECT_EQ(*(*top)[0].kernel.block_shape(), TestShape(64, 16));
  // A question asked before the commit (the SQLite store keeps its answers
  // in memory) gets the new answer too.
  top = this->store_->FindTuned(ctx, "NVIDIA H100 80GB HBM3", 3);
  ASSERT_EQ(top->size(), 3u);
  EXPECT_EQ(*(*top)[0].kernel.block_shape(), TestShape(64, 16));
  EXPECT_DOUBLE_EQ((*top)[0].measured_s, 5e-5);
  EXPECT_EQ(*this->store_->CountTuned(), 6);
  EXPECT_TRUE(this->store_->FindTuned(TestGemm(8, 8, 8), "", 5)->empty());
}

TYPED_TEST(StoreTest, ModelsGetIdsAndBytesSurvive) {
  WriteBatch batch;
  ModelRecord m;
  m.device = TestDevice();
  m.op = Op::kConv;
  m.family = "conv.ffma";
  m.generator_version = m.data_version = BlockShapeFamily(Op::kConv).version();
  m.architecture = "64,128,64";
  m.weights = std::string("\0\x01\xff weights", 10);
  m.normalization = "norm";
  m.training_samples = 200000;
  m.metrics_json = R"({"val_mse":0.06})";
  batch.models = {m, m};
  batch.models[1].op = Op::kGemm;
  batch.models[1].family = "gemm.ffma";
  auto result = this->store_->Commit(batch);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->model_ids.size(), 2u);
  auto got = this->store_->GetModel(result->model_ids[0]);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->weights, m.weights);
  EXPECT_EQ(got->op, Op::kConv);
  EXPECT_EQ(got->training_samples, 200000);
  StoreFilter gemm;
  gemm.op = Op::kGemm;
  EXPECT_EQ(this->store_->ListModels(gemm)->size(), 1u);
  EXPECT_EQ(this->store_->GetModel(99).status().code(), StatusCode::kNotFound);
}

TYPED_TEST(StoreTest, CampaignsMoveWithTheirSamples) {
  CampaignSpec spec;
  spec.op = Op::kConv;
  spec.minutes = 20;
  spec.seed = ~uint64_t{0};
  spec.label = "first H100 run";
  auto created = this->store_->CreateCampaign(spec);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->state, CampaignState::kQueued);
  EXPECT_EQ(created->spec, spec);
  EXPECT_FALSE(created->device.has_value());

  CampaignRecord running = *created;
  running.state = CampaignState::kRunning;
  running.device = TestDevice();
  running.samples_ok = 2;
  running.rng_state = std::string("\0rng", 4);
  WriteBatch batch;
  batch.samples = {TestSample(1, 0), TestSample(1, 1)};
  for (auto& s : batch.samples) s.campaign_id = created->id;
  batch.campaign_updates = {running};
  ASSERT_TRUE(this->store_->Commit(batch).ok());

  auto got = this->store_->GetCampaign(created->id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->state, CampaignState::kRunning);
  EXPECT_EQ(got->device, TestDevice());
  EXPECT_EQ(got->samples_ok, 2);
  EXPECT_EQ(got->rng_state, running.rng_state);
  EXPECT_EQ(got->spec.seed, ~uint64_t{0});
  StoreFilter mine;
  mine.campaign_id = created->id;
  EXPECT_EQ(*this->store_->CountSamples(mine), 2);
  ASSERT_TRUE(this->store_->CreateCampaign(spec).ok());
  EXPECT_EQ(this->store_->ListCampaigns()->size(), 2u);
  EXPECT_EQ(this->store_->GetCampaign(77).status().code(),
            StatusCode::kNotFound);
  spec.minutes = 0;
  EXPECT_EQ(this->store_->CreateCampaign(spec).status().code(),
            StatusCode::kInvalidArgument);
}

// Schema v5: the families a campaign samples and retune_stale survive
// creation and every update, in order.
TYPED_TEST(StoreTest, CampaignsKeepTheirFamiliesAndRetune) {
  CampaignSpec spec;
  spec.dtype = DType::kBf16;
  spec.max_samples = 100;
  spec.families = {"gemm.mma"};
  auto created = this->store_->CreateCampaign(spec);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->spec, spec);

  CampaignSpec retune;
  retune.dtype = DType::kTf32;
  retune.retune_stale = true;  // no budget: every stale sample
  auto second = this->store_->CreateCampaign(retune);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->spec, retune);
  EXPECT_TRUE(second->spec.retune_stale);
  EXPECT_TRUE(second->spec.families.empty());

  CampaignRecord update = *second;
  update.state = CampaignState::kDone;
  update.spec.families = {"gemm.mma"};
  WriteBatch batch;
  batch.campaign_updates = {update};
  ASSERT_TRUE(this->store_->Commit(batch).ok());
  auto list = this->store_->ListCampaigns();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].spec, spec);
  EXPECT_EQ((*list)[1].spec, update.spec);
  EXPECT_EQ((*list)[1].state, CampaignState::kDone);

  // Schema v8: the work bounds survive creation and updates.
  CampaignSpec large;
  large.max_samples = 10;
  large.min_flops = 0x1p36;
  large.max_flops = 0x1p40;
  auto third = this->store_->CreateCampaign(large);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_EQ(third->spec, large);
  CampaignRecord moved = *third;
  moved.spec.max_flops = 0x1p42;
  batch.campaign_updates = {moved};
  ASSERT_TRUE(this->store_->Commit(batch).ok());
  EXPECT_EQ(this->store_->GetCampaign(third->id)->spec, moved.spec);

  // A family of the op that does not implement the dtype is never stored.
  spec.families = {"gemm.ffma"};
  auto refused = this->store_->CreateCampaign(spec);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("spec.families[0]"));
}

// Readers keep working, and only ever see whole batches, while a writer
// commits batches as fast as it can.
TYPED_TEST(StoreTest, ReadersSeeWholeBatchesWhileAWriterCommits) {
  constexpr int kBatches = 150;
  constexpr int kBatchSize = 40;
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      int64_t last = 0;
      while (!done.load()) {
        auto count = this->store_->CountSamples({});
        if (!count.ok() || *count % kBatchSize != 0 || *count < last) {
          ++failures;
          ADD_FAILURE() << "reader " << r << ": "
                        << (count.ok() ? std::to_string(*count)
                                       : count.status().ToString());
          return;
        }
        last = *count;
        if (r == 0) {
          auto samples = this->store_->ListSamples({});
          if (!samples.ok() || samples->size() % kBatchSize != 0) {
            ++failures;
            ADD_FAILURE() << "partial batch visible";
            return;
          }
        }
        ++reads;
        // A pause between reads, so that three readers taking a mutex in a
        // loop cannot starve the writer (the memory store's test took
        // minutes on two busy cores without it).
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  }
  for (int b = 0; b < kBatches; ++b) {
    WriteBatch batch;
    for (int i = 0; i < kBatchSize; ++i)
      batch.samples.push_back(TestSample(b + 1, i));
    ASSERT_TRUE(this->store_->Commit(batch).ok());
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(reads.load(), 3);
  EXPECT_EQ(*this->store_->CountSamples({}), kBatches * kBatchSize);
}

// A row of gemm.ffma version 1 has no ST: it reads as ST = 1, what the
// version-1 generator did (ParamSpec::absent_means). A parameter without
// absent_means is still required.
TEST(ParamsFromTextTest, AParameterAddedLaterReadsAsItsOldValue) {
  auto v1 = ParamsFromText("gemm.ffma", "ML=64 NL=32 MS=4 NS=2 U=8 KG=1");
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_EQ(v1->size, 7);
  EXPECT_EQ((*v1)[6], 1);
  auto v2 = ParamsFromText("gemm.ffma", "ML=64 NL=32 MS=4 NS=2 U=8 KG=1 ST=4");
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ((*v2)[6], 4);
  EXPECT_THAT(ParamsFromText("gemm.ffma", "ML=64 NL=32 MS=4 NS=2 U=8 ST=4")
                  .status().message(),
              ::testing::HasSubstr("KG is missing for family gemm.ffma"));
  EXPECT_FALSE(ParamsFromText("gemm.ffma", "ML=64 NL=32 MS=4 NS=2 KG=1").ok());
}

}  // namespace
}  // namespace blocktune
