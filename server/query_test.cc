// Training and queries in a real blocktuned (issue 6): TrainModel on a small
// committed H100 dataset, the trained model judged on held-out
// measurements of a context it never saw, predicted then cached answers,
// BatchQuery, and --verify re-benchmarking on a (fake) GPU worker.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <filesystem>

#include "kernels/block_shape.h"
#include "models/surrogate.h"
#include "proto/convert.h"
#include "proto/dataset_file.h"
#include "proto/dataset_stream.h"
#include "server/daemon_process.h"
#include "server/record_convert.h"
#include "server/store_test_util.h"
#include "tuner/candidate_stream.h"
#include "tuner/device_profile.h"

namespace blocktune {

namespace {

using namespace ::blocktune::testing;  // NOLINT
using ::testing::HasSubstr;

std::unique_ptr<grpc::ClientContext> Ctx(int seconds = 300) {
  return ContextWithDeadline(seconds);
}

std::string TestData(const std::string& name) {
  return std::string(BLOCKTUNE_SOURCE_DIR) + "/server/testdata/" + name;
}

v1::QueryRequest GemmQuery(int64_t m, int64_t n, int64_t k, int top) {
  v1::QueryRequest q;
  v1::GemmContext* g = q.mutable_context()->mutable_gemm();
  g->set_m(m);
  g->set_n(n);
  g->set_k(k);
  g->set_layout_a(v1::LAYOUT_N);
  g->set_layout_b(v1::LAYOUT_T);
  g->set_dtype(v1::DTYPE_FP32);
  q.set_top(top);
  return q;
}

class QueryTest : public ::testing::Test {
 protected:
  std::unique_ptr<DaemonProcess> Start(std::vector<std::string> extra = {}) {
    const std::string n = std::to_string(++starts_);
    std::vector<std::string> args = {
        "--listen", "unix:" + dir_.path() + "/s" + n + ".sock", "--db",
        dir_.path() + "/q.db"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto d = std::make_unique<DaemonProcess>(BLOCKTUNED, args,
                                             dir_.path() + "/blocktuned" + n + ".log");
    EXPECT_TRUE(d->ok()) << d->Log();
    return d;
  }

  // Imports the small dataset and trains a small model on it; returns the
  // progress messages.
  static std::vector<v1::TrainProgress> ImportAndTrain(const DaemonProcess& d) {
    auto dataset = ReadDatasetFile(TestData("gemm-4000.json.gz"));
    EXPECT_TRUE(dataset.ok()) << dataset.status().ToString();
    v1::ImportResponse imported;
    EXPECT_TRUE(
        ImportDataset(*d.NewStub(), Ctx().get(), *dataset, &imported).ok());
    EXPECT_EQ(imported.samples(), 4000);

    v1::TrainModelRequest req;
    req.set_op(v1::OP_GEMM);
    for (int h : {64, 64, 64}) req.add_hidden_layers(h);
    req.set_epochs(40);
    auto ctx = Ctx();
    auto reader = d.NewStub()->TrainModel(ctx.get(), req);
    std::vector<v1::TrainProgress> progress;
    v1::TrainProgress p;
    while (reader->Read(&p)) progress.push_back(p);
    grpc::Status s = reader->Finish();
    EXPECT_TRUE(s.ok()) << s.error_message();
    return progress;
  }

  TempDir dir_;
  int starts_ = 0;
};

TEST_F(QueryTest, TrainsRanksHeldOutShapesAndAnswersPredictedThenCached) {
  auto d = Start({"--gpus", "none"});
  ASSERT_TRUE(d->ok());

  // No model yet: a clear NOT_FOUND that says how to get one.
  v1::QueryResponse none;
  grpc::Status s = d->NewStub()->Query(Ctx().get(), GemmQuery(4096, 16, 4096, 1), &none);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("blocktune train --op gemm"), std::string::npos);

