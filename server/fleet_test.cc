// Issue 22: a fleet. Three real blocktuned processes, each with a fake GPU
// (the worker seam of tuner/worker.h), on one real PostgreSQL database:
// one campaign spread over all three, kill -9 of one mid-campaign, a model
// trained on one answering on the others, and answers cached on every
// daemon refreshed after another daemon's write.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "proto/convert.h"
#include "proto/dataset_file.h"
#include "proto/dataset_stream.h"
#include "server/daemon_process.h"
#include "server/pg_store.h"
#include "server/pg_test_server.h"
#include "server/record_convert.h"
#include "server/store_test_util.h"
#include "server/tuning_store.h"
#include "tuner/worker.pb.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using namespace ::blocktune::testing;  // NOLINT
using Clock = std::chrono::steady_clock;

std::unique_ptr<grpc::ClientContext> Ctx() { return ContextWithDeadline(90); }

class FleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    server_ = PgTestServer::Shared(&why);
    if (!server_) GTEST_SKIP() << "no PostgreSQL server: " << why;
    db_ = server_->NewDatabase();
  }

  // A daemon named `name` on the shared database with one fake GPU whose
  // samples take `fake`'s time; leases of 2 s, so a dead daemon's items
  // come back quickly.
  std::unique_ptr<DaemonProcess> Start(const std::string& name,
                                       const std::string& fake) {
    std::vector<std::string> args = {
        "--listen", "unix:" + dir_.path() + "/" + name + ".sock", "--db", db_,
        "--name", name, "--lease-s", "2", "--log-level", "debug"};
    if (!fake.empty()) {
      args.insert(args.end(), {"--fake-gpus", "1", "--fake-worker", fake});
    } else {
      args.insert(args.end(), {"--gpus", "none"});
    }
    auto d = std::make_unique<DaemonProcess>(
        BLOCKTUNED, args, dir_.path() + "/" + name + ".log");
    EXPECT_TRUE(d->ok()) << d->Log();
    return d;
  }

  // The first progress message a watch of campaign `id` gets.
  static v1::CampaignProgress Progress(const DaemonProcess& d, int64_t id) {
    v1::WatchCampaignRequest req;
    req.set_id(id);
    auto ctx = Ctx();
    auto reader = d.NewStub()->WatchCampaign(ctx.get(), req);
    v1::CampaignProgress p;
    EXPECT_TRUE(reader->Read(&p));
    ctx->TryCancel();
    reader->Finish();
    return p;
  }

  // Waits up to `seconds` for `done`.
  template <typename Fn>
  static bool WaitFor(Fn done, double seconds) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // Imports the test data's 4,000 fp32 GEMM samples into `d` (as measured
  // on `device` where given) and trains a small model on them; returns its
  // id, 0 (and a test failure) when training failed.
  static int64_t TrainSmallModel(const DaemonProcess& d,
                                 const std::string& device = "") {
    auto dataset = ReadDatasetFile(std::string(BLOCKTUNE_SOURCE_DIR) +
                                   "/server/testdata/gemm-4000.json.gz");
    EXPECT_TRUE(dataset.ok()) << dataset.status().ToString();
    if (!dataset.ok()) return 0;
    if (!device.empty()) {
      for (v1::Sample& sample : *dataset->mutable_samples())
        sample.mutable_device()->set_name(device);
    }
    v1::ImportResponse imported;
    EXPECT_TRUE(ImportDataset(*d.NewStub(), Ctx().get(), *std::move(dataset),
                              &imported)
                    .ok());
    return TrainSmallGemmModel(d);
  }

  static grpc::Status Query(const DaemonProcess& d, v1::QueryResponse* resp,
                            int64_t m = 4096) {
    v1::QueryRequest req;
    GemmContext g = TestGemm(m, 16, 4096);
    g.layout_b = Layout::kT;
    ToProto(Context(g), req.mutable_context());
    req.set_top(1);
    return d.NewStub()->Query(Ctx().get(), req, resp);
  }

  PgTestServer* server_ = nullptr;
  std::string db_;
  TempDir dir_;
};

