// Campaigns on fake GPUs (tuner/worker.h NewFakeBackend) in a real
// blocktuned with real worker processes: crashes, sticky errors, hangs
// and the watchdog, kill -9 of the daemon and resume, cancellation;
// precisions and kernel families, and retune_stale (issue 19).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "proto/convert.h"
#include "server/daemon_process.h"
#include "server/record_convert.h"
#include "server/sample_digest.h"
#include "server/store_test_util.h"
#include "server/tuning_store.h"
#include "tuner/device_profile.h"
#include "tuner/worker.h"

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

  // `families` empty: every family of the dtype that runs on the GPU.
  static v1::Campaign StartCampaign(
      const DaemonProcess& d, int64_t samples, uint64_t seed,
      v1::DType dtype = v1::DTYPE_FP32,
      const std::vector<std::string>& families = {}) {
    return StartSpec(d, GemmSpec(samples, seed, dtype, families));
  }
  static v1::CampaignSpec GemmSpec(
      int64_t samples, uint64_t seed, v1::DType dtype = v1::DTYPE_FP32,
      const std::vector<std::string>& families = {}) {
    v1::CampaignSpec spec;
    spec.set_op(v1::OP_GEMM);
    spec.set_dtype(dtype);
    spec.set_max_samples(samples);
    spec.set_seed(seed);
    for (const std::string& f : families) spec.add_families(f);
    return spec;
  }
  static v1::Campaign StartSpec(const DaemonProcess& d,
                                const v1::CampaignSpec& spec) {
    v1::StartCampaignRequest req;
    *req.mutable_spec() = spec;
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
class CampaignResumeTest : public CampaignTest,
                           public ::testing::WithParamInterface<v1::DType> {};

TEST_P(CampaignResumeTest, ResumesAfterKill9WithNeitherDuplicatesNorGaps) {
  constexpr int64_t kSamples = 1200;
  const v1::DType dtype = GetParam();
  // fp32: gemm.ffma alone, the one family a daemon from before families
  // sampled (gemm.gemv is fp32 too); the legacy cursor below resumes it.
  const std::vector<std::string> families_asked =
      dtype == v1::DTYPE_FP32 ? std::vector<std::string>{"gemm.ffma"}
                              : std::vector<std::string>{};
  std::vector<SampleRecord> reference;
  {
    auto d = Start("measure_us=20", {}, "reference.db");
    const v1::Campaign c =
        WaitFor(*d, StartCampaign(*d, kSamples, 11, dtype, families_asked).id(),
                Ended);
    ASSERT_EQ(c.state(), v1::CAMPAIGN_STATE_DONE);
    d->Stop(SIGTERM);
    reference = Samples("reference.db");
  }
  int64_t at_kill = 0;
  {
    auto d = Start("measure_us=1500");
    const int64_t id =
        StartCampaign(*d, kSamples, 11, dtype, families_asked).id();
    const v1::Campaign c = WaitFor(*d, id, [](const v1::Campaign& c) {
      return c.samples_ok() + c.samples_failed() >= 200;
    });
    at_kill = c.samples_ok() + c.samples_failed();
    EXPECT_EQ(d->Stop(SIGKILL), 128 + SIGKILL);
  }
  EXPECT_LT(at_kill, kSamples);
  if (dtype == v1::DTYPE_FP32) {
    // A daemon from before families left this one: its cursor has the one
    // sampler's Rng at the top and nothing per family.
    auto store = OpenSqliteStore(dir_.path() + "/b.db");
    ASSERT_TRUE(store.ok());
    CampaignRecord record = *(*store)->GetCampaign(1);
    tuner::CampaignCursor cursor;
    ASSERT_TRUE(cursor.ParseFromString(record.rng_state));
    ASSERT_EQ(cursor.families_size(), 1);
    ASSERT_EQ(cursor.rng_size(), 4);
    cursor.clear_families();
    cursor.clear_samples_by_family();
    record.rng_state = cursor.SerializeAsString();
    WriteBatch batch;
    batch.campaign_updates = {record};
    ASSERT_TRUE((*store)->Commit(batch).ok());
  }
  {
    auto d = Start("measure_us=20");
    EXPECT_THAT(d->Log(), HasSubstr("resuming it"));
    const v1::CampaignProgress last = WatchToTheEnd(*d, 1);
    const v1::Campaign& c = last.campaign();
    EXPECT_EQ(c.state(), v1::CAMPAIGN_STATE_DONE) << c.message();
    EXPECT_EQ(c.samples_ok() + c.samples_failed(), kSamples);
    // fp32: gemm.ffma alone; bf16 on the fake (compute capability 9.0):
    // gemm.mma, gemm.wgmma, gemm.mma_pk, gemm.wgmma_pk, gemm.wgmma_ps,
    // gemm.wgmma_ts and gemm.wgmma_sc, each its own stream in the cursor.
    const int families = dtype == v1::DTYPE_FP32 ? 1 : 7;
    ASSERT_EQ(last.samples_by_family_size(), families);
    int64_t total = 0;
    for (const auto& [name, n] : last.samples_by_family()) {
      EXPECT_GT(n, 0) << name;
      total += n;
    }
    EXPECT_EQ(total, kSamples);
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
  // Each precision its own families, and the same candidates as ever for
  // fp32 (seed 11's first family keeps seed 11).
  const std::set<std::string> families =
      dtype == v1::DTYPE_FP32 ? std::set<std::string>{"gemm.ffma"}
                              : std::set<std::string>{"gemm.mma", "gemm.wgmma",
                                                      "gemm.mma_pk",
                                                      "gemm.wgmma_pk",
                                                      "gemm.wgmma_ps",
                                                      "gemm.wgmma_ts",
                                                      "gemm.wgmma_sc"};
  for (const SampleRecord& r : resumed)
    EXPECT_TRUE(families.count(r.kernel.family)) << r.kernel.family;
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CampaignResumeTest,
                         ::testing::Values(v1::DTYPE_FP32, v1::DTYPE_BF16),
                         [](const auto& info) {
                           return info.param == v1::DTYPE_FP32 ? "Fp32"
                                                               : "Bf16";
                         });

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
  // fp32: gemm.ffma, gemm.gemv, gemm.ffma_k and gemm.ffma_kpk, each its
  // own stream.
  ASSERT_EQ(last.samples_by_family_size(), 4);
  int64_t sum = 0;
  for (const char* f :
       {"gemm.ffma", "gemm.gemv", "gemm.ffma_k", "gemm.ffma_kpk"}) {
    EXPECT_GT(last.samples_by_family().at(f), 0) << f;
    sum += last.samples_by_family().at(f);
  }
  EXPECT_EQ(sum, 3000);
}

// By default a kernel is measured in 4 contexts per GPU in use, so that
// N workers compile no more per second than one; --contexts-per-kernel
// overrides it.
TEST_F(CampaignTest, ContextsPerKernelGrowWithTheGpus) {
  auto two = Start("", {"--fake-gpus", "2", "--fake-worker", "measure_us=100"},
                   "two.db");
  EXPECT_NE(two->Log().find("new campaigns measure each kernel in 8 contexts"),
            std::string::npos)
      << two->Log();
  auto given = Start("", {"--fake-gpus", "2", "--fake-worker", "measure_us=100",
                          "--contexts-per-kernel", "3"},
                     "given.db");
  EXPECT_NE(given->Log().find("measure each kernel in 3 contexts"), std::string::npos)
      << given->Log();
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

// The old defect: "campaign start --dtype bf16" measured fp32 kernels under
// a bf16 label. Every sample of a bf16 campaign is a kernel of a bf16
// family (on the fake's compute capability 9.0: gemm.mma, gemm.wgmma,
// gemm.mma_pk, gemm.wgmma_pk, gemm.wgmma_ps, gemm.wgmma_ts and
// gemm.wgmma_sc)
// of today's generator, in a bf16 context, with parameters its family
// accepts on that device.
TEST_F(CampaignTest, ABf16CampaignMeasuresGemmMmaInBf16) {
  auto d = Start("measure_us=50,wrong_every=25");
  const v1::Campaign started = StartCampaign(*d, 300, 9, v1::DTYPE_BF16);
  EXPECT_EQ(started.spec().dtype(), v1::DTYPE_BF16);
  const v1::CampaignProgress last = WatchToTheEnd(*d, started.id());
  ASSERT_EQ(last.campaign().state(), v1::CAMPAIGN_STATE_DONE)
      << last.campaign().message() << "\n"
      << d->Log();
  EXPECT_EQ(last.done(), 300);
  ASSERT_EQ(last.samples_by_family_size(), 7);
  EXPECT_EQ(last.samples_by_family().at("gemm.mma") +
                last.samples_by_family().at("gemm.wgmma") +
                last.samples_by_family().at("gemm.mma_pk") +
                last.samples_by_family().at("gemm.wgmma_pk") +
                last.samples_by_family().at("gemm.wgmma_ps") +
                last.samples_by_family().at("gemm.wgmma_ts") +
                last.samples_by_family().at("gemm.wgmma_sc"),
            300);
  EXPECT_GT(last.samples_by_family().at("gemm.mma"), 0);
  EXPECT_GT(last.samples_by_family().at("gemm.wgmma"), 0);
  EXPECT_GT(last.samples_by_family().at("gemm.mma_pk"), 0);
  EXPECT_GT(last.samples_by_family().at("gemm.wgmma_pk"), 0);
  EXPECT_GT(last.samples_by_family().at("gemm.wgmma_ps"), 0);
  EXPECT_GT(last.samples_by_family().at("gemm.wgmma_ts"), 0);
  EXPECT_GT(last.samples_by_family().at("gemm.wgmma_sc"), 0);
  EXPECT_GT(last.best_tflops(), 20);  // past the fake's fp32 peak
  const std::vector<SampleRecord> samples = Samples();
  ASSERT_EQ(samples.size(), 300u);
  const KernelLimits h100 = ProfileByName("h100")->Limits();
  int ok = 0;
  for (const SampleRecord& s : samples) {
    EXPECT_NE(s.kernel.family, "gemm.ffma") << s.seq;
    EXPECT_TRUE(s.kernel.family == "gemm.mma" ||
                s.kernel.family == "gemm.wgmma" ||
                s.kernel.family == "gemm.mma_pk" ||
                s.kernel.family == "gemm.wgmma_pk" ||
                s.kernel.family == "gemm.wgmma_ps" ||
                s.kernel.family == "gemm.wgmma_ts" ||
                s.kernel.family == "gemm.wgmma_sc")
        << s.seq << " " << s.kernel.family;
    auto family = FindFamily(s.kernel.family);
    ASSERT_TRUE(family.ok()) << s.seq;
    EXPECT_EQ(s.kernel.generator_version, (*family)->version()) << s.seq;
    EXPECT_TRUE(s.kernel.IsCurrent());
    EXPECT_EQ(DTypeOf(s.context), DType::kBf16) << s.seq;
    EXPECT_TRUE((*family)->CanImplement(Problem(s.context), s.kernel.params,
                                        h100)
                    .ok())
        << s.seq;
    // The digest of the kernel the worker generated, which the next
    // generator version is compared with (server/sample_digest.h).
    auto digest = RegeneratedDigest(s);
    ASSERT_TRUE(digest.ok()) << s.seq << ": " << digest.status().ToString();
    EXPECT_EQ(s.kernel_digest, *digest) << s.seq << " " << s.kernel.family;
    ok += s.measurement.status == SampleStatus::kOk;
  }
  EXPECT_EQ(ok, 300 - 12);
}

// A bf16 convolution campaign of conv.mma (issue 18): every sample a
// conv.mma kernel of today's generator, in a bf16 convolution context, with
// parameters the family accepts on the H100.
TEST_F(CampaignTest, ABf16ConvCampaignMeasuresConvMma) {
  auto d = Start("measure_us=50");
  v1::CampaignSpec spec;
  spec.set_op(v1::OP_CONV);
  spec.set_dtype(v1::DTYPE_BF16);
  spec.set_max_samples(120);
  spec.set_seed(5);
  spec.add_families("conv.mma");
  const v1::Campaign started = StartSpec(*d, spec);
  const v1::CampaignProgress last = WatchToTheEnd(*d, started.id());
  ASSERT_EQ(last.campaign().state(), v1::CAMPAIGN_STATE_DONE)
      << last.campaign().message() << "\n"
      << d->Log();
  EXPECT_EQ(last.done(), 120);
  ASSERT_EQ(last.samples_by_family_size(), 1);
  EXPECT_EQ(last.samples_by_family().at("conv.mma"), 120);
  const KernelLimits h100 = ProfileByName("h100")->Limits();
  const std::vector<SampleRecord> samples = Samples();
  ASSERT_EQ(samples.size(), 120u);
  for (const SampleRecord& s : samples) {
    EXPECT_EQ(s.kernel.family, "conv.mma") << s.seq;
    auto family = FindFamily(s.kernel.family);
    ASSERT_TRUE(family.ok()) << s.seq;
    EXPECT_EQ(s.kernel.generator_version, (*family)->version()) << s.seq;
    ASSERT_EQ(OpOf(s.context), Op::kConv) << s.seq;
    EXPECT_EQ(DTypeOf(s.context), DType::kBf16) << s.seq;
    EXPECT_TRUE(
        (*family)->CanImplement(Problem(s.context), s.kernel.params, h100).ok())
        << s.seq;
  }
  // Four contexts per kernel (the daemon's default): most samples after a
  // group's first share its parameters, each in a context of its own.
  std::map<int64_t, const SampleRecord*> by_seq;
  for (const SampleRecord& s : samples) by_seq[s.seq] = &s;
  int followers = 0;
  for (const auto& [seq, s] : by_seq) {
    if (seq % 4 == 0) continue;
    const SampleRecord& first = *by_seq.at(seq - seq % 4);
    if (!(s->kernel.params == first.kernel.params)) continue;
    ++followers;
    EXPECT_FALSE(s->context == first.context) << seq;
  }
  EXPECT_GE(followers, 60) << "of 90";
}

// Without named families a bf16 convolution campaign on an H100 samples
// both convolution families: conv.mma and conv.wgmma (sm_90a).
TEST_F(CampaignTest, ABf16ConvCampaignOnAnH100SamplesEveryConvFamily) {
  auto d = Start("measure_us=50");
  v1::CampaignSpec spec;
  spec.set_op(v1::OP_CONV);
  spec.set_dtype(v1::DTYPE_BF16);
  spec.set_max_samples(80);
  spec.set_seed(6);
  const v1::Campaign started = StartSpec(*d, spec);
  const v1::CampaignProgress last = WatchToTheEnd(*d, started.id());
  ASSERT_EQ(last.campaign().state(), v1::CAMPAIGN_STATE_DONE)
      << last.campaign().message() << "\n"
      << d->Log();
  // conv.mma, conv.wgmma, conv.wgmma_ps (the persistent grid),
  // conv.wgmma_sk (the split over the reduction, on layers of few tiles)
  // and conv.wgmma_sc (the same split added inside a cluster).
  ASSERT_EQ(last.samples_by_family_size(), 5);
  EXPECT_GT(last.samples_by_family().at("conv.mma"), 0);
  EXPECT_GT(last.samples_by_family().at("conv.wgmma"), 0);
  EXPECT_GT(last.samples_by_family().at("conv.wgmma_ps"), 0);
  EXPECT_GT(last.samples_by_family().at("conv.wgmma_sk"), 0);
  EXPECT_GT(last.samples_by_family().at("conv.wgmma_sc"), 0);
  const KernelLimits h100 = ProfileByName("h100")->Limits();
  for (const SampleRecord& s : Samples()) {
    auto family = FindFamily(s.kernel.family);
    ASSERT_TRUE(family.ok()) << s.seq;
    EXPECT_EQ((*family)->op(), Op::kConv) << s.seq;
    EXPECT_EQ(s.kernel.generator_version, (*family)->version()) << s.seq;
    EXPECT_EQ(DTypeOf(s.context), DType::kBf16) << s.seq;
    EXPECT_TRUE(
        (*family)->CanImplement(Problem(s.context), s.kernel.params, h100).ok())
        << s.seq << " " << s.kernel.family;
  }
}

// An fp32 campaign measures the fp32 families: gemm.ffma (its samples keep
// their block shape), gemm.gemv (decode shapes its rules accept) and
// gemm.ffma_k (NT shapes).
TEST_F(CampaignTest, AnFp32CampaignStillMeasuresGemmFfma) {
  auto d = Start("measure_us=20");
  const v1::Campaign c = WaitFor(*d, StartCampaign(*d, 200, 3).id(), Ended);
  ASSERT_EQ(c.state(), v1::CAMPAIGN_STATE_DONE) << c.message();
  EXPECT_TRUE(c.message().empty()) << c.message();
  std::map<std::string, int> by_family;
  const KernelLimits h100;
  for (const SampleRecord& s : Samples()) {
    ++by_family[s.kernel.family];
    EXPECT_EQ(DTypeOf(s.context), DType::kFp32);
    if (s.kernel.family == "gemm.ffma") {
      EXPECT_TRUE(s.kernel.block_shape().has_value());
      continue;
    }
    ASSERT_TRUE(s.kernel.family == "gemm.gemv" ||
                s.kernel.family == "gemm.ffma_k" ||
                s.kernel.family == "gemm.ffma_kpk")
        << s.seq << " " << s.kernel.family;
    auto family = FindFamily(s.kernel.family);
    ASSERT_TRUE(family.ok());
    EXPECT_TRUE(
        (*family)->CanImplement(Problem(s.context), s.kernel.params, h100).ok())
        << s.seq << " " << ToString(s.context);
  }
  EXPECT_GT(by_family["gemm.ffma"], 0);
  EXPECT_GT(by_family["gemm.gemv"], 0);
  EXPECT_GT(by_family["gemm.ffma_k"], 0);
  EXPECT_GT(by_family["gemm.ffma_kpk"], 0);
}

// A campaign for large products (min_flops, max_flops): every context it
// measures has its work within the bounds, though the default cap (2^36)
// would have refused all of them; the bounds survive in the store; a bound
// out of range is refused with the field's name.
TEST_F(CampaignTest, WorkBoundsDrawOnlyLargeContexts) {
  auto d = Start("measure_us=20");
  v1::CampaignSpec spec =
      GemmSpec(120, 5, v1::DTYPE_FP32, {"gemm.ffma", "gemm.ffma_k"});
  spec.set_min_flops(0x1p37);
  spec.set_max_flops(0x1p40);
  const v1::Campaign c = WaitFor(*d, StartSpec(*d, spec).id(), Ended);
  ASSERT_EQ(c.state(), v1::CAMPAIGN_STATE_DONE) << c.message();
  EXPECT_EQ(c.spec().min_flops(), 0x1p37);
  EXPECT_EQ(c.spec().max_flops(), 0x1p40);
  const std::vector<SampleRecord> samples = Samples();
  ASSERT_EQ(samples.size(), 120u);
  for (const SampleRecord& s : samples) {
    const GemmContext& g = std::get<GemmContext>(s.context);
    const double flops = 2.0 * double(g.m) * double(g.n) * double(g.k);
    EXPECT_GE(flops, 0x1p37) << ToString(s.context);
    EXPECT_LE(flops, 0x1p40) << ToString(s.context);
  }
  auto store = OpenSqliteStore(dir_.path() + "/b.db");
  ASSERT_TRUE(store.ok());
  auto stored = (*store)->GetCampaign(c.id());
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->spec.min_flops, 0x1p37);
  EXPECT_EQ(stored->spec.max_flops, 0x1p40);

  spec.set_min_flops(0x1p41);  // above max_flops: nothing could be drawn
  v1::StartCampaignRequest req;
  *req.mutable_spec() = spec;
  v1::StartCampaignResponse resp;
  grpc::Status refused = d->NewStub()->StartCampaign(Ctx().get(), req, &resp);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("spec.min_flops must be in"));
}