  std::vector<v1::TrainProgress> progress = ImportAndTrain(*d);
  ASSERT_GE(progress.size(), 3u);
  for (size_t i = 0; i + 1 < progress.size(); ++i) {
    EXPECT_EQ(progress[i].epoch(), static_cast<int>(i + 1));
  }
  const v1::TrainProgress& last = progress.back();
  ASSERT_GT(last.model_id(), 0);
  EXPECT_LT(last.validation_mse(), 0.25) << last.metrics_json();
  EXPECT_NE(last.metrics_json().find("spearman_validation"), std::string::npos);

  // The stored model, read back the way the header export will.
  v1::ExportRequest ex;
  ex.set_include_models(true);
  v1::Dataset exported;
  ASSERT_TRUE(ExportDataset(*d->NewStub(), Ctx().get(), ex, &exported).ok());
  ASSERT_EQ(exported.models_size(), 1);
  const v1::Model& m = exported.models(0);
  EXPECT_EQ(m.architecture(), "64,64,64");
  EXPECT_FALSE(m.libtorch_version().empty());
  EXPECT_NE(m.training_set().find("ok_samples=4000"), std::string::npos);
  auto model = Surrogate::Load(Op::kGemm, m.architecture(), m.weights(),
                               m.normalization());
  ASSERT_TRUE(model.ok()) << model.status().ToString();

  // Held-out: every measured pair of the unseen context 4096x16x4096 whose
  // speeds differ 3x or more; the model must order most of them right.
  auto held = ReadDatasetFile(TestData("gemm-heldout.json.gz"));
  ASSERT_TRUE(held.ok());
  std::vector<std::pair<double, double>> measured_predicted;
  for (int i = 0; i < held->samples_size() && i < 400; ++i) {
    auto r = FromProto(held->samples(i), "samples");
    ASSERT_TRUE(r.ok());
    measured_predicted.push_back(
        {r->measurement.median_s, model->PredictSeconds(r->context, *r->kernel.block_shape())});
  }
  int pairs = 0, right = 0;
  for (size_t i = 0; i < measured_predicted.size(); ++i) {
    for (size_t j = i + 1; j < measured_predicted.size(); ++j) {
      const auto& [mi, pi] = measured_predicted[i];
      const auto& [mj, pj] = measured_predicted[j];
      if (std::max(mi, mj) < 3 * std::min(mi, mj)) continue;
      ++pairs;
      right += (mi < mj) == (pi < pj);
    }
  }
  ASSERT_GT(pairs, 1000);
  EXPECT_GT(double(right) / pairs, 0.9) << right << " of " << pairs;

  // Predicted, then cached, the same answers.
  v1::QueryResponse first, second;
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), GemmQuery(4096, 16, 4096, 3), &first).ok());
  EXPECT_EQ(first.source(), v1::QUERY_SOURCE_PREDICTED);
  EXPECT_GT(first.candidates(), 10000);
  ASSERT_EQ(first.answers_size(), 3);
  EXPECT_LE(first.answers(0).predicted_seconds(), first.answers(2).predicted_seconds());
  EXPECT_EQ(first.answers(0).model_id(), last.model_id());
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), GemmQuery(4096, 16, 4096, 3), &second).ok());
  EXPECT_EQ(second.source(), v1::QUERY_SOURCE_CACHED);
  EXPECT_EQ(second.answers(0).block_shape().DebugString(),
            first.answers(0).block_shape().DebugString());
  // Verify without a GPU: still an answer, with a note saying why.
  v1::QueryRequest vq = GemmQuery(1000, 300, 700, 1);
  vq.set_verify(true);
  v1::QueryResponse vr;
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), vq, &vr).ok());
  EXPECT_EQ(vr.source(), v1::QUERY_SOURCE_PREDICTED);
  EXPECT_NE(vr.note().find("no GPU"), std::string::npos) << vr.note();

  // BatchQuery: answers, and a per-query error naming the bad field.
  v1::BatchQueryRequest batch;
  *batch.add_queries() = GemmQuery(512, 512, 512, 1);
  *batch.add_queries() = GemmQuery(0, 512, 512, 1);
  *batch.add_queries() = GemmQuery(4096, 16, 4096, 1);
  v1::BatchQueryResponse br;
  s = d->NewStub()->BatchQuery(Ctx().get(), batch, &br);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("queries[1].context.gemm.m"), std::string::npos)
      << s.error_message();
  batch.mutable_queries(1)->mutable_context()->mutable_gemm()->set_m(64);
  ASSERT_TRUE(d->NewStub()->BatchQuery(Ctx().get(), batch, &br).ok());
  ASSERT_EQ(br.results_size(), 3);
  for (const auto& r : br.results()) EXPECT_EQ(r.code(), 0) << r.message();
  EXPECT_EQ(br.results(2).response().source(), v1::QUERY_SOURCE_CACHED);

  // The model survives a restart.
  EXPECT_EQ(d->Stop(SIGTERM), 0);
  auto again = Start({"--gpus", "none"});
  v1::QueryResponse after;
  ASSERT_TRUE(again->NewStub()->Query(Ctx().get(), GemmQuery(2048, 16, 2048, 1), &after).ok());
  EXPECT_EQ(after.source(), v1::QUERY_SOURCE_PREDICTED);
  EXPECT_EQ(after.answers(0).model_id(), last.model_id());
}