// One campaign, three daemons: every daemon measures a share, kill -9 of
// one mid-campaign loses nothing (its items are claimed again once their
// leases run out) and stores nothing twice; any daemon's watch shows the
// whole campaign and each daemon's share.
TEST_F(FleetTest, ThreeDaemonsRunOneCampaignAndSurviveKill9OfOne) {
  constexpr int64_t kSamples = 3000;
  auto a = Start("box-a", "measure_us=4000");
  auto b = Start("box-b", "measure_us=4000");
  auto c = Start("box-c", "measure_us=4000");
  v1::StartCampaignRequest start;
  start.mutable_spec()->set_op(v1::OP_GEMM);
  start.mutable_spec()->set_dtype(v1::DTYPE_FP32);
  start.mutable_spec()->set_max_samples(kSamples);
  start.mutable_spec()->set_seed(22);
  v1::StartCampaignResponse started;
  ASSERT_TRUE(a->NewStub()->StartCampaign(Ctx().get(), start, &started).ok());
  const int64_t id = started.campaign().id();

  // b joins (it polls the store for campaigns started elsewhere) and
  // measures; then it dies mid-campaign, holding items.
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto p = Progress(*c, id);
        auto share = p.samples_by_daemon().find("box-b");
        return share != p.samples_by_daemon().end() && share->second >= 100 &&
               p.samples_by_daemon().count("box-c") > 0;
      },
      60))
      << a->Log() << b->Log();
  const v1::CampaignProgress before = Progress(*c, id);
  EXPECT_LT(before.done(), kSamples) << "the campaign ended before the kill";
  EXPECT_EQ(b->Stop(SIGKILL), 128 + SIGKILL);

  const v1::CampaignProgress last = WatchToTheEnd(*c, id);
  const v1::Campaign& done = last.campaign();
  EXPECT_EQ(done.state(), v1::CAMPAIGN_STATE_DONE) << done.message();
  EXPECT_EQ(done.samples_ok() + done.samples_failed(), kSamples);
  EXPECT_EQ(last.done(), kSamples);
  ASSERT_EQ(last.samples_by_daemon_size(), 3);
  int64_t total = 0;
  for (const auto& [name, n] : last.samples_by_daemon()) {
    EXPECT_GT(n, 0) << name;
    total += n;
  }
  EXPECT_EQ(total, kSamples);
  // The killed daemon's share is what it committed before it died.
  EXPECT_GE(last.samples_by_daemon().at("box-b"),
            before.samples_by_daemon().at("box-b"));
  // a's watch tells the same story.
  const v1::CampaignProgress from_a = WatchToTheEnd(*a, id);
  EXPECT_EQ(from_a.samples_by_daemon().at("box-a"),
            last.samples_by_daemon().at("box-a"));

  // In the database: exactly the planned candidates, each once.
  auto store = OpenPostgresStore(db_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  StoreFilter filter;
  filter.campaign_id = id;
  auto samples = (*store)->ListSamples(filter);
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(static_cast<int64_t>(samples->size()), kSamples);
  std::set<int64_t> seqs;
  for (const SampleRecord& s : *samples)
    EXPECT_TRUE(seqs.insert(s.seq).second) << "seq " << s.seq << " twice";
  EXPECT_EQ(*seqs.begin(), 0);
  EXPECT_EQ(*seqs.rbegin(), kSamples - 1);
  // b's items were taken over by the others.
  auto items = (*store)->ListWork(id);
  ASSERT_TRUE(items.ok());
  int taken_over = 0;
  for (const WorkItem& w : *items) {
    EXPECT_EQ(w.state, WorkState::kDone);
    taken_over += w.attempts > 1;
  }
  EXPECT_GT(taken_over, 0) << "b held no item when it died";
  EXPECT_THAT(a->Log() + c->Log(), HasSubstr("took over the item"));
  EXPECT_EQ(a->Stop(SIGTERM), 0);
  EXPECT_EQ(c->Stop(SIGTERM), 0);
}