TEST_F(CampaignTest, FamiliesThatDoNotImplementTheDtypeAreRefused) {
  auto d = Start("measure_us=20");
  v1::CampaignSpec spec;
  spec.set_op(v1::OP_GEMM);
  spec.set_dtype(v1::DTYPE_BF16);
  spec.set_max_samples(10);
  spec.add_families("gemm.ffma");
  v1::StartCampaignRequest req;
  *req.mutable_spec() = spec;
  v1::StartCampaignResponse resp;
  grpc::Status s = d->NewStub()->StartCampaign(Ctx().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("spec.families[0]"));
  EXPECT_THAT(s.error_message(), HasSubstr("gemm.mma"));  // the allowed one
  // A family of the other op: named, not a failed campaign later.
  spec.clear_families();
  spec.set_op(v1::OP_CONV);
  spec.add_families("gemm.mma");
  *req.mutable_spec() = spec;
  s = d->NewStub()->StartCampaign(Ctx().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("spec.families[0]"));
  v1::ListCampaignsResponse list;
  ASSERT_TRUE(d->NewStub()->ListCampaigns(Ctx().get(), {}, &list).ok());
  EXPECT_EQ(list.campaigns_size(), 0);
  // Named by any case, stored by its registered name.
  spec.set_op(v1::OP_GEMM);
  spec.clear_families();
  spec.add_families("GEMM.MMA");
  const v1::Campaign c = WaitFor(*d, StartSpec(*d, spec).id(), Ended);
  EXPECT_EQ(c.state(), v1::CAMPAIGN_STATE_DONE) << c.message();
  ASSERT_EQ(c.spec().families_size(), 1);
  EXPECT_EQ(c.spec().families(0), "gemm.mma");
}