// Issue 19: the real v3 store of server/testdata, migrated on open. Its
// models and tuned answers are stale (version-0 data), and since ST
// (version 2) so are its version-1 samples: the daemon neither answers from
// them nor trains on them.
TEST_F(QueryTest, StaleRowsOfAMigratedStoreNeverTrainOrAnswer) {
  std::filesystem::copy_file(TestData("store_v3.db"), dir_.path() + "/q.db");
  auto d = Start({"--gpus", "none"});
  ASSERT_TRUE(d->ok());

  // v3 answered this from the stored (stale) answer, as an exact match.
  v1::QueryResponse none;
  grpc::Status s =
      d->NewStub()->Query(Ctx().get(), GemmQuery(4096, 16, 4096, 1), &none);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  const int current = BlockShapeFamily(Op::kGemm).version();
  EXPECT_THAT(s.error_message(),
              HasSubstr("stored answers of gemm.ffma generator version 0 "
                        "(current: " + std::to_string(current) +
                        ") exist: stale"));
  // With --fallback it is a default of the current generator, and says that
  // only stale answers exist.
  v1::QueryRequest fallback = GemmQuery(4096, 16, 4096, 1);
  fallback.set_fallback(true);
  v1::QueryResponse fell;
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), fallback, &fell).ok());
  EXPECT_EQ(fell.match(), v1::MATCH_STALE) << fell.DebugString();
  EXPECT_EQ(fell.answers(0).source(), v1::SOURCE_DEFAULT);
  EXPECT_EQ(fell.answers(0).kernel().family(), "gemm.ffma");
  EXPECT_EQ(fell.answers(0).kernel().generator_version(), current);
  EXPECT_THAT(fell.note(), HasSubstr("gemm.ffma generator version 0"));
  EXPECT_THAT(fell.note(), HasSubstr("--retune-stale"));
  // Health counts the stale rows.
  v1::HealthResponse health;
  ASSERT_TRUE(d->NewStub()->Health(Ctx().get(), {}, &health).ok());
  EXPECT_GT(health.stale_samples(), 0);
  EXPECT_GT(health.stale_tuned_answers(), 0);
  EXPECT_EQ(health.stale_models(), 2);

  // Training finds no current sample: the 148 ok GEMM samples of version
  // 1 are stale since version 2, and the error counts them.
  v1::TrainModelRequest req;
  req.set_op(v1::OP_GEMM);
  for (int h : {16, 16}) req.add_hidden_layers(h);
  req.set_epochs(5);
  auto ctx = Ctx();
  auto reader = d->NewStub()->TrainModel(ctx.get(), req);
  v1::TrainProgress p;
  while (reader->Read(&p)) {
  }
  grpc::Status trained = reader->Finish();
  EXPECT_EQ(trained.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(trained.error_message(),
              HasSubstr("no measured gemm fp32 samples of a current generator"));
  EXPECT_THAT(trained.error_message(), HasSubstr("stale ones of an older generator"));
}

