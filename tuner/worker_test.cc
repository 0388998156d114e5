// The worker's side of the protocol without a GPU: work items name a
// family, its generator version and its parameters; ParseWorkItem resolves
// them (or says why not, as a compile_error); the fake backend measures
// what the items say, through the framed pipe protocol.
#include "tuner/worker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <thread>

#include "kernels/gemm_mma.h"
#include "tuner/worker_protocol.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;

const KernelFamily& Mma() { return **FindFamily("gemm.mma"); }

Candidate MmaCandidate(const std::string& ctx, const std::string& params) {
  Candidate c;
  c.family = &Mma();
  c.ctx = *ContextFromString(ctx);
  c.params = *Mma().Parse(params);
  return c;
}

PreparedSample Parsed(const tuner::WorkItem& item) {
  PreparedSample s;
  s.item = item;
  ParseWorkItem(&s);
  return s;
}

TEST(WorkItemTest, CarriesTheFamilyItsVersionAndItsParameters) {
  const Candidate c = MmaCandidate(
      "gemm m=4096 n=16 k=4096 layout=NT dtype=bf16",
      "bm=64 bn=16 bk=64 wm=4 wn=1 st=4 kg=2 gm=1 sk=1");
  const tuner::DaemonMessage m = WorkMessage(7, c);
  ASSERT_TRUE(m.has_work());
  const tuner::WorkItem& item = m.work();
  EXPECT_EQ(item.seq(), 7);
  EXPECT_EQ(item.context(), "gemm m=4096 n=16 k=4096 layout=NT dtype=bf16");
  EXPECT_EQ(item.family(), "gemm.mma");
  EXPECT_EQ(item.version(), kGemmMmaGeneratorVersion);
  EXPECT_EQ(item.params(), "bm=64 bn=16 bk=64 wm=4 wn=1 st=4 kg=2 gm=1 sk=1");
  EXPECT_EQ(item.block_shape_size(), 0);

  // Through the wire format and back.
  tuner::DaemonMessage wire;
  ASSERT_TRUE(wire.ParseFromString(m.SerializeAsString()));
  PreparedSample s = Parsed(wire.work());
  ASSERT_TRUE(s.status.ok()) << s.status.message();
  EXPECT_EQ(s.family, &Mma());
  EXPECT_EQ(s.params, c.params);
  EXPECT_EQ(s.problem.ctx, c.ctx);
  EXPECT_EQ(DTypeOf(s.problem.ctx), DType::kBf16);

  // An ffma candidate goes by its family too.
  const Candidate ffma = FfmaCandidate(*ContextFromString(
      "gemm m=512 n=512 k=512 layout=NN dtype=fp32"), {64, 64, 4, 4, 8, 1});
  const tuner::WorkItem f = WorkMessage(1, ffma).work();
  EXPECT_EQ(f.family(), "gemm.ffma");
  EXPECT_EQ(f.params(), "ML=64 NL=64 MS=4 NS=4 U=8 KG=1 ST=1");
  s = Parsed(f);
  ASSERT_TRUE(s.status.ok()) << s.status.message();
  EXPECT_EQ(*BlockShapeOf({s.family, s.problem.ctx, s.params}),
            (BlockShape{64, 64, 4, 4, 8, 1}));
}

TEST(WorkItemTest, ItemsWithoutAFamilyAreTheFfmaFamilys) {
  tuner::WorkItem item;
  item.set_context("conv n=1 h=8 w=8 c=16 k=16 r=3 s=3 pad=1x1 stride=1x1 "
                   "dilation=1x1 dtype=fp32");
  for (int64_t v : {32, 16, 2, 2, 8, 1}) item.add_block_shape(v);
  PreparedSample s = Parsed(item);
  ASSERT_TRUE(s.status.ok()) << s.status.message();
  EXPECT_EQ(s.family->name(), "conv.ffma");
  EXPECT_EQ(s.family->Format(s.params), "ML=32 NL=16 MS=2 NS=2 U=8 KG=1 ST=1");

  item.add_block_shape(3);  // ST, since generator version 2
  s = Parsed(item);
  ASSERT_TRUE(s.status.ok()) << s.status.message();
  EXPECT_EQ(s.family->Format(s.params), "ML=32 NL=16 MS=2 NS=2 U=8 KG=1 ST=3");

  item.add_block_shape(1);
  s = Parsed(item);
  EXPECT_EQ(s.failure, "compile_error");
  EXPECT_THAT(s.status.message(), HasSubstr("block_shape needs 6 or 7 values"));
}