// retune_stale re-measures the stale configurations of (op, dtype) on the
// campaign's device once each, with today's generators, and nothing else.
TEST_F(CampaignTest, RetuneStaleReMeasuresTheStaleConfigurationsOnce) {
  const KernelFamily* mma = *FindFamily("gemm.mma");
  const DeviceFingerprint fake = FakeFingerprint();
  auto kernel = [&](const std::string& params, int version) {
    return KernelConfig{"gemm.mma", version, *mma->Parse(params)};
  };
  auto gemm = [](int64_t m, DType dtype) {
    GemmContext g = TestGemm(m, 1024, 512);
    g.dtype = dtype;
    return Context(g);
  };
  auto row = [&](const Context& ctx, const KernelConfig& k,
                 const DeviceFingerprint& device) {
    SampleRecord s = TestSample(1, 0, device);
    s.context = ctx;
    s.kernel = k;
    return s;
  };
  const int old = mma->version() - 1;
  {
    auto store = OpenSqliteStore(dir_.path() + "/b.db");
    ASSERT_TRUE(store.ok());
    WriteBatch batch;
    batch.samples = {
        row(gemm(4096, DType::kBf16), kernel("bm=128 bn=128", old), fake),
        row(gemm(2048, DType::kBf16), kernel("bm=64 bn=64", old), fake),
        row(gemm(2048, DType::kBf16), kernel("bm=64 bn=64", old), fake),
        // Skipped: 256 KiB of shared memory does not fit the H100.
        row(gemm(2048, DType::kBf16), kernel("bm=256 bn=256 bk=64 st=4", old),
            fake),
        row(gemm(1024, DType::kBf16), kernel("bm=64 bn=64", mma->version()),
            fake),  // current
        row(gemm(1024, DType::kFp16), kernel("bm=64 bn=64", old), fake),
        row(gemm(1024, DType::kBf16), kernel("bm=64 bn=64", old),
            TestDevice("another GPU")),
    };
    ASSERT_TRUE((*store)->Commit(batch).ok());
  }
  auto d = Start("measure_us=20");
  v1::CampaignSpec spec;
  spec.set_op(v1::OP_GEMM);
  spec.set_dtype(v1::DTYPE_BF16);
  spec.set_retune_stale(true);  // no budget: all of them
  const int64_t id = StartSpec(*d, spec).id();
  const v1::CampaignProgress last = WatchToTheEnd(*d, id);
  ASSERT_EQ(last.campaign().state(), v1::CAMPAIGN_STATE_DONE)
      << last.campaign().message() << "\n"
      << d->Log();
  EXPECT_EQ(last.done(), 2);
  EXPECT_EQ(last.target(), 2);
  EXPECT_EQ(last.samples_by_family().at("gemm.mma"), 2);
  EXPECT_THAT(
      last.campaign().message(),
      HasSubstr("retune of gemm bf16 on Fake GPU: 4 stale samples: 2 "
                "configurations to re-measure, 1 duplicate, 1 skipped"));
  EXPECT_THAT(last.campaign().message(), HasSubstr("shared_memory: 1"));
  EXPECT_THAT(last.campaign().message(), HasSubstr("re-measured 2"));
  d->Stop(SIGTERM);

  StoreFilter mine;
  mine.campaign_id = id;
  auto store = OpenSqliteStore(dir_.path() + "/b.db");
  ASSERT_TRUE(store.ok());
  const std::vector<SampleRecord> measured = *(*store)->ListSamples(mine);
  ASSERT_EQ(measured.size(), 2u);
  EXPECT_EQ(ToString(measured[0].context), ToString(gemm(2048, DType::kBf16)));
  EXPECT_EQ(measured[0].kernel, kernel("bm=64 bn=64", mma->version()));
  EXPECT_EQ(ToString(measured[1].context), ToString(gemm(4096, DType::kBf16)));
  EXPECT_EQ(measured[1].kernel, kernel("bm=128 bn=128", mma->version()));
  for (const SampleRecord& s : measured) {
    EXPECT_EQ(s.device.name, fake.name);
    EXPECT_EQ(s.measurement.status, SampleStatus::kOk);
  }

  // Again: everything is re-measured, so nothing is left to do.
  auto again = Start("measure_us=20");
  const v1::Campaign c = WaitFor(*again, StartSpec(*again, spec).id(), Ended);
  EXPECT_EQ(c.state(), v1::CAMPAIGN_STATE_DONE) << c.message();
  EXPECT_EQ(c.samples_ok() + c.samples_failed(), 0);
  EXPECT_THAT(c.message(), HasSubstr("0 configurations to re-measure"));
  // And fp32 has no stale rows at all.
  spec.set_dtype(v1::DTYPE_FP32);
  const v1::Campaign none =
      WaitFor(*again, StartSpec(*again, spec).id(), Ended);
  EXPECT_EQ(none.state(), v1::CAMPAIGN_STATE_DONE) << none.message();
  EXPECT_EQ(none.message(),
            "no stale samples of gemm fp32 on Fake GPU: nothing to re-measure");
}