// Synthetic gemm.mma bf16 samples: candidates the campaign's sampler would
// draw on an H100, timed by a toy cost (bigger tiles and more stages are
// faster, up to 500 Tflop/s), enough for a model to train and answer.
v1::Dataset Bf16Samples(int count) {
  auto domain = DefaultDomain(Op::kGemm, DType::kBf16);
  EXPECT_TRUE(domain.ok()) << domain.status().ToString();
  auto stream = CandidateStream::Make(*std::move(domain),
                                      *ProfileByName("h100"), "uniform", 7);
  EXPECT_TRUE(stream.ok()) << stream.status().ToString();
  const DeviceFingerprint h100 = TestDevice("NVIDIA H100 80GB HBM3");
  v1::Dataset out;
  out.set_format("blocktune.dataset.v1");
  for (int i = 0; i < count; ++i) {
    auto c = (*stream)->Next();
    EXPECT_TRUE(c.ok());
    SampleRecord s;
    s.device = h100;
    s.context = c->ctx;
    s.kernel = KernelConfig::Current(*c->family, c->params);
    const KernelFamily& f = *c->family;
    auto p = [&](const char* name) {
      return static_cast<double>(c->params[f.ParamIndex(name)]);
    };
    const double tile = std::min(1.0, p("BM") * p("BN") / (128.0 * 128.0));
    const double eff = std::sqrt(tile) * std::pow(p("ST") / 5.0, 0.3);
    s.measurement.status = SampleStatus::kOk;
    s.measurement.median_s = Flops(s.context) / (5e14 * eff) + 4e-6;
    s.measurement.repetitions = 10;
    s.measured_unix = 1795400000 + i;
    ToProto(s, out.add_samples());
  }
  return out;
}

