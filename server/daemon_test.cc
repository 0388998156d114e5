// Tests of a real blocktuned process: bad input, authentication, shutdown,
// and the calls that work now, over gRPC on a unix socket or TCP.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <climits>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <random>
#include <thread>

#include "proto/convert.h"
#include "proto/dataset_stream.h"
#include "server/daemon_process.h"
#include "server/pg_test_server.h"
#include "server/record_convert.h"
#include "server/store_test_util.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using namespace ::blocktune::testing;  // NOLINT

class DaemonTest : public ::testing::Test {
 protected:
  std::unique_ptr<DaemonProcess> Start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--listen", "unix:" + dir_.path() + "/s.sock",
                                     "--db", db(), "--log-level", "debug"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto daemon = std::make_unique<DaemonProcess>(BLOCKTUNED, args, log());
    EXPECT_TRUE(daemon->ok()) << daemon->Log();
    return daemon;
  }
  std::string db() const { return dir_.path() + "/blocktune.db"; }
  std::string log() const { return dir_.path() + "/blocktuned.log"; }
  TempDir dir_;
};

std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token = "") {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  return ctx;
}

// A dataset of 3 tuned answers for one context (and one for another) and
// 10 samples, as an import request.
v1::ImportRequest TestDataset() {
  v1::ImportRequest req;
  v1::Dataset* d = req.mutable_dataset();
  d->set_format("blocktune.dataset.v1");
  GemmContext g = TestGemm(4096, 16, 4096);
  g.layout_b = Layout::kT;
  ToProto(TestTuned(g, TestShape(64, 16), 2e-4), d->add_tuned());
  ToProto(TestTuned(g, TestShape(128, 16, 4), 9e-5), d->add_tuned());
  ToProto(TestTuned(g, TestShape(32, 16), 3e-4), d->add_tuned());
  ToProto(TestTuned(TestGemm(1024, 1024, 1024), TestShape(128, 128), 1e-4),
          d->add_tuned());
  for (int i = 0; i < 10; ++i) ToProto(TestSample(1, i), d->add_samples());
  return req;
}

v1::QueryRequest TestQuery() {
  v1::QueryRequest req;
  GemmContext g = TestGemm(4096, 16, 4096);
  g.layout_b = Layout::kT;
  ToProto(g, req.mutable_context());
  req.set_top(2);
  return req;
}

// ------------------------------------------------------- malformed input --

// One malformed request: the RPC it goes to and what was broken.
struct Malformed {
  std::string what;
  std::function<grpc::Status(v1::Blocktune::Stub&)> call;
};

class MalformedRequests {
 public:
  explicit MalformedRequests(uint32_t seed) : rng_(seed) {}

  Malformed Next() {
    switch (Pick(9)) {
      case 0: case 1: return BadQuery();
      case 2: return BadBatchQuery();
      case 3: return BadCampaign();
      case 4: return BadIds();
      case 5: return BadTrain();
      case 6: return BadKernel();
      case 7: return BadExport();
      default: return BadImport();
    }
  }