// Issue 20, model quality: a guided campaign measures what the GPU's model
// predicts fastest, context by context, so that the next training sees
// where the model is too optimistic about its own answers. Without a model
// it fails and says how to get one.
TEST_F(CampaignTest, AGuidedCampaignMeasuresTheModelsOwnTopAnswers) {
  auto d = Start("measure_us=20");
  v1::CampaignSpec spec;
  spec.set_op(v1::OP_GEMM);
  spec.set_dtype(v1::DTYPE_FP32);
  spec.set_sampler("guided");
  spec.set_max_samples(40);
  spec.set_seed(9);
  // One family's model (gemm.gemv, fp32 too, is left out: its data, its
  // model and its answers would share the plan).
  spec.add_families("gemm.ffma");
  const v1::Campaign unguided = WaitFor(*d, StartSpec(*d, spec).id(), Ended);
  EXPECT_EQ(unguided.state(), v1::CAMPAIGN_STATE_FAILED);
  EXPECT_THAT(unguided.message(),
              HasSubstr("needs a trained model of the device 'Fake GPU'"));
  EXPECT_THAT(unguided.message(), HasSubstr("blocktune train --op gemm"));
  EXPECT_EQ(unguided.samples_ok() + unguided.samples_failed(), 0);

  // Sampled data, and a small model of the fake GPU trained on it.
  ASSERT_EQ(
      WaitFor(*d, StartCampaign(*d, 600, 3, v1::DTYPE_FP32, {"gemm.ffma"}).id(),
              Ended)
          .state(),
      v1::CAMPAIGN_STATE_DONE);
  v1::TrainModelRequest train;
  train.set_op(v1::OP_GEMM);
  for (int h : {16, 16}) train.add_hidden_layers(h);
  train.set_epochs(5);
  auto ctx = Ctx();
  auto reader = d->NewStub()->TrainModel(ctx.get(), train);
  v1::TrainProgress p;
  int64_t model_id = 0;
  while (reader->Read(&p)) model_id = p.model_id();
  ASSERT_TRUE(reader->Finish().ok()) << d->Log();
  ASSERT_GT(model_id, 0);

  const int64_t id = StartSpec(*d, spec).id();
  const v1::CampaignProgress last = WatchToTheEnd(*d, id);
  ASSERT_EQ(last.campaign().state(), v1::CAMPAIGN_STATE_DONE)
      << last.campaign().message() << "\n" << d->Log();
  EXPECT_EQ(last.target(), 40);
  EXPECT_THAT(last.campaign().message(),
              HasSubstr("guided by model " + std::to_string(model_id) +
                        " (gemm.ffma): 5 contexts x (top 6 + 2 of ranks "
                        "7-64) = 40 candidates; "
                        "measured 40"));
  StoreFilter mine;
  mine.campaign_id = id;
  auto store = OpenSqliteStore(dir_.path() + "/b.db");
  ASSERT_TRUE(store.ok());
  std::vector<SampleRecord> measured = *(*store)->ListSamples(mine);
  ASSERT_EQ(measured.size(), 40u);
  std::sort(measured.begin(), measured.end(),
            [](const SampleRecord& a, const SampleRecord& b) {
              return a.seq < b.seq;
            });
  // Eight per context, each context once; and they are the model's: a
  // query of the same context's top 64 answers the first 6 in order, and
  // the other 2 among its ranks 7 .. 64, in order.
  std::set<std::string> contexts;
  for (size_t c = 0; c < 5; ++c) {
    const SampleRecord& first = measured[c * 8];
    EXPECT_TRUE(contexts.insert(ToString(first.context)).second);
    v1::QueryRequest q;
    ToProto(first.context, q.mutable_context());
    q.set_top(64);
    v1::QueryResponse r;
    grpc::Status s = d->NewStub()->Query(Ctx().get(), q, &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(r.answers_size(), 64);
    std::vector<Params> ranked;
    for (int i = 0; i < 64; ++i) {
      auto answer = FromProto(r.answers(i).kernel(), Op::kGemm,
                              KernelVersions::kCurrent, "kernel");
      ASSERT_TRUE(answer.ok()) << answer.status().ToString();
      ranked.push_back(answer->params);
    }
    size_t last_rank = 5;
    for (int i = 0; i < 8; ++i) {
      const SampleRecord& m = measured[c * 8 + i];
      EXPECT_EQ(ToString(m.context), ToString(first.context));
      EXPECT_EQ(m.kernel.family, "gemm.ffma");
      EXPECT_EQ(m.measurement.status, SampleStatus::kOk);
      if (i < 6) {
        EXPECT_EQ(ranked[i], m.kernel.params) << c << " " << i;
        continue;
      }
      const auto at = std::find(ranked.begin() + 6, ranked.end(), m.kernel.params);
      ASSERT_NE(at, ranked.end()) << c << " " << i;
      const size_t rank = static_cast<size_t>(at - ranked.begin());
      EXPECT_GT(rank, last_rank) << c << " " << i;
      last_rank = rank;
    }
  }

  // Its time budget ends it: a 1-minute guided campaign on a slow fake GPU
  // (50 ms a sample) stops with most of 4,000 candidates left, and says so.
  // A short watchdog: the worker, idle while the plan is made, must not
  // be taken for a hung one when its first samples arrive.
  d->Stop(SIGTERM);
  auto slow = Start("measure_us=50000,compile_us=300000", {"--kernel-timeout", "2"});
  spec.set_minutes(1);
  spec.set_max_samples(4000);
  spec.set_seed(10);
  const auto started = std::chrono::steady_clock::now();
  const v1::Campaign timed =
      WaitFor(*slow, StartSpec(*slow, spec).id(), Ended, 150);
  const double took = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - started)
                          .count();
  EXPECT_EQ(timed.state(), v1::CAMPAIGN_STATE_DONE) << timed.message();
  const int64_t done = timed.samples_ok() + timed.samples_failed();
  EXPECT_GT(done, 0);
  EXPECT_LT(done, 4000);
  EXPECT_THAT(timed.message(),
              HasSubstr("; measured " + std::to_string(done) +
                        "; its 1-minute budget ended it with " +
                        std::to_string(4000 - done) + " left"));
  EXPECT_LT(took, 100) << timed.message();
  // Its 500 contexts are ranked a chunk at a time beside the measuring:
  // the first chunk's candidates went to the GPU before the last context
  // was ranked.
  EXPECT_THAT(slow->Log(), ::testing::ContainsRegex(
                               "ranked its first candidates \\(to context "
                               "[0-9]+ of 500\\)"));
  EXPECT_THAT(slow->Log(), HasSubstr("the rest are ranked while the GPUs measure"));
  EXPECT_THAT(slow->Log(), ::testing::Not(HasSubstr("said nothing")))
      << slow->Log();
  slow->Stop(SIGTERM);

  // Killed while its plan is half ranked, it carries on where the cursor
  // says: the same candidates in the same seqs as a run without the kill
  // (the plan is the spec's and the model's), neither duplicates nor gaps.
  spec.set_minutes(0);
  spec.set_max_samples(480);
  spec.set_seed(12);
  auto reference = Start("measure_us=20");
  const int64_t ref_id = StartSpec(*reference, spec).id();
  ASSERT_EQ(WaitFor(*reference, ref_id, Ended).state(), v1::CAMPAIGN_STATE_DONE);
  reference->Stop(SIGTERM);
  auto killed = Start("measure_us=2000");
  const int64_t kill_id = StartSpec(*killed, spec).id();
  const v1::Campaign at_kill = WaitFor(*killed, kill_id, [](const v1::Campaign& c) {
    return c.samples_ok() + c.samples_failed() >= 100;
  });
  EXPECT_LT(at_kill.samples_ok() + at_kill.samples_failed(), 480);
  EXPECT_EQ(killed->Stop(SIGKILL), 128 + SIGKILL);
  auto resumed = Start("measure_us=20");
  const v1::Campaign end = WaitFor(*resumed, kill_id, Ended);
  EXPECT_EQ(end.state(), v1::CAMPAIGN_STATE_DONE) << end.message();
  EXPECT_EQ(end.samples_ok() + end.samples_failed(), 480);
  resumed->Stop(SIGTERM);
  const auto want = CampaignSamplesBySeq(**store, ref_id);  // the store above
  ASSERT_EQ(want.size(), 480u);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(want[i].first, static_cast<int64_t>(i)) << "a seq twice or missing";
  EXPECT_EQ(CampaignSamplesBySeq(**store, kill_id), want);
}

}  // namespace
}  // namespace blocktune