// Issue 19's three defects, each fixed: a bf16 request is never answered by
// an fp32 model, an fp32 stored answer or an fp32 nearest context; a bf16
// model trained on gemm.mma samples answers bf16 queries with gemm.mma
// kernels, and fp32 queries keep their own model.
TEST_F(QueryTest, PrecisionsNeverShareModelsAnswersOrFallbacks) {
  auto d = Start({"--gpus", "none"});
  ASSERT_TRUE(d->ok());
  const int64_t fp32_model = ImportAndTrain(*d).back().model_id();
  ASSERT_GT(fp32_model, 0);
  // An fp32 answer stored for this shape.
  v1::QueryResponse fp32;
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), GemmQuery(4096, 16, 4096, 1), &fp32).ok());
  EXPECT_EQ(fp32.answers(0).kernel().family(), "gemm.ffma");

  v1::QueryRequest bf16 = GemmQuery(4096, 16, 4096, 1);
  bf16.mutable_context()->mutable_gemm()->set_dtype(v1::DTYPE_BF16);
  // Was: answered by the fp32 model, then cached under bf16.
  v1::QueryResponse none;
  grpc::Status s = d->NewStub()->Query(Ctx().get(), bf16, &none);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("no trained gemm bf16 model"));
  // Was: the nearest context of any precision (here the fp32 answer of the
  // very same shape) answered.
  bf16.set_fallback(true);
  v1::QueryResponse fell;
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), bf16, &fell).ok());
  EXPECT_EQ(fell.match(), v1::MATCH_DEFAULT) << fell.DebugString();
  EXPECT_EQ(fell.answers(0).kernel().family(), "gemm.mma");
  EXPECT_EQ(fell.answers(0).context().gemm().dtype(), v1::DTYPE_BF16);
  EXPECT_FALSE(fell.answers(0).has_block_shape());
  // A precision no family implements is refused naming the field.
  v1::QueryRequest fp64 = GemmQuery(64, 64, 64, 1);
  fp64.mutable_context()->mutable_gemm()->set_dtype(v1::DTYPE_FP64);
  s = d->NewStub()->Query(Ctx().get(), fp64, &none);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("context.gemm.dtype: no kernel family implements gemm "
                        "in fp64; the gemm families are gemm.ffma (fp32); "
                        "gemm.mma (bf16, fp16, tf32); gemm.wgmma (bf16, "
                        "fp16, tf32)"));
  // A family that does not implement the precision, likewise.
  bf16.set_family("gemm.ffma");
  s = d->NewStub()->Query(Ctx().get(), bf16, &none);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("family 'gemm.ffma' is not a gemm "
                                           "family that implements bf16"));
  bf16.clear_family();

  // A bf16 gemm.mma model, trained on bf16 samples only.
  v1::ImportResponse imported;
  grpc::Status import =
      ImportDataset(*d->NewStub(), Ctx().get(), Bf16Samples(600), &imported);
  ASSERT_TRUE(import.ok()) << import.error_message();
  v1::TrainModelRequest req;
  req.set_op(v1::OP_GEMM);
  req.set_dtype(v1::DTYPE_BF16);
  for (int h : {32, 32}) req.add_hidden_layers(h);
  req.set_epochs(30);
  auto ctx = Ctx();
  auto reader = d->NewStub()->TrainModel(ctx.get(), req);
  v1::TrainProgress p, last;
  while (reader->Read(&p)) last = p;
  s = reader->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(last.family(), "gemm.mma");
  EXPECT_EQ(last.dtype(), v1::DTYPE_BF16);
  ASSERT_GT(last.model_id(), fp32_model);

  bf16.set_fallback(false);
  bf16.set_top(3);
  v1::QueryResponse predicted;
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), bf16, &predicted).ok());
  EXPECT_EQ(predicted.source(), v1::QUERY_SOURCE_PREDICTED) << predicted.DebugString();
  ASSERT_EQ(predicted.answers_size(), 3);
  for (const v1::TunedAnswer& a : predicted.answers()) {
    EXPECT_EQ(a.kernel().family(), "gemm.mma");
    EXPECT_EQ(a.kernel().generator_version(), (*FindFamily("gemm.mma"))->version());
    EXPECT_EQ(a.kernel().params_size(), 9);
    EXPECT_EQ(a.model_id(), last.model_id());
    EXPECT_EQ(a.context().gemm().dtype(), v1::DTYPE_BF16);
  }
  // The fp32 query keeps its fp32 answer and model.
  v1::QueryResponse again;
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), GemmQuery(4096, 16, 4096, 1), &again).ok());
  EXPECT_EQ(again.answers(0).model_id(), fp32_model);
  EXPECT_EQ(again.answers(0).kernel().family(), "gemm.ffma");

  // GetKernel of the bf16 answer: gemm.mma PTX with its launch facts.
  v1::GetKernelRequest kr;
  *kr.mutable_context() = bf16.context();
  v1::GetKernelResponse kernel;
  ASSERT_TRUE(d->NewStub()->GetKernel(Ctx().get(), kr, &kernel).ok());
  EXPECT_EQ(kernel.kernel().family(), "gemm.mma");
  EXPECT_EQ(kernel.kernel().DebugString(),
            predicted.answers(0).kernel().DebugString());
  EXPECT_NE(kernel.ptx().find("mma.sync"), std::string::npos);
  EXPECT_GT(kernel.dynamic_shared_bytes(), 0);
  EXPECT_EQ(kernel.dtype(), v1::DTYPE_BF16);
  EXPECT_FALSE(kernel.has_block_shape());

  // Export keeps family, version and precision; the model says which.
  v1::ExportRequest ex;
  ex.set_include_models(true);
  ex.set_dtype(v1::DTYPE_BF16);
  v1::Dataset exported;
  ASSERT_TRUE(ExportDataset(*d->NewStub(), Ctx().get(), ex, &exported).ok());
  ASSERT_EQ(exported.models_size(), 1);
  EXPECT_EQ(exported.models(0).family(), "gemm.mma");
  EXPECT_EQ(exported.models(0).dtype(), v1::DTYPE_BF16);
  for (const v1::TunedAnswer& t : exported.tuned())
    EXPECT_EQ(t.context().gemm().dtype(), v1::DTYPE_BF16);
}