 private:
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  int64_t Any(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  // A value outside [1, kMaxDim] for a dimension.
  int64_t BadDim() {
    const int64_t choices[] = {0, -1, INT64_MIN, INT64_MAX, kMaxDim + 1,
                               -Any(1, kMaxDim), Any(kMaxDim + 1, INT64_MAX)};
    return choices[Pick(7)];
  }
  // An enum number that is unspecified or unknown.
  int BadEnum() {
    const int choices[] = {0, -1, 5, 99, INT_MAX, INT_MIN, static_cast<int>(Any(6, 1000))};
    return choices[Pick(7)];
  }
  // A precision number that is unknown (unspecified means fp32).
  int BadDType() {
    const int choices[] = {-1, 6, 99, INT_MAX, INT_MIN, static_cast<int>(Any(6, 1000))};
    return choices[Pick(6)];
  }
  std::string BadText() {
    return Pick(2) ? std::string(257 + Pick(500), 'x')
                   : std::string("gpu\x01name\n", 9);
  }

  v1::Context GoodContext() {
    v1::Context ctx;
    if (Pick(2)) {
      ToProto(Context(TestGemm(Any(1, 8192), Any(1, 8192), Any(1, 8192))), &ctx);
    } else {
      ConvContext c;
      c.n = Any(1, 8);
      c.h = c.w = Any(8, 128);
      c.c = Any(1, 512);
      c.k = Any(1, 512);
      c.r = c.s = 3;
      c.pad_h = c.pad_w = 1;
      ToProto(Context(c), &ctx);
    }
    return ctx;
  }

  // Breaks one field of a valid context; returns what it broke.
  std::string BreakContext(v1::Context* ctx) {
    if (Pick(12) == 0) {
      ctx->Clear();
      return "no context";
    }
    if (ctx->has_gemm()) {
      v1::GemmContext* g = ctx->mutable_gemm();
      switch (Pick(6)) {
        case 0: g->set_m(BadDim()); return "gemm.m";
        case 1: g->set_n(BadDim()); return "gemm.n";
        case 2: g->set_k(BadDim()); return "gemm.k";
        case 3:
          g->set_layout_a(static_cast<v1::Layout>(BadEnum() % 3 == 0 ? 0 : 7));
          return "gemm.layout_a";
        case 4: g->set_dtype(static_cast<v1::DType>(BadDType())); return "gemm.dtype";
        default:  // every dimension in range, their product not
          g->set_m(Any(int64_t{1} << 21, kMaxDim));
          g->set_k(Any(int64_t{1} << 21, kMaxDim));
          return "gemm m*k overflow";
      }
    }
    v1::ConvContext* c = ctx->mutable_conv();
    switch (Pick(9)) {
      case 0: c->set_n(BadDim()); return "conv.n";
      case 1: c->set_h(BadDim()); return "conv.h";
      case 2: c->set_c(BadDim()); return "conv.c";
      case 3: c->set_stride_w(Pick(2) ? 0 : -Any(1, 100)); return "conv.stride_w";
      case 4: c->set_dilation_h(Pick(2) ? 0 : 70000); return "conv.dilation_h";
      case 5: c->set_pad_h(Pick(2) ? -1 : 65536); return "conv.pad_h";
      case 6: c->set_r(c->h() + 2 * c->pad_h() + Any(1, 100)); return "conv.r too big";
      case 7: c->set_dtype(static_cast<v1::DType>(BadDType())); return "conv.dtype";
      default:
        c->set_n(Any(1 << 20, 1 << 30));
        c->set_h(4096);
        c->set_w(4096);
        return "conv input overflow";
    }
  }

  v1::BlockShape GoodShape() {
    v1::BlockShape xb;
    ToProto(TestShape(64, 64), &xb);
    return xb;
  }

  std::string BreakShape(v1::BlockShape* xb) {
    switch (Pick(6)) {
      case 0: xb->set_ml(BadDim() % 2 ? 0 : 2048); return "ml";
      case 1: xb->set_ms(3); return "ms does not divide ml";
      case 2: xb->set_ms(1); xb->set_ns(1); return "threads > 1024";
      case 3: xb->set_u(Pick(2) ? 0 : 257); return "u";
      case 4: xb->set_kg(Pick(2) ? 0 : -7); return "kg";
      default: xb->set_ns(128); return "ns > nl";
    }
  }

  Malformed BadQuery() {
    v1::QueryRequest req;
    *req.mutable_context() = GoodContext();
    req.set_top(static_cast<int>(Any(0, 100)));
    std::string what;
    switch (Pick(4)) {
      case 0: case 1: what = BreakContext(req.mutable_context()); break;
      case 2:
        req.set_top(Pick(2) ? static_cast<int>(-Any(1, INT_MAX)) : 101 + Pick(1000));
        what = "top";
        break;
      default: req.set_device_name(BadText()); what = "device_name";
    }
    return {"Query " + what, [req](v1::Blocktune::Stub& s) {
              v1::QueryResponse r;
              return s.Query(Ctx().get(), req, &r);
            }};
  }

  Malformed BadBatchQuery() {
    v1::BatchQueryRequest req;
    std::string what;
    if (Pick(10) == 0) {
      what = "no queries";
    } else {
      int n = 1 + Pick(20);
      int bad = Pick(n);
      for (int i = 0; i < n; ++i) {
        v1::QueryRequest* q = req.add_queries();
        *q->mutable_context() = GoodContext();
        if (i == bad) what = "queries[" + std::to_string(i) + "] " + BreakContext(q->mutable_context());
      }
    }
    return {"BatchQuery " + what, [req](v1::Blocktune::Stub& s) {
              v1::BatchQueryResponse r;
              return s.BatchQuery(Ctx().get(), req, &r);
            }};
  }

  Malformed BadCampaign() {
    v1::StartCampaignRequest req;
    v1::CampaignSpec* spec = req.mutable_spec();
    spec->set_op(v1::OP_GEMM);
    spec->set_dtype(v1::DTYPE_FP32);
    spec->set_minutes(20);
    std::string what;
    switch (Pick(7)) {
      case 0: spec->set_op(static_cast<v1::Op>(BadEnum() % 2 ? 0 : 3)); what = "op"; break;
      case 1: spec->set_dtype(static_cast<v1::DType>(BadDType())); what = "dtype"; break;
      case 2: spec->set_minutes(Pick(2) ? -1 : kMaxCampaignMinutes + 1); what = "minutes"; break;
      case 3: spec->set_minutes(0); what = "no budget"; break;
      case 4: spec->set_max_samples(-Any(1, 1000)); what = "max_samples"; break;
      case 5: spec->add_gpus(Pick(2) ? -1 : 64); what = "gpus"; break;
      default: spec->set_label(BadText()); what = "label";
    }
    return {"StartCampaign " + what, [req](v1::Blocktune::Stub& s) {
              v1::StartCampaignResponse r;
              return s.StartCampaign(Ctx().get(), req, &r);
            }};
  }

  Malformed BadIds() {
    int64_t id = Pick(2) ? 0 : -Any(1, INT64_MAX);
    if (Pick(2)) {
      return {"CancelCampaign id", [id](v1::Blocktune::Stub& s) {
                v1::CancelCampaignRequest req;
                req.set_id(id);
                v1::CancelCampaignResponse r;
                return s.CancelCampaign(Ctx().get(), req, &r);
              }};
    }
    return {"WatchCampaign id", [id](v1::Blocktune::Stub& s) {
              v1::WatchCampaignRequest req;
              req.set_id(id);
              auto ctx = Ctx();
              auto reader = s.WatchCampaign(ctx.get(), req);
              v1::CampaignProgress p;
              while (reader->Read(&p)) {
              }
              return reader->Finish();
            }};
  }

  Malformed BadTrain() {
    v1::TrainModelRequest req;
    req.set_op(v1::OP_CONV);
    std::string what;
    switch (Pick(4)) {
      case 0: req.set_op(static_cast<v1::Op>(Pick(2) ? 0 : 42)); what = "op"; break;
      case 1: req.add_hidden_layers(64); req.add_hidden_layers(Pick(2) ? 0 : 5000); what = "layer"; break;
      case 2: for (int i = 0; i < 33; ++i) req.add_hidden_layers(8); what = "33 layers"; break;
      default: req.set_epochs(-Any(1, INT_MAX)); what = "epochs";
    }
    return {"TrainModel " + what, [req](v1::Blocktune::Stub& s) {
              auto ctx = Ctx();
              auto reader = s.TrainModel(ctx.get(), req);
              v1::TrainProgress p;
              while (reader->Read(&p)) {
              }
              return reader->Finish();
            }};
  }

  Malformed BadKernel() {
    v1::GetKernelRequest req;
    *req.mutable_context() = GoodContext();
    *req.mutable_block_shape() = GoodShape();
    std::string what = Pick(2) ? BreakContext(req.mutable_context())
                               : BreakShape(req.mutable_block_shape());
    return {"GetKernel " + what, [req](v1::Blocktune::Stub& s) {
              v1::GetKernelResponse r;
              return s.GetKernel(Ctx().get(), req, &r);
            }};
  }

  Malformed BadExport() {
    v1::ExportRequest req;
    std::string what;
    switch (Pick(3)) {
      case 0: req.set_op(static_cast<v1::Op>(3 + Pick(100))); what = "op"; break;
      case 1: req.set_format(static_cast<v1::ExportFormat>(3 + Pick(100))); what = "format"; break;
      default: req.set_device_name(BadText()); what = "device_name";
    }
    return {"Export " + what, [req](v1::Blocktune::Stub& s) {
              v1::Dataset d;
              return ExportDataset(s, Ctx().get(), req, &d);
            }};
  }

  Malformed BadImport() {
    v1::ImportRequest req = TestDataset();
    v1::Dataset* d = req.mutable_dataset();
    std::string what;
    switch (Pick(8)) {
      case 0: d->set_format(Pick(2) ? "" : "blocktune.dataset.v9"); what = "format"; break;
      case 1: what = "tuned " + BreakContext(d->mutable_tuned(Pick(4))->mutable_context()); break;
      case 2: what = "sample " + BreakShape(d->mutable_samples(Pick(10))->mutable_block_shape()); break;
      case 3: d->mutable_samples(Pick(10))->set_status("fast"); what = "sample status"; break;
      case 4: d->mutable_samples(Pick(10))->set_median_seconds(Pick(2) ? 0 : NAN); what = "ok sample time"; break;
      case 5: {
        v1::TunedAnswer* t = d->mutable_tuned(Pick(4));
        t->set_measured_seconds(Pick(2) ? 0 : -1);
        t->set_predicted_seconds(0);
        what = "tuned time";
        break;
      }
      case 6: d->mutable_samples(Pick(10))->mutable_device()->set_sm_count(Pick(2) ? 0 : 5000); what = "device"; break;
      default: {
        v1::Model* m = d->add_models();
        ToProto(TestDevice(), m->mutable_device());
        m->set_op(v1::OP_GEMM);
        m->set_architecture(Pick(2) ? "" : std::string(300, '1'));
        what = "model architecture";
      }
    }
    return {"Import " + what, [req](v1::Blocktune::Stub& s) {
              v1::ImportResponse r;
              return ImportDataset(s, Ctx().get(), req.dataset(), &r);
            }};
  }

  std::mt19937 rng_;
};

TEST_F(DaemonTest, MalformedRequestsAreInvalidArgumentAndLoseNothing) {
  auto daemon = Start();
  ASSERT_TRUE(daemon->ok());
  auto stub = daemon->NewStub();
  v1::ImportResponse imported;
  ASSERT_TRUE(
      ImportDataset(*stub, Ctx().get(), TestDataset().dataset(), &imported).ok());
  v1::QueryResponse before;
  ASSERT_TRUE(stub->Query(Ctx().get(), TestQuery(), &before).ok());
  v1::HealthResponse health_before;
  ASSERT_TRUE(stub->Health(Ctx().get(), {}, &health_before).ok());

  constexpr uint32_t kSeed = 20261121;
  constexpr int kRequests = 1200;
  MalformedRequests requests(kSeed);
  std::map<std::string, int> by_kind;
  int wrong = 0;
  for (int i = 0; i < kRequests; ++i) {
    Malformed m = requests.Next();
    grpc::Status s = m.call(*stub);
    ++by_kind[m.what.substr(0, m.what.find(' '))];
    if (s.error_code() != grpc::StatusCode::INVALID_ARGUMENT) {
      ++wrong;
      ADD_FAILURE() << "request " << i << " (" << m.what << ", seed " << kSeed
                    << ") got " << s.error_code() << ": " << s.error_message();
    }
    if (wrong > 10) break;
  }
  EXPECT_EQ(wrong, 0);
  for (const auto& [kind, n] : by_kind) EXPECT_GT(n, 20) << kind;

  v1::HealthResponse health_after;
  ASSERT_TRUE(stub->Health(Ctx().get(), {}, &health_after).ok())
      << daemon->Log();
  EXPECT_EQ(health_after.samples(), health_before.samples());
  EXPECT_EQ(health_after.tuned_answers(), health_before.tuned_answers());
  v1::QueryResponse after;
  ASSERT_TRUE(stub->Query(Ctx().get(), TestQuery(), &after).ok());
  EXPECT_EQ(after.SerializeAsString(), before.SerializeAsString());
  EXPECT_EQ(daemon->Stop(SIGTERM), 0);
}

TEST_F(DaemonTest, ErrorMessagesNameTheFieldAndRange) {
  auto daemon = Start();
  auto stub = daemon->NewStub();
  v1::QueryRequest req = TestQuery();
  req.mutable_context()->mutable_gemm()->set_m(0);
  v1::QueryResponse resp;
  grpc::Status s = stub->Query(Ctx().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "context.gemm.m must be in [1, 2147483647], got 0");
  v1::BatchQueryRequest batch;
  *batch.add_queries() = TestQuery();
  *batch.add_queries() = req;
  v1::BatchQueryResponse batch_resp;
  s = stub->BatchQuery(Ctx().get(), batch, &batch_resp);
  EXPECT_THAT(s.error_message(), HasSubstr("queries[1].context.gemm.m"));
}

// ---------------------------------------------------------- data in/out --

TEST_F(DaemonTest, QueryAnswersExactlyFromImportedDataElseNotFound) {
  auto daemon = Start();
  auto stub = daemon->NewStub();
  v1::QueryResponse resp;
  grpc::Status s = stub->Query(Ctx().get(), TestQuery(), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(),
              HasSubstr("no tuned answer for 'gemm m=4096 n=16 k=4096 "
                        "layout=NT dtype=fp32' on any device"));
  EXPECT_THAT(s.error_message(), HasSubstr("blocktune train --op gemm"));
  EXPECT_THAT(s.error_message(), HasSubstr("blocktune import"));

  v1::ImportResponse imported;
  ASSERT_TRUE(
      ImportDataset(*stub, Ctx().get(), TestDataset().dataset(), &imported).ok());
  EXPECT_EQ(imported.tuned(), 4);
  EXPECT_EQ(imported.samples(), 10);

  ASSERT_TRUE(stub->Query(Ctx().get(), TestQuery(), &resp).ok());
  ASSERT_EQ(resp.answers_size(), 2);
  EXPECT_EQ(resp.match(), v1::MATCH_EXACT);
  EXPECT_EQ(resp.answers(0).block_shape().ml(), 128);
  EXPECT_EQ(resp.answers(0).block_shape().kg(), 4);
  EXPECT_DOUBLE_EQ(resp.answers(0).measured_seconds(), 9e-5);
  EXPECT_NEAR(resp.answers(0).tflops(), 2.0 * 4096 * 16 * 4096 / 9e-5 / 1e12,
              1e-9);
  EXPECT_EQ(resp.answers(0).source(), v1::SOURCE_IMPORTED);
  EXPECT_EQ(resp.answers(1).block_shape().ml(), 64);

  // The same context on a device that has no data is not found.
  v1::QueryRequest other = TestQuery();
  other.set_device_name("NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(stub->Query(Ctx().get(), other, &resp).error_code(),
            grpc::StatusCode::NOT_FOUND);

  v1::BatchQueryRequest batch;
  *batch.add_queries() = TestQuery();
  *batch.add_queries() = other;
  v1::BatchQueryResponse batch_resp;
  ASSERT_TRUE(stub->BatchQuery(Ctx().get(), batch, &batch_resp).ok());
  ASSERT_EQ(batch_resp.results_size(), 2);
  EXPECT_EQ(batch_resp.results(0).code(), 0);
  EXPECT_EQ(batch_resp.results(0).response().answers_size(), 2);
  EXPECT_EQ(batch_resp.results(1).code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));

