// blocktuned migrate: a SQLite store copied into PostgreSQL (and, where the
// PostgreSQL binaries are absent, into another SQLite file) with provenance.
#include "server/store_migrate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/family.h"
#include "server/pg_store.h"
#include "server/pg_test_server.h"
#include "server/store_test_util.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using namespace ::blocktune::testing;  // NOLINT

class StoreMigrateTest : public ::testing::Test {
 protected:
  // A SQLite store with a campaign and its samples, a stale sample, a
  // model and a tuned answer it predicted; returns its path.
  std::string MakeSource() {
    const std::string path = dir_.path() + "/source.db";
    auto store = OpenSqliteStore(path);
    EXPECT_TRUE(store.ok());
    CampaignSpec spec;
    spec.max_samples = 3;
    spec.label = "before the fleet";
    auto campaign = (*store)->CreateCampaign(spec);
    EXPECT_TRUE(campaign.ok());
    WriteBatch models;
    ModelRecord m;
    m.device = TestDevice();
    m.op = Op::kGemm;
    m.family = "gemm.ffma";
    m.generator_version = m.data_version =
        BlockShapeFamily(Op::kGemm).version();
    m.architecture = "64,128,64";
    m.weights = std::string("\0\x01\xff weights", 10);
    m.normalization = "norm";
    m.training_samples = 3;
    m.training_set = "seed=7";
    m.metrics_json = "{}";
    m.created_unix = 1700000000;
    models.models = {m};
    auto model_ids = (*store)->Commit(models);
    EXPECT_TRUE(model_ids.ok());
    WriteBatch batch;
    for (int i = 0; i < 3; ++i) {
      batch.samples.push_back(TestSample(1700000100, i));
      batch.samples.back().campaign_id = campaign->id;
      batch.samples.back().seq = i;
    }
    batch.samples.push_back(TestSample(1600000000, 9));
    batch.samples.back().kernel.generator_version = 0;  // stale
    batch.tuned.push_back(
        TestTuned(TestGemm(64, 64, 64), TestShape(64, 64), 0));
    batch.tuned.back().predicted_s = 2e-5;
    batch.tuned.back().source = TunedSource::kPredicted;
    batch.tuned.back().model_id = model_ids->model_ids[0];
    CampaignRecord done = *campaign;
    done.state = CampaignState::kDone;
    done.samples_ok = 3;
    done.device = TestDevice();
    done.rng_state = std::string("\0rng", 4);
    batch.campaign_updates = {done};
    auto committed = (*store)->Commit(batch);
    EXPECT_TRUE(committed.ok()) << committed.status().ToString();
    return path;
  }

  std::string Target(bool* postgres) {
    std::string why;
    PgTestServer* server = PgTestServer::Shared(&why);
    *postgres = server != nullptr;
    if (!server) return dir_.path() + "/target.db";
    return server->NewDatabase();
  }

  TempDir dir_;
};

TEST_F(StoreMigrateTest, CopiesEverythingWithProvenance) {
  const std::string from = MakeSource();
  bool postgres = false;
  const std::string to = Target(&postgres);
  if (!postgres) std::cerr << "no PostgreSQL server: migrating to SQLite\n";
  auto done = MigrateDatabases(from, to);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_THAT(*done, HasSubstr("copied 4 samples, 1 tuned answers, 1 models "
                               "and 1 campaigns"));

  auto source = OpenSqliteStore(from);
  auto target = postgres ? OpenPostgresStore(to) : OpenSqliteStore(to);
  ASSERT_TRUE(source.ok() && target.ok());
  const StoreFilter all;
  auto before = (*source)->ListSamples(all);
  auto after = (*target)->ListSamples(all);
  ASSERT_EQ(after->size(), before->size());
  for (size_t i = 0; i < before->size(); ++i) {
    const SampleRecord& a = (*before)[i];
    const SampleRecord& b = (*after)[i];
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.kernel, b.kernel);  // family, generator version, params
    EXPECT_EQ(ToString(a.context), ToString(b.context));
    EXPECT_EQ(a.seq, b.seq);
    EXPECT_EQ(a.measured_unix, b.measured_unix);
    EXPECT_EQ(a.measurement.median_s, b.measurement.median_s);
  }
  StoreFilter stale;
  stale.versions = VersionFilter::kStale;
  EXPECT_EQ(*(*target)->CountSamples(stale), 1);

  auto campaigns = (*target)->ListCampaigns();
  ASSERT_EQ(campaigns->size(), 1u);
  const CampaignRecord& c = (*campaigns)[0];
  EXPECT_EQ(c.spec.label, "before the fleet");
  EXPECT_EQ(c.state, CampaignState::kDone);
  EXPECT_EQ(c.samples_ok, 3);
  EXPECT_EQ(c.rng_state, std::string("\0rng", 4));
  ASSERT_TRUE(c.device.has_value());
  StoreFilter of_campaign;
  of_campaign.campaign_id = c.id;
  EXPECT_EQ(*(*target)->CountSamples(of_campaign), 3);

  auto models = (*target)->ListModels(all);
  ASSERT_EQ(models->size(), 1u);
  EXPECT_EQ((*models)[0].weights, std::string("\0\x01\xff weights", 10));
  EXPECT_EQ((*models)[0].training_set, "seed=7");
  EXPECT_EQ((*models)[0].created_unix, 1700000000);
  auto tuned = (*target)->ListTuned(all);
  ASSERT_EQ(tuned->size(), 1u);
  EXPECT_EQ((*tuned)[0].model_id, (*models)[0].id);
  EXPECT_EQ((*tuned)[0].source, TunedSource::kPredicted);

  // Never twice into the same database.
  auto again = MigrateDatabases(from, to);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("not empty"));
}

TEST_F(StoreMigrateTest, BadArgumentsNameTheFlag) {
  auto missing = MigrateDatabases(dir_.path() + "/none.db", "dbname=x");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("--from"));
  const std::string from = MakeSource();
  auto down = MigrateDatabases(
      from, "host=" + dir_.path() + " dbname=x password=s3cret");
  ASSERT_FALSE(down.ok());
  EXPECT_THAT(down.status().message(), HasSubstr("--to"));
  EXPECT_THAT(down.status().message(), ::testing::Not(HasSubstr("s3cret")));
}

}  // namespace
}  // namespace blocktune