// A configuration measured on the GPU outranks a prediction, however fast:
// on the H100 a --verify stored the measured top 5 of 4096x16x4096 bf16
// (35 us) beside the earlier predictions (12-13 us), and the cache then
// answered with a prediction that ran at 67 us.
// A query of one family answers with that family's best, and leaves the
// context's answer to a search of every family: it stored its answer as the
// context's, and every later query of the shape was served that family's
// configuration from the cache (the shipped H200 fp32 models: gemm.ffma's
// 43.8 us where gemm.ffma_k predicts 30.5).
TEST_F(QueryTest, AQueryOfOneFamilyIsNotTheContextsAnswer) {
  auto d = Start({"--gpus", "none"});
  auto shipped = ReadDatasetFile(std::string(BLOCKTUNE_SOURCE_DIR) +
                                 "/models/pretrained/h200/models-gemm-fp32.json.gz");
  ASSERT_TRUE(shipped.ok()) << shipped.status().ToString();
  ASSERT_GE(shipped->models_size(), 2);
  v1::ImportResponse imported;
  ASSERT_TRUE(ImportDataset(*d->NewStub(), Ctx().get(), *shipped, &imported).ok());

  v1::QueryRequest one = GemmQuery(4100, 16, 4096, 1);
  one.set_family("gemm.ffma");
  v1::QueryResponse ffma;
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), one, &ffma).ok());
  ASSERT_EQ(ffma.answers_size(), 1);
  EXPECT_EQ(ffma.answers(0).kernel().family(), "gemm.ffma");
  EXPECT_EQ(ffma.source(), v1::QUERY_SOURCE_PREDICTED);

  v1::QueryResponse all;
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), GemmQuery(4100, 16, 4096, 1), &all).ok());
  EXPECT_EQ(all.source(), v1::QUERY_SOURCE_PREDICTED) << all.DebugString();
  ASSERT_EQ(all.answers_size(), 1);
  EXPECT_NE(all.answers(0).kernel().family(), "gemm.ffma") << all.DebugString();
  EXPECT_LT(all.answers(0).predicted_seconds(), ffma.answers(0).predicted_seconds());
  // Now stored, the context's answer is cached; the family's query still
  // answers with its own family.
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), GemmQuery(4100, 16, 4096, 1), &all).ok());
  EXPECT_EQ(all.source(), v1::QUERY_SOURCE_CACHED);
  EXPECT_NE(all.answers(0).kernel().family(), "gemm.ffma");
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), one, &ffma).ok());
  EXPECT_EQ(ffma.answers(0).kernel().family(), "gemm.ffma");
  EXPECT_THAT(all.note(), ::testing::Not(HasSubstr("extrapolates")));

  // Far from what the models learned (K = 10^9; they saw K up to 2^14 or
  // so): the answer says it is an extrapolation.
  v1::QueryResponse far;
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), GemmQuery(1, 1, 1000000000, 1), &far).ok());
  EXPECT_THAT(far.note(), HasSubstr(") extrapolates here: log2_k = 29.9 is "));
  EXPECT_THAT(far.note(), HasSubstr("standard deviations above its training data's mean"));
  EXPECT_THAT(far.note(), HasSubstr("its prediction is a guess (--verify measures it)"));
}

TEST_F(QueryTest, MeasuredAnswersOutrankFasterPredictions) {
  auto d = Start({"--gpus", "none"});
  ASSERT_TRUE(d->ok());
  const Context ctx = TestGemm(4096, 16, 4096);
  TunedRecord predicted = TestTuned(ctx, TestShape(128, 16), 0);
  predicted.predicted_s = 12e-6;
  predicted.source = TunedSource::kPredicted;
  TunedRecord verified = TestTuned(ctx, TestShape(64, 16), 35e-6);
  verified.predicted_s = 13e-6;
  verified.source = TunedSource::kVerified;
  v1::Dataset data;
  data.set_format("blocktune.dataset.v1");
  ToProto(predicted, data.add_tuned());
  ToProto(verified, data.add_tuned());
  v1::ImportResponse imported;
  grpc::Status s = ImportDataset(*d->NewStub(), Ctx().get(), data, &imported);
  ASSERT_TRUE(s.ok()) << s.error_message();

  v1::QueryRequest q;
  ToProto(ctx, q.mutable_context());
  q.set_top(2);
  v1::QueryResponse r;
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), q, &r).ok());
  EXPECT_EQ(r.source(), v1::QUERY_SOURCE_CACHED);
  ASSERT_EQ(r.answers_size(), 2);
  EXPECT_EQ(r.answers(0).measured_seconds(), 35e-6);
  EXPECT_EQ(r.answers(1).predicted_seconds(), 12e-6);
  q.set_top(1);
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), q, &r).ok());
  ASSERT_EQ(r.answers_size(), 1);
  EXPECT_EQ(r.answers(0).measured_seconds(), 35e-6);
}