  v1::ExportRequest export_req;
  export_req.set_include_samples(true);
  v1::Dataset exported;
  ASSERT_TRUE(ExportDataset(*stub, Ctx().get(), export_req, &exported).ok());
  EXPECT_EQ(exported.format(), "blocktune.dataset.v1");
  EXPECT_EQ(exported.tuned_size(), 4);
  EXPECT_EQ(exported.samples_size(), 10);
  v1::ListDevicesResponse devices;
  ASSERT_TRUE(stub->ListDevices(Ctx().get(), {}, &devices).ok());
  ASSERT_EQ(devices.devices_size(), 1);
  EXPECT_EQ(devices.devices(0).samples(), 10);
  EXPECT_EQ(devices.devices(0).tuned_answers(), 4);
}

TEST_F(DaemonTest, CallsWithoutGpuOrDataSayWhatIsMissing) {
  auto daemon = Start();
  auto stub = daemon->NewStub();
  v1::StartCampaignRequest start;
  start.mutable_spec()->set_op(v1::OP_GEMM);
  start.mutable_spec()->set_dtype(v1::DTYPE_FP32);
  start.mutable_spec()->set_minutes(20);
  v1::StartCampaignResponse started;
  // Campaigns are built; this daemon has no GPU, so it says so.
  grpc::Status s = stub->StartCampaign(Ctx().get(), start, &started);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("no GPU"));

  v1::QueryRequest verify = TestQuery();
  verify.set_verify(true);
  v1::QueryResponse q;
  // Verify is built: with no stored answer and no model, NOT_FOUND says
  // how to get a model.
  s = stub->Query(Ctx().get(), verify, &q);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("blocktune train --op gemm"));

  v1::GetKernelRequest kernel;
  *kernel.mutable_context() = TestQuery().context();
  v1::GetKernelResponse k;
  // GetKernel never fails for lack of data: the default block shape's
  // kernel, saying so.
  s = stub->GetKernel(Ctx().get(), kernel, &k);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(k.query().match(), v1::MATCH_DEFAULT);
  EXPECT_THAT(k.ptx(), HasSubstr(".visible .entry blocktune_gemm("));
  EXPECT_EQ(k.params_size(), 12);
  kernel.set_arch("sm_999");
  s = stub->GetKernel(Ctx().get(), kernel, &k);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("arch must be sm_XY with XY in [70, 120]"));

  v1::TrainModelRequest train;
  train.set_op(v1::OP_GEMM);
  auto ctx = Ctx();
  auto reader = stub->TrainModel(ctx.get(), train);
  v1::TrainProgress p;
  EXPECT_FALSE(reader->Read(&p));
  s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("no measured gemm fp32 samples"));

  v1::ExportRequest header;
  header.set_format(v1::EXPORT_FORMAT_HEADER);
  v1::Dataset e;
  s = ExportDataset(*stub, Ctx().get(), header, &e);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(s.error_message(), HasSubstr("written by the client"));
}