// A daemon that stops (SIGTERM) gives its items back at once; the others
// finish the campaign without waiting for leases, and cancelling on one
// daemon stops a campaign the others run.
TEST_F(FleetTest, CancelOnOneDaemonStopsTheCampaignOnAll) {
  auto a = Start("box-a", "measure_us=4000");
  auto b = Start("box-b", "measure_us=4000");
  v1::StartCampaignRequest start;
  start.mutable_spec()->set_op(v1::OP_GEMM);
  start.mutable_spec()->set_dtype(v1::DTYPE_FP32);
  start.mutable_spec()->set_max_samples(1000000);
  v1::StartCampaignResponse started;
  ASSERT_TRUE(a->NewStub()->StartCampaign(Ctx().get(), start, &started).ok());
  const int64_t id = started.campaign().id();
  ASSERT_TRUE(WaitFor(
      [&] { return Progress(*a, id).samples_by_daemon().count("box-b") > 0; },
      60));
  v1::CancelCampaignRequest cancel;
  cancel.set_id(id);
  v1::CancelCampaignResponse cancelled;
  // b did not start it and a runs it too: b's cancel ends it everywhere.
  ASSERT_TRUE(b->NewStub()->CancelCampaign(Ctx().get(), cancel, &cancelled).ok());
  const v1::CampaignProgress last = WatchToTheEnd(*a, id);
  EXPECT_EQ(last.campaign().state(), v1::CAMPAIGN_STATE_CANCELLED);
  ASSERT_TRUE(WaitFor([&] { return a->Log().find("campaign " +
                                       std::to_string(id) + " cancelled") !=
                                   std::string::npos; },
                      30))
      << a->Log();
  const int64_t stored = last.campaign().samples_ok() +
                         last.campaign().samples_failed();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto store = OpenPostgresStore(db_);
  ASSERT_TRUE(store.ok());
  StoreFilter filter;
  filter.campaign_id = id;
  const int64_t rows = *(*store)->CountSamples(filter);
  EXPECT_EQ(rows, (*store)->GetCampaign(id)->samples_ok +
                      (*store)->GetCampaign(id)->samples_failed);
  EXPECT_GE(rows, stored);
  EXPECT_EQ(a->Stop(SIGTERM), 0);
  EXPECT_EQ(b->Stop(SIGTERM), 0);
}

