// Campaigns on fake GPUs (tuner/worker.h NewFakeBackend) in a real
// blocktuned with real worker processes: crashes, sticky errors, hangs
// and the watchdog, kill -9 of the daemon and resume, cancellation.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "server/daemon_process.h"
#include "server/store_test_util.h"
#include "server/tuning_store.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using namespace ::blocktune::testing;  // NOLINT

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(90));
  return ctx;
}

class CampaignTest : public ::testing::Test {
 protected:
  std::unique_ptr<DaemonProcess> Start(const std::string& fake,
                                       std::vector<std::string> extra = {},
                                       const std::string& db_name = "b.db") {
    // A socket and a log of its own per start: the helper waits for the
    // log's "listening on" line.
    const std::string n = std::to_string(++starts_);
    std::vector<std::string> args = {
        "--listen", "unix:" + dir_.path() + "/s" + n + ".sock", "--db",
        dir_.path() + "/" + db_name, "--log-level", "debug"};
    if (!fake.empty()) {
      args.insert(args.end(), {"--fake-gpus", "1", "--fake-worker", fake});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    auto daemon = std::make_unique<DaemonProcess>(
        BLOCKTUNED, args, dir_.path() + "/blocktuned" + n + ".log");
    EXPECT_TRUE(daemon->ok()) << daemon->Log();
    return daemon;
  }

  static v1::Campaign StartCampaign(const DaemonProcess& d, int64_t samples,
                                    uint64_t seed) {
    v1::StartCampaignRequest req;
    req.mutable_spec()->set_op(v1::OP_GEMM);
    req.mutable_spec()->set_dtype(v1::DTYPE_FP32);
    req.mutable_spec()->set_max_samples(samples);
    req.mutable_spec()->set_seed(seed);
    v1::StartCampaignResponse resp;
    grpc::Status s = d.NewStub()->StartCampaign(Ctx().get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.campaign();
  }

  static v1::Campaign Get(const DaemonProcess& d, int64_t id) {
    v1::ListCampaignsResponse resp;
    EXPECT_TRUE(d.NewStub()->ListCampaigns(Ctx().get(), {}, &resp).ok());
    for (const auto& c : resp.campaigns())
      if (c.id() == id) return c;
    ADD_FAILURE() << "no campaign " << id;
    return {};
  }

  // Waits until `done` returns true for the campaign, up to `seconds`.
  template <typename Fn>
  static v1::Campaign WaitFor(const DaemonProcess& d, int64_t id, Fn done,
                              double seconds = 60) {
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration<double>(seconds);
    v1::Campaign c;
    while (std::chrono::steady_clock::now() < until) {
      c = Get(d, id);
      if (done(c)) return c;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "campaign " << id << " did not get there; it is "
                  << c.ShortDebugString() << "\n" << d.Log();
    return c;
  }
  static bool Ended(const v1::Campaign& c) {
    return c.state() == v1::CAMPAIGN_STATE_DONE ||
           c.state() == v1::CAMPAIGN_STATE_FAILED ||
           c.state() == v1::CAMPAIGN_STATE_CANCELLED;
  }

  std::vector<SampleRecord> Samples(const std::string& db_name = "b.db") {
    auto store = OpenSqliteStore(dir_.path() + "/" + db_name);
    EXPECT_TRUE(store.ok());
    return *(*store)->ListSamples({});
  }

  TempDir dir_;
  int starts_ = 0;
};

TEST_F(CampaignTest, CrashesAndStickyErrorsCostOneSampleEach) {
  auto d = Start("measure_us=50,crash_every=97,sticky_every=151,wrong_every=50");
  const v1::Campaign started = StartCampaign(*d, 1000, 3);
  const v1::Campaign c = WaitFor(*d, started.id(), Ended);
  ASSERT_EQ(c.state(), v1::CAMPAIGN_STATE_DONE) << c.message();
  // The fake's rules, seq by seq: a crash first, then sticky, then wrong.
  int crashes = 0, sticky = 0, wrong = 0;
  for (int seq = 0; seq < 1000; ++seq) {
    if (seq % 97 == 96) ++crashes;
    else if (seq % 151 == 150) ++sticky;
    else if (seq % 50 == 49) ++wrong;
  }
  EXPECT_EQ(c.samples_failed(), crashes + sticky + wrong);
  EXPECT_EQ(c.samples_ok(), 1000 - crashes - sticky - wrong);
  std::set<int64_t> seqs;
  for (const SampleRecord& s : Samples()) {
    seqs.insert(s.seq);
    const std::string& status = std::string(ToString(s.measurement.status));
    if (s.seq % 97 == 96) {
      EXPECT_EQ(status, "launch_error");
      EXPECT_THAT(s.measurement.error, HasSubstr("killed by signal 6"));
    } else if (s.seq % 151 == 150) {
      EXPECT_EQ(status, "launch_error");
      EXPECT_THAT(s.measurement.error, HasSubstr("CUDA_ERROR_ILLEGAL_ADDRESS"));
    } else if (s.seq % 50 == 49) {
      EXPECT_EQ(status, "wrong_result");
      EXPECT_EQ(s.measurement.median_s, 0);  // never a time
    } else {
      EXPECT_EQ(status, "ok");
      EXPECT_GT(s.measurement.median_s, 0);
    }
  }
  EXPECT_EQ(seqs.size(), 1000u);
  EXPECT_EQ(*seqs.begin(), 0);
  EXPECT_EQ(*seqs.rbegin(), 999);
  EXPECT_THAT(d->Log(), HasSubstr("restarting it"));
}

TEST_F(CampaignTest, WatchdogKillsAHungWorkerAndRecordsATimeout) {
  auto d = Start("measure_us=50,hang_every=40", {"--kernel-timeout", "0.5"});
  const v1::Campaign started = StartCampaign(*d, 100, 5);
  const v1::Campaign c = WaitFor(*d, started.id(), Ended);
  ASSERT_EQ(c.state(), v1::CAMPAIGN_STATE_DONE) << c.message();
  EXPECT_EQ(c.samples_failed(), 2);  // seq 39 and 79
  int timeouts = 0;
  for (const SampleRecord& s : Samples()) {
    if (s.measurement.status != SampleStatus::kTimeout) continue;
    ++timeouts;
    EXPECT_TRUE(s.seq == 39 || s.seq == 79) << s.seq;
    EXPECT_THAT(s.measurement.error, HasSubstr("watchdog killed the worker"));
  }
  EXPECT_EQ(timeouts, 2);
}

// kill -9 of the daemon mid-campaign, then a restart: the campaign resumes
// and ends with exactly the samples an uninterrupted run of the same seed
// gives, each once.
TEST_F(CampaignTest, ResumesAfterKill9WithNeitherDuplicatesNorGaps) {
  constexpr int64_t kSamples = 1200;
  std::vector<SampleRecord> reference;
  {
    auto d = Start("measure_us=20", {}, "reference.db");
    const v1::Campaign c =
        WaitFor(*d, StartCampaign(*d, kSamples, 11).id(), Ended);
    ASSERT_EQ(c.state(), v1::CAMPAIGN_STATE_DONE);
    d->Stop(SIGTERM);
    reference = Samples("reference.db");
  }
  int64_t at_kill = 0;
  {
    auto d = Start("measure_us=1500");
    const int64_t id = StartCampaign(*d, kSamples, 11).id();
    const v1::Campaign c = WaitFor(*d, id, [](const v1::Campaign& c) {
      return c.samples_ok() + c.samples_failed() >= 200;
    });
    at_kill = c.samples_ok() + c.samples_failed();
    EXPECT_EQ(d->Stop(SIGKILL), 128 + SIGKILL);
  }
  EXPECT_LT(at_kill, kSamples);
  {
    auto d = Start("measure_us=20");
    EXPECT_THAT(d->Log(), HasSubstr("resuming it"));
    const v1::Campaign c = WaitFor(*d, 1, Ended);
    EXPECT_EQ(c.state(), v1::CAMPAIGN_STATE_DONE) << c.message();
    EXPECT_EQ(c.samples_ok() + c.samples_failed(), kSamples);
    d->Stop(SIGTERM);
  }
  const std::vector<SampleRecord> resumed = Samples();
  ASSERT_EQ(resumed.size(), reference.size());
  std::map<int64_t, const SampleRecord*> by_seq;
  for (const SampleRecord& s : resumed) {
    EXPECT_TRUE(by_seq.emplace(s.seq, &s).second) << "seq " << s.seq << " twice";
  }
  for (const SampleRecord& r : reference) {
    auto it = by_seq.find(r.seq);
    ASSERT_NE(it, by_seq.end()) << "seq " << r.seq << " missing";
    EXPECT_EQ(ToString(it->second->context), ToString(r.context)) << r.seq;
    EXPECT_EQ(it->second->kernel, r.kernel) << r.seq;
  }
}

TEST_F(CampaignTest, CancelStopsRunningAndQueuedCampaigns) {
  auto d = Start("measure_us=3000");
  const int64_t running = StartCampaign(*d, 100000, 1).id();
  const int64_t queued = StartCampaign(*d, 100000, 2).id();
  WaitFor(*d, running, [](const v1::Campaign& c) {
    return c.samples_ok() + c.samples_failed() >= 20;
  });
  for (int64_t id : {queued, running}) {
    v1::CancelCampaignRequest req;
    req.set_id(id);
    v1::CancelCampaignResponse resp;
    ASSERT_TRUE(d->NewStub()->CancelCampaign(Ctx().get(), req, &resp).ok());
    EXPECT_EQ(resp.campaign().state(), v1::CAMPAIGN_STATE_CANCELLED);
  }
  const v1::Campaign c = Get(*d, running);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::vector<SampleRecord> samples = Samples();
  EXPECT_EQ(static_cast<int64_t>(samples.size()),
            c.samples_ok() + c.samples_failed());  // nothing after the end
  EXPECT_GE(samples.size(), 20u);
  EXPECT_EQ(Get(*d, queued).samples_ok(), 0);
  // Cancelling again names the state.
  v1::CancelCampaignRequest again;
  again.set_id(running);
  v1::CancelCampaignResponse resp;
  grpc::Status s = d->NewStub()->CancelCampaign(Ctx().get(), again, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("already cancelled"));
}

TEST_F(CampaignTest, WatchStreamsProgressToTheEnd) {
  auto d = Start("measure_us=1000,wrong_every=10");
  const int64_t id = StartCampaign(*d, 3000, 4).id();
  v1::WatchCampaignRequest req;
  req.set_id(id);
  auto ctx = Ctx();
  auto reader = d->NewStub()->WatchCampaign(ctx.get(), req);
  v1::CampaignProgress p, last;
  int updates = 0;
  bool saw_rate = false;
  while (reader->Read(&p)) {
    ++updates;
    saw_rate |= p.samples_per_second() > 0;
    last = p;
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_GE(updates, 3);
  EXPECT_TRUE(saw_rate);
  EXPECT_EQ(last.campaign().state(), v1::CAMPAIGN_STATE_DONE);
  EXPECT_EQ(last.done(), 3000);
  EXPECT_EQ(last.target(), 3000);
  EXPECT_EQ(last.failures().at("wrong_result"), 300);
  EXPECT_GT(last.acceptance(), 0.05);
  EXPECT_GT(last.best_tflops(), 0);
  EXPECT_EQ(last.verified(), 3000);
}

TEST_F(CampaignTest, WithoutAGpuNothingIsStarted) {
  auto d = Start("", {"--gpus", "none"});
  v1::StartCampaignRequest req;
  req.mutable_spec()->set_op(v1::OP_GEMM);
  req.mutable_spec()->set_dtype(v1::DTYPE_FP32);
  req.mutable_spec()->set_max_samples(10);
  v1::StartCampaignResponse resp;
  grpc::Status s = d->NewStub()->StartCampaign(Ctx().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("no GPU"));
  v1::ListCampaignsResponse list;
  ASSERT_TRUE(d->NewStub()->ListCampaigns(Ctx().get(), {}, &list).ok());
  EXPECT_EQ(list.campaigns_size(), 0);
}

TEST_F(CampaignTest, AGpuWhoseWorkerCannotStartFailsTheCampaign) {
  auto d = Start("no_device=1");
  const v1::Campaign c = WaitFor(*d, StartCampaign(*d, 10, 1).id(), Ended);
  EXPECT_EQ(c.state(), v1::CAMPAIGN_STATE_FAILED);
  EXPECT_THAT(c.message(), HasSubstr("no GPU"));
}

}  // namespace
}  // namespace blocktune