TEST_F(QueryTest, TrainModelRejectsBadRequestsByField) {
  auto d = Start({"--gpus", "none"});
  v1::TrainModelRequest req;
  req.set_op(v1::OP_GEMM);
  req.add_hidden_layers(0);
  auto ctx = Ctx();
  auto reader = d->NewStub()->TrainModel(ctx.get(), req);
  v1::TrainProgress p;
  while (reader->Read(&p)) {}
  grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("hidden_layers[0] must be in [1, 4096]"),
            std::string::npos)
      << s.error_message();

  req.clear_hidden_layers();
  auto ctx2 = Ctx();
  auto reader2 = d->NewStub()->TrainModel(ctx2.get(), req);
  while (reader2->Read(&p)) {}
  s = reader2->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("no measured gemm fp32 samples"), std::string::npos);
}

// --verify re-benchmarks the top k on a GPU worker (a fake one here; the
// real path runs on the H100, bench/results/h100/queries.txt) and returns
// them ordered by measured time.
TEST_F(QueryTest, VerifyRebenchmarksTopKOnTheWorker) {
  auto d = Start({"--fake-gpus", "1", "--fake-worker", "measure_us=100",
                  "--verify-top", "5"});
  ASSERT_TRUE(d->ok());
  ImportAndTrain(*d);
  v1::QueryRequest q = GemmQuery(3000, 48, 1000, 2);
  q.set_verify(true);
  v1::QueryResponse r;
  grpc::Status s = d->NewStub()->Query(Ctx().get(), q, &r);
  ASSERT_TRUE(s.ok()) << s.error_message() << d->Log();
  EXPECT_EQ(r.source(), v1::QUERY_SOURCE_VERIFIED) << r.note();
  ASSERT_EQ(r.answers_size(), 2);
  EXPECT_EQ(r.answers(0).source(), v1::SOURCE_VERIFIED);
  EXPECT_GT(r.answers(0).measured_seconds(), 0);
  EXPECT_LE(r.answers(0).measured_seconds(), r.answers(1).measured_seconds());
  EXPECT_GT(r.answers(0).predicted_seconds(), 0);
  // Cached from now on, and a verified answer serves a later verify.
  v1::QueryResponse again;
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), q, &again).ok());
  EXPECT_EQ(again.source(), v1::QUERY_SOURCE_CACHED);
}

}  // namespace
}  // namespace blocktune