TEST(WorkItemTest, WhatCannotBeResolvedIsACompileErrorSayingWhy) {
  tuner::WorkItem good = WorkMessage(3, MmaCandidate(
      "gemm m=256 n=256 k=256 layout=NN dtype=fp16", "bm=64 bn=64")).work();
  struct Case {
    const char* what;
    std::function<void(tuner::WorkItem*)> change;
    const char* message;
  };
  const Case cases[] = {
      {"unknown family", [](tuner::WorkItem* i) { i->set_family("gemm.wgmma9"); },
       "this worker has no kernel family 'gemm.wgmma9': family must be one of "
       "gemm.ffma, conv.ffma, gemm.mma"},
      {"another version",
       [](tuner::WorkItem* i) { i->set_version(kGemmMmaGeneratorVersion + 1); },
       "this worker generates version"},
      {"another op",
       [](tuner::WorkItem* i) {
         i->set_context("conv n=1 h=8 w=8 c=16 k=16 r=3 s=3 pad=1x1 "
                        "stride=1x1 dilation=1x1 dtype=fp16");
       },
       "family gemm.mma computes gemm, the context is a conv"},
      {"bad parameter", [](tuner::WorkItem* i) { i->set_params("bm=24"); },
       "bm must be a power of two"},
      {"unknown parameter", [](tuner::WorkItem* i) { i->set_params("ml=64"); },
       "keys among bm bn bk wm wn st kg gm sk"},
      {"bad context", [](tuner::WorkItem* i) { i->set_context("gemm m=0"); },
       ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    tuner::WorkItem item = good;
    c.change(&item);
    PreparedSample s = Parsed(item);
    EXPECT_FALSE(s.status.ok());
    EXPECT_EQ(s.failure, "compile_error");
    EXPECT_THAT(s.status.message(), HasSubstr(c.message));
  }
  // Version 0: whatever this worker has.
  good.set_version(0);
  EXPECT_TRUE(Parsed(good).status.ok());
}

// The fake backend, driven through the pipe protocol as the daemon drives
// a worker process: results echo the family and version, times follow
// the precision, and an item it cannot resolve is a compile_error.
TEST(FakeWorkerTest, MeasuresWhatTheItemsSay) {
  auto backend = NewFakeBackend("measure_us=0,compile_us=0");
  ASSERT_TRUE(backend.ok());
  int to_worker[2], from_worker[2];
  ASSERT_EQ(pipe(to_worker), 0);
  ASSERT_EQ(pipe(from_worker), 0);
  int code = -1;
  std::thread worker([&] {
    WorkerOptions options;
    options.compile_threads = 2;
    code = RunWorker(**backend, to_worker[0], from_worker[1], options);
    close(from_worker[1]);
  });

  const std::string shape = "gemm m=2048 n=2048 k=2048 layout=NT dtype=";
  std::vector<tuner::DaemonMessage> sent = {
      WorkMessage(0, MmaCandidate(shape + "bf16", "bm=128 bn=128")),
      WorkMessage(1, MmaCandidate(shape + "tf32", "bm=128 bn=128")),
      WorkMessage(2, FfmaCandidate(*ContextFromString(shape + "fp32"),
                                   {128, 128, 8, 8, 8, 1})),
  };
  tuner::DaemonMessage unknown = sent[0];
  unknown.mutable_work()->set_seq(3);
  unknown.mutable_work()->set_family("gemm.fft");
  sent.push_back(unknown);
  tuner::DaemonMessage shutdown;
  shutdown.set_shutdown(true);
  sent.push_back(shutdown);
  for (const tuner::DaemonMessage& m : sent)
    ASSERT_TRUE(WriteMessage(to_worker[1], m).ok());

  std::map<int64_t, tuner::WorkResult> results;
  tuner::WorkerMessage m;
  bool hello = false;
  while (ReadMessage(from_worker[0], &m).ok()) {
    if (m.has_hello()) hello = m.hello().error().empty();
    if (m.has_result()) results[m.result().seq()] = m.result();
  }
  worker.join();
  close(to_worker[0]);
  close(to_worker[1]);
  close(from_worker[0]);
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(hello);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].status(), "ok");
  EXPECT_EQ(results[0].family(), "gemm.mma");
  EXPECT_EQ(results[0].version(), kGemmMmaGeneratorVersion);
  EXPECT_EQ(results[2].family(), "gemm.ffma");
  // The same FLOPs and tile: bf16 on tensor cores beats tf32 beats fp32.
  EXPECT_LT(results[0].median_s(), results[1].median_s());
  EXPECT_LT(results[1].median_s(), results[2].median_s());
  EXPECT_EQ(results[3].status(), "compile_error");
  EXPECT_THAT(results[3].error(), HasSubstr("no kernel family 'gemm.fft'"));
  EXPECT_EQ(FromWorkResult(results[3]).status, SampleStatus::kCompileError);
}

}  // namespace
}  // namespace blocktune