// A model trained through one daemon answers on the others (each loads
// new models within a second), and an answer every daemon has cached is
// refreshed on all of them after another daemon writes a better one.
// A guided campaign on two daemons: each ranks the models' answers a
// chunk of contexts at a time beside its GPU, a chunk the other daemon
// stored first is dropped, and the campaign ends with the same candidates
// in the same seqs as one daemon alone plans, each once.
TEST_F(FleetTest, TwoDaemonsRunOneGuidedCampaign) {
  auto a = Start("box-a", "measure_us=20000");
  auto b = Start("box-b", "measure_us=20000");
  // A small model of the fake GPU, from the test data renamed to it.
  ASSERT_GT(TrainSmallModel(*a, "Fake GPU"), 0);
  v1::StartCampaignRequest start;
  start.mutable_spec()->set_op(v1::OP_GEMM);
  start.mutable_spec()->set_dtype(v1::DTYPE_FP32);
  start.mutable_spec()->set_sampler("guided");
  start.mutable_spec()->add_families("gemm.ffma");
  start.mutable_spec()->set_max_samples(800);
  start.mutable_spec()->set_seed(31);
  auto run = [&](DaemonProcess& d) {
    v1::StartCampaignResponse started;
    EXPECT_TRUE(d.NewStub()->StartCampaign(Ctx().get(), start, &started).ok());
    const v1::CampaignProgress last = WatchToTheEnd(d, started.campaign().id());
    EXPECT_EQ(last.campaign().state(), v1::CAMPAIGN_STATE_DONE)
        << last.campaign().message() << a->Log() << b->Log();
    EXPECT_EQ(last.done(), 800);
    return last;
  };
  const v1::CampaignProgress both = run(*a);
  EXPECT_GT(both.samples_by_daemon().at("box-a"), 0);
  EXPECT_GT(both.samples_by_daemon().at("box-b"), 0) << b->Log();
  EXPECT_THAT(a->Log() + b->Log(), HasSubstr("the rest are ranked while the GPUs measure"));
  EXPECT_EQ(b->Stop(SIGTERM), 0);
  const v1::CampaignProgress alone = run(*a);
  EXPECT_EQ(alone.samples_by_daemon_size(), 1);

  auto store = OpenPostgresStore(db_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const auto want = CampaignSamplesBySeq(**store, alone.campaign().id());
  ASSERT_EQ(want.size(), 800u);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(want[i].first, static_cast<int64_t>(i)) << "a seq twice or missing";
  EXPECT_EQ(CampaignSamplesBySeq(**store, both.campaign().id()), want);
  EXPECT_EQ(a->Stop(SIGTERM), 0);
}

TEST_F(FleetTest, ModelsAndAnswersReachEveryDaemon) {
  auto a = Start("box-a", "");
  auto b = Start("box-b", "");
  auto c = Start("box-c", "");
  v1::QueryResponse resp;
  EXPECT_EQ(Query(*b, &resp).error_code(), grpc::StatusCode::NOT_FOUND);

  const int64_t model_id = TrainSmallModel(*a);
  ASSERT_GT(model_id, 0);

  // b and c load a's model without a restart, and each predicts with it
  // a shape nobody asked before.
  int64_t m = 2000;
  for (DaemonProcess* d : {b.get(), c.get()}) {
    const std::string loaded = "model " + std::to_string(model_id) + " loaded";
    ASSERT_TRUE(WaitFor(
        [&] { return d->Log().find(loaded) != std::string::npos; }, 5))
        << d->Log();
    ASSERT_TRUE(Query(*d, &resp, ++m).ok()) << d->Log();
    EXPECT_EQ(resp.source(), v1::QUERY_SOURCE_PREDICTED);
    ASSERT_EQ(resp.answers_size(), 1);
    EXPECT_EQ(resp.answers(0).model_id(), model_id);
  }
  for (DaemonProcess* d : {b.get(), c.get()})
    ASSERT_TRUE(Query(*d, &resp).ok()) << d->Log();
  // Now every daemon has the answer cached; a stores a measured one.
  for (DaemonProcess* d : {a.get(), b.get(), c.get()}) {
    ASSERT_TRUE(Query(*d, &resp).ok());
    EXPECT_EQ(resp.source(), v1::QUERY_SOURCE_CACHED) << d->Log();
  }
  v1::Dataset better;
  better.set_format("blocktune.dataset.v1");
  GemmContext g = TestGemm(4096, 16, 4096);
  g.layout_b = Layout::kT;
  ToProto(TestTuned(g, TestShape(32, 16, 2), 1e-9), better.add_tuned());
  v1::ImportResponse imported;
  ASSERT_TRUE(ImportDataset(*a->NewStub(), Ctx().get(), better, &imported).ok());
  for (DaemonProcess* d : {a.get(), b.get(), c.get()}) {
    const auto wrote = Clock::now();
    ASSERT_TRUE(WaitFor(
        [&] {
          return Query(*d, &resp).ok() && resp.answers_size() == 1 &&
                 resp.answers(0).measured_seconds() == 1e-9;
        },
        5))
        << resp.ShortDebugString();
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - wrote).count(), 1.0);
  }
}

}  // namespace
}  // namespace blocktune