namespace blocktune {
namespace {

// Issue 20: with models of two GPU models, a query that names no device is
// answered by the newest model's device and says which; --device picks the
// other; a daemon whose own GPU has a model answers for it, silently.
TEST_F(QueryTest, AQueryWithoutADeviceSaysWhichDeviceAnswers) {
  auto d = Start({"--gpus", "none"});
  ImportAndTrain(*d);  // "NVIDIA H100 80GB HBM3"
  auto dataset = ReadDatasetFile(TestData("gemm-4000.json.gz"));
  ASSERT_TRUE(dataset.ok());
  for (auto& s : *dataset->mutable_samples())
    s.mutable_device()->set_name("NVIDIA H200");
  v1::ImportResponse imported;
  ASSERT_TRUE(ImportDataset(*d->NewStub(), Ctx().get(), *dataset, &imported).ok());
  v1::TrainModelRequest req;
  req.set_op(v1::OP_GEMM);
  req.set_device_name("NVIDIA H200");
  for (int h : {64, 64, 64}) req.add_hidden_layers(h);
  req.set_epochs(40);
  auto ctx = Ctx();
  auto reader = d->NewStub()->TrainModel(ctx.get(), req);
  v1::TrainProgress p;
  while (reader->Read(&p)) {}
  ASSERT_TRUE(reader->Finish().ok());

  v1::QueryResponse r;
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), GemmQuery(3000, 160, 1000, 1), &r).ok());
  EXPECT_THAT(r.note(), HasSubstr("predicted for NVIDIA H200, the device of the "
                                  "newest gemm fp32 model (models of NVIDIA "
                                  "H100 80GB HBM3 too; --device chooses)"));
  ASSERT_EQ(r.answers_size(), 1);
  EXPECT_EQ(r.answers(0).device().name(), "NVIDIA H200");
  // A device that has no model (a short name): NOT_FOUND, naming the
  // devices that have one.
  v1::QueryRequest unknown = GemmQuery(3000, 160, 1000, 1);
  unknown.set_device_name("h100");
  grpc::Status nf = d->NewStub()->Query(Ctx().get(), unknown, &r);
  EXPECT_EQ(nf.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(nf.error_message(),
              HasSubstr("(the devices with one: 'NVIDIA H200', 'NVIDIA H100 "
                        "80GB HBM3'; --device takes the name as they say it)"));
  // GetKernel likewise (it said "answer.device.cc_major must be in [1, 99],
  // got 0").
  v1::GetKernelRequest kr;
  *kr.mutable_context() = unknown.context();
  kr.set_device_name("h100");
  v1::GetKernelResponse kernel;
  nf = d->NewStub()->GetKernel(Ctx().get(), kr, &kernel);
  EXPECT_EQ(nf.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(nf.error_message(), HasSubstr("device_name 'h100' is not in the store (it has "));
  EXPECT_THAT(nf.error_message(), HasSubstr("'NVIDIA H200'"));
  v1::QueryRequest named = GemmQuery(3000, 160, 1000, 1);
  named.set_device_name("NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), named, &r).ok());
  EXPECT_EQ(r.note(),
            "families without a trained model were not searched: gemm.ffma_k");
  EXPECT_EQ(r.answers(0).device().name(), "NVIDIA H100 80GB HBM3");
  // A family without a model is named only where its rules take the
  // shape: gemm.gemv (N <= 128) for a decode query, not for N = 160 above;
  // gemm.ffma_k (NT) for both, not for NN.
  v1::QueryRequest decode = GemmQuery(3000, 1, 1000, 1);
  decode.set_device_name("NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), decode, &r).ok());
  EXPECT_EQ(r.note(),
            "families without a trained model were not searched: gemm.gemv, "
            "gemm.ffma_k");
  v1::QueryRequest nn = GemmQuery(3000, 160, 1000, 1);
  nn.mutable_context()->mutable_gemm()->set_layout_b(v1::LAYOUT_N);
  nn.set_device_name("NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(d->NewStub()->Query(Ctx().get(), nn, &r).ok());
  EXPECT_EQ(r.note(), "");

  // A daemon on a GPU (a fake one, "Fake GPU") that has no model of its
  // own says so; once one of its own is trained, that one answers.
  d->Stop(SIGTERM);
  auto g = Start({"--fake-gpus", "1"});
  ASSERT_TRUE(g->NewStub()->Query(Ctx().get(), GemmQuery(3001, 160, 1000, 1), &r).ok());
  EXPECT_THAT(r.note(), HasSubstr("this daemon's GPU (Fake GPU) has no trained "
                                  "gemm fp32 model"));
  for (auto& s : *dataset->mutable_samples())
    s.mutable_device()->set_name("Fake GPU");
  ASSERT_TRUE(ImportDataset(*g->NewStub(), Ctx().get(), *dataset, &imported).ok());
  req.set_device_name("Fake GPU");
  auto ctx2 = Ctx();
  auto reader2 = g->NewStub()->TrainModel(ctx2.get(), req);
  while (reader2->Read(&p)) {}
  ASSERT_TRUE(reader2->Finish().ok());
  ASSERT_TRUE(g->NewStub()->Query(Ctx().get(), GemmQuery(3002, 160, 1000, 1), &r).ok());
  EXPECT_EQ(r.note(),
            "families without a trained model were not searched: gemm.ffma_k");
  EXPECT_EQ(r.answers(0).device().name(), "Fake GPU");
}

}  // namespace
}  // namespace blocktune