TEST_F(DaemonTest, CampaignsAreListedWatchedAndCancelled) {
  {  // A campaign as the scheduler (issue 5) will leave it in the store.
    auto store = OpenSqliteStore(db());
    ASSERT_TRUE(store.ok());
    CampaignSpec spec;
    spec.minutes = 20;
    spec.label = "seeded";
    auto c = (*store)->CreateCampaign(spec);
    ASSERT_TRUE(c.ok());
    CampaignRecord running = *c;
    running.state = CampaignState::kRunning;
    running.samples_ok = 5;
    WriteBatch batch;
    batch.campaign_updates.push_back(running);
    ASSERT_TRUE((*store)->Commit(batch).ok());
  }
  auto daemon = Start();
  auto stub = daemon->NewStub();
  v1::ListCampaignsResponse list;
  ASSERT_TRUE(stub->ListCampaigns(Ctx().get(), {}, &list).ok());
  ASSERT_EQ(list.campaigns_size(), 1);
  EXPECT_EQ(list.campaigns(0).state(), v1::CAMPAIGN_STATE_RUNNING);
  EXPECT_EQ(list.campaigns(0).spec().label(), "seeded");

  // A watcher sees the running campaign, then its cancellation, then the
  // end of the stream.
  auto watch_ctx = Ctx();
  v1::WatchCampaignRequest watch;
  watch.set_id(1);
  auto reader = stub->WatchCampaign(watch_ctx.get(), watch);
  v1::CampaignProgress progress;
  ASSERT_TRUE(reader->Read(&progress));
  EXPECT_EQ(progress.campaign().samples_ok(), 5);
  v1::CancelCampaignRequest cancel;
  cancel.set_id(1);
  v1::CancelCampaignResponse cancelled;
  ASSERT_TRUE(stub->CancelCampaign(Ctx().get(), cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.campaign().state(), v1::CAMPAIGN_STATE_CANCELLED);
  v1::CampaignProgress last = progress;
  while (reader->Read(&progress)) last = progress;
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(last.campaign().state(), v1::CAMPAIGN_STATE_CANCELLED);

  grpc::Status again = stub->CancelCampaign(Ctx().get(), cancel, &cancelled);
  EXPECT_EQ(again.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  cancel.set_id(99);
  EXPECT_EQ(stub->CancelCampaign(Ctx().get(), cancel, &cancelled).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

// ------------------------------------------------- exposure and security --

// The store answers from memory what only its own commits change, so a
// second daemon on the same database is refused, and the file is free again
// once the first is gone, however it ended.
TEST_F(DaemonTest, OneDaemonPerDatabase) {
  auto first = Start();
  DaemonProcess second(BLOCKTUNED,
                       {"--listen", "unix:" + dir_.path() + "/s2.sock", "--db",
                        db()},
                       dir_.path() + "/second.log");
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(second.Wait(), 1);
  EXPECT_THAT(second.Log(), HasSubstr("the database " + db() +
                                      " is in use by another blocktuned (pid "));
  EXPECT_EQ(first->Stop(SIGKILL), 128 + SIGKILL);
  DaemonProcess third(BLOCKTUNED,
                      {"--listen", "unix:" + dir_.path() + "/s3.sock", "--db",
                       db()},
                      dir_.path() + "/third.log");
  EXPECT_TRUE(third.ok()) << third.Log();
}

// A socket another daemon serves is refused, whatever database this one
// would use (gRPC unlinked it and bound its own: the first daemon, still
// running, was unreachable, and lost its socket file when the second
// exited); a socket file left by a killed daemon is taken over.
TEST_F(DaemonTest, OneDaemonPerUnixSocket) {
  auto first = Start();
  ASSERT_TRUE(first->ok());
  const std::string socket = dir_.path() + "/s.sock";
  {
    DaemonProcess second(BLOCKTUNED,
                         {"--listen", "unix:" + socket, "--db",
                          dir_.path() + "/other.db"},
                         dir_.path() + "/second.log");
    EXPECT_FALSE(second.ok());
    EXPECT_EQ(second.Wait(), 1);
    EXPECT_THAT(second.Log(), HasSubstr("cannot listen on unix:" + socket +
                                        ": another process (a blocktuned?) "
                                        "serves " + socket));
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/other.db"));
  v1::HealthResponse health;
  EXPECT_TRUE(first->NewStub()->Health(Ctx().get(), {}, &health).ok());
  // Not a socket: refused, the file left as it was.
  const std::string file = dir_.path() + "/notes.txt";
  { std::ofstream(file) << "mine"; }
  DaemonProcess onto_file(BLOCKTUNED,
                          {"--listen", "unix:" + file, "--db",
                           dir_.path() + "/third.db"},
                          dir_.path() + "/third.log");
  EXPECT_EQ(onto_file.Wait(), 1);
  EXPECT_THAT(onto_file.Log(), HasSubstr(file + " exists and is not a socket"));
  std::ifstream in(file);
  std::string kept;
  in >> kept;
  EXPECT_EQ(kept, "mine");
  // Killed, the first daemon leaves its socket file; nobody serves it, so
  // the next daemon takes it.
  EXPECT_EQ(first->Stop(SIGKILL), 128 + SIGKILL);
  ASSERT_TRUE(std::filesystem::exists(socket));
  auto next = Start();
  EXPECT_TRUE(next->ok()) << next->Log();
  EXPECT_TRUE(next->NewStub()->Health(Ctx().get(), {}, &health).ok());
}

// A --db that is not a database is refused, and left as it was (its mode
// was made 0600 before SQLite found it was no database).
TEST_F(DaemonTest, AFileThatIsNotADatabaseIsRefusedAndLeftAlone) {
  for (const std::string text : {"some notes\n", "short"}) {
    const std::string file = dir_.path() + "/notes.txt";
    { std::ofstream(file) << text; }
    ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
    DaemonProcess d(BLOCKTUNED,
                    {"--listen", "unix:" + dir_.path() + "/n.sock", "--db", file},
                    dir_.path() + "/n.log");
    EXPECT_EQ(d.Wait(), 1);
    EXPECT_THAT(d.Log(), HasSubstr(file + " is not a blocktune database (not an "
                                   "SQLite file); left as it is"));
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u);
    EXPECT_EQ(st.st_size, static_cast<off_t>(text.size()));
  }
  DaemonProcess folder(BLOCKTUNED,
                       {"--listen", "unix:" + dir_.path() + "/n.sock", "--db",
                        dir_.path()},
                       dir_.path() + "/f.log");
  EXPECT_EQ(folder.Wait(), 1);
  EXPECT_THAT(folder.Log(), HasSubstr("is a folder, not a database file"));
}

// NaN is no number in range: CLI11's Range let "nan" through, and a NaN
// risk silently changed every query's ranking.
TEST_F(DaemonTest, NotANumberIsOutOfRange) {
  for (const auto& [flag, says] :
       std::vector<std::pair<std::string, std::string>>{
           {"--ensemble-risk", "--ensemble-risk must be in [0, 10], got nan"},
           {"--kernel-timeout", "--kernel-timeout must be in [0.1, 3600] seconds, got nan"}}) {
    DaemonProcess d(BLOCKTUNED,
                    {"--listen", "unix:" + dir_.path() + "/n.sock", "--db",
                     db(), flag, "nan"},
                    dir_.path() + "/n.log");
    EXPECT_EQ(d.Wait(), 1) << flag;
    EXPECT_THAT(d.Log(), HasSubstr(says));
  }
}

// The lock follows the file, not the path: a symlink or a hard link to a
// database in use names the same file and is refused.
TEST_F(DaemonTest, OneDaemonPerDatabaseWhateverLinkNamesIt) {
  auto first = Start();
  ASSERT_TRUE(first->ok());
  const std::string symlink_path = dir_.path() + "/symlink.db";
  const std::string hardlink_path = dir_.path() + "/hardlink.db";
  ASSERT_EQ(::symlink(db().c_str(), symlink_path.c_str()), 0);
  ASSERT_EQ(::link(db().c_str(), hardlink_path.c_str()), 0);
  for (const std::string& path : {symlink_path, hardlink_path}) {
    DaemonProcess second(BLOCKTUNED,
                         {"--listen", "unix:" + dir_.path() + "/s2.sock",
                          "--db", path},
                         dir_.path() + "/second.log");
    EXPECT_FALSE(second.ok()) << path;
    EXPECT_EQ(second.Wait(), 1);
    EXPECT_THAT(second.Log(), HasSubstr("is in use by another blocktuned (pid "))
        << path;
  }
}

// Issue 22: daemons on one PostgreSQL database share it (no file lock),
// log where it is without a password, and one answers from what another
// imported within a second, even a question it had already answered (and
// cached) NOT_FOUND.
TEST_F(DaemonTest, DaemonsShareOnePostgresDatabase) {
  std::string why;
  PgTestServer* server = PgTestServer::Shared(&why);
  if (!server) GTEST_SKIP() << "no PostgreSQL server: " << why;
  const std::string conninfo = server->NewDatabase() + " password=s3cret";
  DaemonProcess first(BLOCKTUNED,
                      {"--listen", "unix:" + dir_.path() + "/a.sock", "--db",
                       conninfo, "--log-level", "debug"},
                      dir_.path() + "/a.log");
  ASSERT_TRUE(first.ok()) << first.Log();
  DaemonProcess second(BLOCKTUNED,
                       {"--listen", "unix:" + dir_.path() + "/b.sock", "--db",
                        conninfo, "--log-level", "debug"},
                       dir_.path() + "/b.log");
  ASSERT_TRUE(second.ok()) << second.Log();
  EXPECT_THAT(first.Log(), HasSubstr("store postgresql://blocktune@"));
  EXPECT_THAT(first.Log(), ::testing::Not(HasSubstr("s3cret")));

  auto a = first.NewStub();
  auto b = second.NewStub();
  v1::QueryResponse resp;
  EXPECT_EQ(b->Query(Ctx().get(), TestQuery(), &resp).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::ImportResponse imported;
  ASSERT_TRUE(
      ImportDataset(*a, Ctx().get(), TestDataset().dataset(), &imported).ok());
  // b cached its NOT_FOUND; the store's generation counter, which b reads
  // at most every 250 ms, tells it the answers changed.
  const auto imported_at = std::chrono::steady_clock::now();
  grpc::Status found;
  do {
    found = b->Query(Ctx().get(), TestQuery(), &resp);
  } while (!found.ok() && std::chrono::steady_clock::now() - imported_at <
                              std::chrono::seconds(1));
  ASSERT_TRUE(found.ok()) << found.error_message();
  EXPECT_EQ(resp.match(), v1::MATCH_EXACT);
  EXPECT_EQ(resp.answers(0).block_shape().ml(), 128);
  EXPECT_EQ(first.Stop(SIGTERM), 0);
  EXPECT_EQ(second.Stop(SIGTERM), 0);
}

// A --db that is a bad connection string, or a server that is down, is a
// clear error at start, not a crash.
TEST_F(DaemonTest, ABadPostgresDatabaseIsAClearStartError) {
  DaemonProcess bad(BLOCKTUNED,
                    {"--listen", "unix:" + dir_.path() + "/a.sock", "--db",
                     "postgresql://bt:s3cret@[::1/x"},
                    dir_.path() + "/bad.log");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.Wait(), 1);
  EXPECT_THAT(bad.Log(), HasSubstr("--db"));
  EXPECT_THAT(bad.Log(), ::testing::Not(HasSubstr("s3cret")));
  DaemonProcess down(BLOCKTUNED,
                     {"--listen", "unix:" + dir_.path() + "/b.sock", "--db",
                      "host=" + dir_.path() + " dbname=x"},
                     dir_.path() + "/down.log");
  EXPECT_FALSE(down.ok());
  EXPECT_EQ(down.Wait(), 1);
  EXPECT_THAT(down.Log(), HasSubstr("UNAVAILABLE"));
}

// A new user's first start: HOME is empty, nothing under it exists yet. The
// daemon makes its data folder (0700 at every level it creates) and the
// database (0600) before it opens anything in them; XDG_DATA_HOME wins
// when set.
TEST_F(DaemonTest, FirstStartInAnEmptyHomeMakesPrivateFolders) {
  const std::string home = dir_.path() + "/home";
  ASSERT_EQ(::mkdir(home.c_str(), 0755), 0);
  const std::string xdg = dir_.path() + "/xdg/data";
  struct Case {
    std::vector<std::string> env;
    std::string first_made, db;
  };
  for (const Case& c :
       {Case{{"-u", "XDG_DATA_HOME", "HOME=" + home}, home + "/.local",
             home + "/.local/share/blocktune/blocktune.db"},
        Case{{"HOME=" + home, "XDG_DATA_HOME=" + xdg}, dir_.path() + "/xdg",
             xdg + "/blocktune/blocktune.db"}}) {
    std::vector<std::string> args = c.env;
    args.insert(args.end(), {BLOCKTUNED, "--listen",
                             "unix:" + dir_.path() + "/s.sock", "--gpus",
                             "none"});
    DaemonProcess daemon("/usr/bin/env", args, log());
    ASSERT_TRUE(daemon.ok()) << daemon.Log();
    struct stat st {};
    ASSERT_EQ(::stat(c.db.c_str(), &st), 0) << c.db;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << c.db;
    for (std::string folder = c.db.substr(0, c.db.rfind('/'));
         folder.size() >= c.first_made.size();
         folder = folder.substr(0, folder.rfind('/'))) {
      ASSERT_EQ(::stat(folder.c_str(), &st), 0) << folder;
      EXPECT_EQ(st.st_mode & 0777, 0700u) << folder;
    }
    EXPECT_EQ(daemon.Stop(SIGTERM), 0) << daemon.Log();
  }
}

// A database left readable by others (a copy, an older version) is taken
// to 0600 and the log says so.
TEST_F(DaemonTest, ExistingDatabaseReadableByOthersIsTakenTo0600) {
  { auto first = Start(); }
  ASSERT_EQ(::chmod(db().c_str(), 0644), 0);
  {
    auto daemon = Start();
    struct stat st {};
    ASSERT_EQ(::stat(db().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_THAT(daemon->Log(), HasSubstr("had mode 0644, readable by others; "
                                         "it is now 0600"));
  }
}

// One the daemon cannot write starts, with a warning naming what will fail.
TEST_F(DaemonTest, ReadOnlyDatabaseStartsWithAWarning) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write a read-only file";
  { auto first = Start(); }
  ASSERT_EQ(::chmod(db().c_str(), 0400), 0);
  DaemonProcess daemon(BLOCKTUNED,
                       {"--listen", "unix:" + dir_.path() + "/s.sock", "--db",
                        db()},
                       log());
  EXPECT_THAT(daemon.Log(), HasSubstr("is not writable"));
}

TEST_F(DaemonTest, RefusesANonLoopbackAddressWithoutTokenOrTls) {
  DaemonProcess daemon(BLOCKTUNED,
                       {"--listen", "0.0.0.0:0", "--db", db()}, log());
  EXPECT_FALSE(daemon.ok());
  EXPECT_EQ(daemon.Wait(), 1);
  EXPECT_THAT(daemon.Log(),
              HasSubstr("refusing to listen on 0.0.0.0:0: it is not a "
                        "loopback address"));
  EXPECT_THAT(daemon.Log(), HasSubstr("--token-file"));
}

TEST_F(DaemonTest, WithATokenEveryCallMustCarryIt) {
  const std::string token_file = dir_.path() + "/token";
  const std::string token = "s3cret-token-0123456789";
  std::ofstream(token_file) << token << "\n";
  DaemonProcess daemon(BLOCKTUNED,
                       {"--listen", "0.0.0.0:0", "--db", db(), "--token-file",
                        token_file},
                       log());
  ASSERT_TRUE(daemon.ok()) << daemon.Log();
  EXPECT_THAT(daemon.Log(), HasSubstr("(token required)"));
  auto stub = daemon.NewStub();
  v1::HealthResponse health;
  grpc::Status s = stub->Health(Ctx().get(), {}, &health);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("requires a token"));
  s = stub->Health(Ctx("wrong-token-0123456789").get(), {}, &health);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  v1::QueryResponse q;
  EXPECT_EQ(stub->Query(Ctx().get(), TestQuery(), &q).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(stub->Health(Ctx(token).get(), {}, &health).ok());
  EXPECT_EQ(stub->Query(Ctx(token).get(), TestQuery(), &q).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(DaemonTest, ATooShortTokenIsRefusedAtStart) {
  const std::string token_file = dir_.path() + "/token";
  std::ofstream(token_file) << "short\n";
  DaemonProcess daemon(BLOCKTUNED,
                       {"--listen", "unix:" + dir_.path() + "/s.sock", "--db",
                        db(), "--token-file", token_file},
                       log());
  EXPECT_FALSE(daemon.ok());
  EXPECT_EQ(daemon.Wait(), 1);
  EXPECT_THAT(daemon.Log(), HasSubstr("token must have at least 16 characters"));
  // A missing file, a folder and an empty file are each said as such.
  const std::string empty = dir_.path() + "/empty";
  std::ofstream(empty) << "\n";
  for (const auto& [path, says] : std::vector<std::pair<std::string, std::string>>{
           {dir_.path() + "/none", "cannot read token file " + dir_.path() +
                                       "/none: No such file or directory"},
           {dir_.path(), "token file " + dir_.path() + " is not a file"},
           {empty, "token file " + empty + " is empty"}}) {
    DaemonProcess other(BLOCKTUNED,
                        {"--listen", "unix:" + dir_.path() + "/t.sock", "--db",
                         dir_.path() + "/t.db", "--token-file", path},
                        dir_.path() + "/t.log");
    EXPECT_EQ(other.Wait(), 1) << path;
    EXPECT_THAT(other.Log(), HasSubstr(says));
  }
}

// ------------------------------------------------------------- shutdown --

TEST_F(DaemonTest, SigtermLetsAnInFlightImportFinish) {
  auto daemon = Start();
  auto stub = daemon->NewStub();
  v1::ImportRequest big = TestDataset();
  big.mutable_dataset()->clear_samples();
  constexpr int kSamples = 30000;
  for (int i = 0; i < kSamples; ++i)
    ToProto(TestSample(2, i % 5000), big.mutable_dataset()->add_samples());
  std::atomic<bool> returned{false};
  auto import = std::async(std::launch::async, [&] {
    v1::ImportResponse r;
    grpc::Status s = ImportDataset(*stub, Ctx().get(), big.dataset(), &r);
    returned = true;
    return s;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  const bool in_flight = !returned.load();
  EXPECT_EQ(daemon->Stop(SIGTERM), 0) << daemon->Log();
  grpc::Status status = import.get();
  std::cerr << "import was " << (in_flight ? "in flight" : "done")
            << " at SIGTERM and returned " << status.error_code() << "\n";
  EXPECT_THAT(daemon->Log(), HasSubstr("got SIGTERM, finishing in-flight calls"));
  EXPECT_THAT(daemon->Log(), HasSubstr("stopped"));

  auto store = OpenSqliteStore(db());
  ASSERT_TRUE(store.ok());
  int64_t stored = *(*store)->CountSamples({});
  if (status.ok()) {
    EXPECT_EQ(stored, kSamples);
  } else {  // it arrived after shutdown began: nothing of it, not a part
    EXPECT_EQ(stored, 0) << status.error_message();
  }
}

TEST_F(DaemonTest, ServesTheStandardGrpcHealthService) {
  auto daemon = Start();
  auto channel = grpc::CreateChannel("unix:" + dir_.path() + "/s.sock",
                                     grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  grpc::ClientContext ctx;
  grpc::ByteBuffer request;  // HealthCheckRequest{service: ""} is empty
  grpc::Slice empty;
  request = grpc::ByteBuffer(&empty, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", {}, &request,
                    &response, [&](grpc::Status s) { done.set_value(s); });
  grpc::Status status = done.get_future().get();
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));  // status: SERVING
}

}  // namespace
}  // namespace blocktune
