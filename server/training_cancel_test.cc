// Stopping long work in a real blocktuned (issue 21): a deadline, a client
// that goes away (a cancelled context, a Ctrl-C'd CLI) and SIGTERM each stop
// a training of wide layers within about a second, store nothing, and leave
// the daemon ready for the next training, or the store ready to reopen.
// SIGTERM also ends a query's verification benchmarks and a campaign with
// its watchers within a few seconds.
//
// The network is 4096,4096,4096 on the committed 4000-sample dataset: one
// epoch takes tens of seconds on a CPU, so a daemon that checks only
// between epochs fails every bound here.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "proto/dataset_file.h"
#include "proto/dataset_stream.h"
#include "server/daemon_process.h"
#include "server/store_test_util.h"
#include "server/tuning_store.h"

namespace blocktune {
namespace {

using namespace ::blocktune::testing;  // NOLINT
using Clock = std::chrono::steady_clock;

std::unique_ptr<grpc::ClientContext> Ctx(
    std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

v1::TrainModelRequest WideTraining() {
  v1::TrainModelRequest req;
  req.set_op(v1::OP_GEMM);
  for (int h : {4096, 4096, 4096}) req.add_hidden_layers(h);
  return req;
}

class TrainingCancelTest : public ::testing::Test {
 protected:
  std::unique_ptr<DaemonProcess> Start(std::vector<std::string> gpus = {
                                           "--gpus", "none"}) {
    const std::string n = std::to_string(++starts_);
    std::vector<std::string> args = {
        "--listen", "unix:" + dir_.path() + "/s" + n + ".sock", "--db", db()};
    args.insert(args.end(), gpus.begin(), gpus.end());
    auto d = std::make_unique<DaemonProcess>(
        BLOCKTUNED, args, dir_.path() + "/blocktuned" + n + ".log");
    EXPECT_TRUE(d->ok()) << d->Log();
    return d;
  }

  std::string db() const { return dir_.path() + "/t.db"; }

  static void Import(const DaemonProcess& d) {
    auto dataset = ReadDatasetFile(std::string(BLOCKTUNE_SOURCE_DIR) +
                                   "/server/testdata/gemm-4000.json.gz");
    ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
    v1::ImportResponse resp;
    grpc::Status s = ImportDataset(*d.NewStub(), Ctx().get(),
                                   *std::move(dataset), &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // Waits up to `seconds` for `text` in the daemon's log.
  static bool WaitForLog(const DaemonProcess& d, const std::string& text,
                         double seconds) {
    const auto start = Clock::now();
    while (SecondsSince(start) < seconds) {
      if (d.Log().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // The daemon has read the samples and the training loop is running.
  static void WaitForTrainingToStart(const DaemonProcess& d) {
    ASSERT_TRUE(WaitForLog(d, "training a gemm fp32 gemm.ffma model", 30)) << d.Log();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }

  static int64_t StoredModels(const DaemonProcess& d) {
    v1::HealthResponse health;
    grpc::Status s = d.NewStub()->Health(Ctx().get(), {}, &health);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return health.models();
  }

  // A small training that must start at once (no "another TrainModel is
  // running") and store its model.
  static void TrainSmall(const DaemonProcess& d) {
    EXPECT_GT(TrainSmallGemmModel(d, /*seconds=*/60), 0);
  }

  TempDir dir_;
  int starts_ = 0;
};

TEST_F(TrainingCancelTest, DeadlineEndsTheTrainingAndStoresNothing) {
  auto d = Start();
  ASSERT_TRUE(d->ok());
  Import(*d);

  const auto start = Clock::now();
  auto ctx = Ctx(std::chrono::milliseconds(1500));
  auto reader = d->NewStub()->TrainModel(ctx.get(), WideTraining());
  v1::TrainProgress p;
  while (reader->Read(&p)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The daemon stops too, not only the client's wait.
  EXPECT_TRUE(WaitForLog(*d, "training stopped: the call's deadline passed", 3))
      << d->Log();
  std::cerr << "stopped " << SecondsSince(start) << " s after the call began\n";
  EXPECT_LT(SecondsSince(start), 5.0);
  EXPECT_EQ(StoredModels(*d), 0);
  TrainSmall(*d);
  EXPECT_EQ(StoredModels(*d), 1);
}

TEST_F(TrainingCancelTest, ClientThatGoesAwayStopsTheTraining) {
  auto d = Start();
  ASSERT_TRUE(d->ok());
  Import(*d);

  auto ctx = Ctx();
  auto reader = d->NewStub()->TrainModel(ctx.get(), WideTraining());
  WaitForTrainingToStart(*d);
  const auto cancelled = Clock::now();
  ctx->TryCancel();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(WaitForLog(*d, "training stopped: the client went away", 3))
      << d->Log();
  std::cerr << "stopped " << SecondsSince(cancelled) << " s after the cancel\n";
  EXPECT_LT(SecondsSince(cancelled), 3.0);
  // The next training starts right away, and only it is stored.
  TrainSmall(*d);
  EXPECT_EQ(StoredModels(*d), 1);
}

// Ctrl-C on `blocktune train` ends the CLI; the daemon sees the connection
// close and stops the training. --timeout bounds a training.
TEST_F(TrainingCancelTest, CliCtrlCAndTimeoutStopTheTraining) {
  auto d = Start();
  ASSERT_TRUE(d->ok());
  Import(*d);
  const std::string server = "--server=" + d->address();

  const pid_t cli = fork();
  if (cli == 0) {
    dup2(open("/dev/null", O_WRONLY), STDOUT_FILENO);
    execl(BLOCKTUNE_CLI, BLOCKTUNE_CLI, server.c_str(), "train", "--op", "gemm",
          "--layers", "4096,4096,4096", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(cli, 0);
  WaitForTrainingToStart(*d);
  kill(cli, SIGINT);
  int status = 0;
  waitpid(cli, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << status;
  EXPECT_TRUE(WaitForLog(*d, "training stopped: the client went away", 3))
      << d->Log();

  const auto start = Clock::now();
  CommandResult run = RunCommand(std::string(BLOCKTUNE_CLI) + " " + server +
                                 " --timeout 2 train --op gemm --layers "
                                 "4096,4096,4096");
  EXPECT_EQ(run.code, 3) << run.out;
  EXPECT_NE(run.out.find("did not end within --timeout 2 s"), std::string::npos)
      << run.out;
  std::cerr << "--timeout 2 ended the CLI after " << SecondsSince(start)
            << " s\n";
  EXPECT_LT(SecondsSince(start), 4.0);
  EXPECT_TRUE(WaitForLog(*d, "training stopped: the call's deadline passed", 3))
      << d->Log();
  EXPECT_EQ(StoredModels(*d), 0);
}

TEST_F(TrainingCancelTest, SigtermDuringTrainingExitsPromptlyAndCleanly) {
  auto d = Start();
  ASSERT_TRUE(d->ok());
  Import(*d);

  // The client reads its stream as the CLI does. (One that reads nothing
  // keeps its connection open until the daemon's grace, 3 s, runs out.)
  auto training = std::async(std::launch::async, [&] {
    auto ctx = Ctx();
    auto reader = d->NewStub()->TrainModel(ctx.get(), WideTraining());
    v1::TrainProgress p;
    while (reader->Read(&p)) {
    }
    return reader->Finish();
  });
  WaitForTrainingToStart(*d);
  const auto start = Clock::now();
  EXPECT_EQ(d->Stop(SIGTERM), 0) << d->Log();
  std::cerr << "exited " << SecondsSince(start) << " s after SIGTERM\n";
  EXPECT_LT(SecondsSince(start), 5.0) << d->Log();
  grpc::Status s = training.get();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_NE(d->Log().find("training stopped: blocktuned is shutting down"),
            std::string::npos)
      << d->Log();

  // The store reopens with every sample and no model.
  auto again = Start();
  ASSERT_TRUE(again->ok());
  v1::HealthResponse health;
  ASSERT_TRUE(again->NewStub()->Health(Ctx().get(), {}, &health).ok());
  EXPECT_EQ(health.samples(), 4000);
  EXPECT_EQ(health.models(), 0);
}

// A query's --verify re-benchmarks its top k on the GPU; SIGTERM does not
// wait for that (here 10 shapes of 3 s each on a fake GPU worker).
TEST_F(TrainingCancelTest, SigtermDuringVerifyExitsPromptly) {
  auto d = Start({"--fake-gpus", "1", "--fake-worker", "measure_us=3000000",
                  "--verify-top", "10"});
  ASSERT_TRUE(d->ok());
  Import(*d);
  TrainSmall(*d);

  auto verify = std::async(std::launch::async, [&] {
    v1::QueryRequest q;
    v1::GemmContext* g = q.mutable_context()->mutable_gemm();
    g->set_m(3000);
    g->set_n(48);
    g->set_k(1000);
    g->set_layout_a(v1::LAYOUT_N);
    g->set_layout_b(v1::LAYOUT_T);
    g->set_dtype(v1::DTYPE_FP32);
    q.set_verify(true);
    v1::QueryResponse r;
    grpc::Status s = d->NewStub()->Query(Ctx().get(), q, &r);
    return s.ok() ? r.note() : s.error_message();
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto start = Clock::now();
  EXPECT_EQ(d->Stop(SIGTERM), 0) << d->Log();
  std::cerr << "exited " << SecondsSince(start) << " s after SIGTERM\n";
  EXPECT_LT(SecondsSince(start), 5.0) << d->Log();
  // The predicted answer, saying why it was not verified.
  EXPECT_NE(verify.get().find("blocktuned is shutting down"),
            std::string::npos);
}

// A running campaign and a client watching it: SIGTERM kills the workers,
// ends the watch with UNAVAILABLE, and leaves the campaign "running" in the
// store, to resume at the next start.
TEST_F(TrainingCancelTest, SigtermDuringCampaignAndWatchExitsPromptly) {
  auto d = Start({"--fake-gpus", "1", "--fake-worker", "measure_us=2000000"});
  ASSERT_TRUE(d->ok());
  v1::StartCampaignRequest req;
  req.mutable_spec()->set_op(v1::OP_GEMM);
  req.mutable_spec()->set_dtype(v1::DTYPE_FP32);
  req.mutable_spec()->set_max_samples(100);
  v1::StartCampaignResponse started;
  ASSERT_TRUE(d->NewStub()->StartCampaign(Ctx().get(), req, &started).ok());

  std::atomic<bool> running{false};
  auto watch = std::async(std::launch::async, [&] {
    v1::WatchCampaignRequest w;
    w.set_id(started.campaign().id());
    auto ctx = Ctx();
    auto reader = d->NewStub()->WatchCampaign(ctx.get(), w);
    v1::CampaignProgress p;
    while (reader->Read(&p)) {
      if (p.campaign().state() == v1::CAMPAIGN_STATE_RUNNING) running = true;
    }
    return reader->Finish();
  });
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (!running && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(running) << d->Log();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto start = Clock::now();
  EXPECT_EQ(d->Stop(SIGTERM), 0) << d->Log();
  std::cerr << "exited " << SecondsSince(start) << " s after SIGTERM\n";
  EXPECT_LT(SecondsSince(start), 5.0) << d->Log();
  EXPECT_EQ(watch.get().error_code(), grpc::StatusCode::UNAVAILABLE);

  auto store = OpenSqliteStore(db());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto campaign = (*store)->GetCampaign(started.campaign().id());
  ASSERT_TRUE(campaign.ok());
  EXPECT_EQ(campaign->state, CampaignState::kRunning);
}

}  // namespace
}  // namespace blocktune
