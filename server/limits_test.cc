// Issue 21 hardening, against a real blocktuned: every request over a limit
// is refused naming the field and the limit (and the daemon answers Health
// after each); requests that do not parse are INVALID_ARGUMENT with a
// message; imported models are validated before they are stored and a bad
// stored model does not break queries; uncached searches are bounded so
// that cached queries keep their latency.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <future>
#include <limits>
#include <random>
#include <thread>

#include "models/surrogate.h"
#include "models/surrogate.pb.h"
#include "proto/convert.h"
#include "proto/dataset_file.h"
#include "proto/dataset_stream.h"
#include "server/daemon_process.h"
#include "server/record_convert.h"
#include "server/store_test_util.h"
#include "server/tuning_store.h"

namespace blocktune {
namespace {

using namespace ::blocktune::testing;  // NOLINT

std::unique_ptr<grpc::ClientContext> Ctx(int seconds = 120) {
  return ContextWithDeadline(seconds);
}

std::string ShippedModels() {
  return std::string(BLOCKTUNE_SOURCE_DIR) +
         "/models/pretrained/h100-sxm/models.json.gz";
}

v1::QueryRequest GemmQuery(int64_t m, int64_t n, int64_t k) {
  v1::QueryRequest q;
  v1::GemmContext* g = q.mutable_context()->mutable_gemm();
  g->set_m(m);
  g->set_n(n);
  g->set_k(k);
  g->set_layout_a(v1::LAYOUT_N);
  g->set_layout_b(v1::LAYOUT_T);
  g->set_dtype(v1::DTYPE_FP32);
  return q;
}

v1::QueryRequest ConvQuery(int64_t n, int64_t hw, int64_t c, int64_t k,
                           int64_t rs) {
  v1::QueryRequest q;
  v1::ConvContext* cv = q.mutable_context()->mutable_conv();
  cv->set_n(n);
  cv->set_h(hw);
  cv->set_w(hw);
  cv->set_c(c);
  cv->set_k(k);
  cv->set_r(rs);
  cv->set_s(rs);
  cv->set_stride_h(1);
  cv->set_stride_w(1);
  cv->set_dilation_h(1);
  cv->set_dilation_w(1);
  cv->set_dtype(v1::DTYPE_FP32);
  return q;
}

v1::StartCampaignRequest Campaign() {
  v1::StartCampaignRequest req;
  req.mutable_spec()->set_op(v1::OP_GEMM);
  req.mutable_spec()->set_dtype(v1::DTYPE_FP32);
  req.mutable_spec()->set_minutes(10);
  return req;
}

v1::TrainModelRequest Train(std::vector<int> hidden, int members = 0) {
  v1::TrainModelRequest req;
  req.set_op(v1::OP_GEMM);
  for (int h : hidden) req.add_hidden_layers(h);
  req.set_members(members);
  return req;
}

grpc::Status Call(v1::Blocktune::Stub& s, const v1::QueryRequest& req) {
  v1::QueryResponse r;
  return s.Query(Ctx().get(), req, &r);
}
grpc::Status Call(v1::Blocktune::Stub& s, const v1::BatchQueryRequest& req) {
  v1::BatchQueryResponse r;
  return s.BatchQuery(Ctx().get(), req, &r);
}
grpc::Status Call(v1::Blocktune::Stub& s, const v1::GetKernelRequest& req) {
  v1::GetKernelResponse r;
  return s.GetKernel(Ctx().get(), req, &r);
}
grpc::Status Call(v1::Blocktune::Stub& s, const v1::StartCampaignRequest& req) {
  v1::StartCampaignResponse r;
  return s.StartCampaign(Ctx().get(), req, &r);
}
grpc::Status Call(v1::Blocktune::Stub& s, const v1::TrainModelRequest& req) {
  auto ctx = Ctx();
  auto reader = s.TrainModel(ctx.get(), req);
  v1::TrainProgress p;
  while (reader->Read(&p)) {
  }
  return reader->Finish();
}

// `bytes` sent as the request of `method`, whatever they are.
grpc::Status RawCall(const DaemonProcess& d, const std::string& method,
                     const std::string& bytes) {
  auto channel =
      grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  auto ctx = Ctx(30);
  stub.UnaryCall(ctx.get(), method, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

class LimitsTest : public ::testing::Test {
 protected:
  std::unique_ptr<DaemonProcess> Start(std::vector<std::string> extra = {}) {
    const std::string n = std::to_string(++starts_);
    std::vector<std::string> args = {
        "--listen", "unix:" + dir_.path() + "/s" + n + ".sock",
        "--db",     db(),
        "--gpus",   "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto d = std::make_unique<DaemonProcess>(
        BLOCKTUNED, args, dir_.path() + "/blocktuned" + n + ".log");
    EXPECT_TRUE(d->ok()) << d->Log();
    return d;
  }
  std::string db() const { return dir_.path() + "/b.db"; }

  static v1::Dataset Shipped() {
    auto dataset = ReadDatasetFile(ShippedModels());
    EXPECT_TRUE(dataset.ok()) << dataset.status().ToString();
    return *dataset;
  }
  static grpc::Status Import(const DaemonProcess& d, const v1::Dataset& data) {
    v1::ImportResponse resp;
    return ImportDataset(*d.NewStub(), Ctx().get(), data, &resp);
  }
  static v1::HealthResponse Health(const DaemonProcess& d) {
    v1::HealthResponse h;
    grpc::Status s = d.NewStub()->Health(Ctx().get(), v1::HealthRequest(), &h);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return h;
  }

  TempDir dir_;
  int starts_ = 0;
};

// ------------------------------------------------------ request limits --

struct OverLimit {
  std::string what;
  std::function<grpc::Status(v1::Blocktune::Stub&)> call;
  grpc::StatusCode code;
  std::vector<std::string> message_has;  // the field and the limit
};

template <typename Request>
OverLimit Case(std::string what, Request req, std::vector<std::string> has,
               grpc::StatusCode code = grpc::StatusCode::INVALID_ARGUMENT) {
  return {std::move(what),
          [req](v1::Blocktune::Stub& s) { return Call(s, req); }, code,
          std::move(has)};
}

std::vector<OverLimit> OverLimitRequests() {
  const std::string big(1 << 20, 'x');  // 1 MiB, under any message limit
  const std::string not_utf8 = "H100\xff\xfe";
  std::vector<OverLimit> cases;

  // Query: top, strings, dimensions and their products.
  auto q = GemmQuery(64, 64, 64);
  q.set_top(101);
  cases.push_back(Case("Query top", q, {"top", "[0, 100]", "101"}));
  q.set_top(-1);
  cases.push_back(Case("Query negative top", q, {"top", "[0, 100]"}));
  q = GemmQuery(64, 64, 64);
  q.set_device_name(std::string(257, 'x'));
  cases.push_back(Case("Query device_name", q, {"device_name", "0 to 256"}));
  q.set_device_name(big);
  cases.push_back(
      Case("Query 1 MiB device_name", q, {"device_name", "0 to 256"}));
  q.set_device_name(not_utf8);
  cases.push_back(Case("Query device_name not UTF-8", q,
                       {"device_name", "printable ASCII"}));
  q = GemmQuery(std::numeric_limits<int64_t>::max(), 64, 64);
  cases.push_back(Case("Query m", q, {"context.gemm.m", "[1, 2147483647]"}));
  q = GemmQuery(kMaxDim, 64, kMaxDim);
  cases.push_back(
      Case("Query m*k", q, {"elements of A (m*k)", "at most 1099511627776"}));
  q = GemmQuery(64, kMaxDim, kMaxDim);
  cases.push_back(
      Case("Query k*n", q, {"elements of B (k*n)", "at most 1099511627776"}));
  q = ConvQuery(1 << 20, 4096, 1, 1, 1);
  cases.push_back(Case("Query conv n*h*w*c", q,
                       {"elements of the input (n*h*w*c)", "1099511627776"}));
  q = ConvQuery(1, 1, kMaxDim, kMaxDim, 1);
  cases.push_back(Case("Query conv k*r*s*c", q,
                       {"elements of the filter (k*r*s*c)", "1099511627776"}));
  q = ConvQuery(1, 64, 8, 8, 3);
  q.mutable_context()->mutable_conv()->set_dilation_h(70000);
  cases.push_back(Case("Query conv dilation", q,
                       {"context.conv.dilation_h", "[1, 65535]"}));

  // BatchQuery: the count, and each query's fields by index.
  v1::BatchQueryRequest batch;
  cases.push_back(
      Case("BatchQuery empty", batch, {"queries size", "[1, 10000]"}));
  for (int i = 0; i < 10001; ++i)
    *batch.add_queries() = GemmQuery(64, 64, 64 + i);
  cases.push_back(
      Case("BatchQuery 10001", batch, {"queries size", "[1, 10000]"}));
  batch.Clear();
  for (int i = 0; i < 4; ++i) *batch.add_queries() = GemmQuery(64, 64, 64);
  batch.mutable_queries(2)->set_top(1000);
  cases.push_back(
      Case("BatchQuery top", batch, {"queries[2].top", "[0, 100]"}));
  batch.mutable_queries(2)->set_top(1);
  {
    // 2,000 queries of top 100: each query is legal, the answers together
    // would not fit the response limit.
    v1::BatchQueryRequest wide;
    for (int i = 0; i < 2000; ++i) {
      *wide.add_queries() = GemmQuery(64, 64, 64 + i);
      wide.mutable_queries(i)->set_top(100);
    }
    cases.push_back(Case("BatchQuery answers", wide,
                         {"sum of queries[].top", "at most 100000"}));
  }
  batch.mutable_queries(1)->set_device_name(not_utf8);
  cases.push_back(Case("BatchQuery device_name not UTF-8", batch,
                       {"queries[1].device_name", "printable ASCII"}));

  // GetKernel.
  v1::GetKernelRequest kernel;
  *kernel.mutable_context() = GemmQuery(64, 64, 64).context();
  kernel.set_arch("sm_" + big);
  cases.push_back(Case("GetKernel 1 MiB arch", kernel, {"arch", "sm_XY"}));
  kernel.set_arch("sm_9\xc3\x28");
  cases.push_back(Case("GetKernel arch not UTF-8", kernel, {"arch", "sm_XY"}));
  kernel.clear_arch();
  kernel.set_device_name(std::string(300, 'x'));
  cases.push_back(
      Case("GetKernel device_name", kernel, {"device_name", "0 to 256"}));
  kernel.clear_device_name();
  ToProto(TestShape(64, 64), kernel.mutable_block_shape());
  kernel.mutable_block_shape()->set_kg(70000);
  cases.push_back(
      Case("GetKernel kg", kernel, {"block_shape.kg", "[1, 65535]"}));

  // StartCampaign: strings (echoed at most in part), lists and budgets.
  auto campaign = Campaign();
  campaign.mutable_spec()->set_label(std::string(129, 'x'));
  cases.push_back(
      Case("StartCampaign label", campaign, {"spec.label", "0 to 128"}));
  campaign = Campaign();
  campaign.mutable_spec()->set_sampler(big);
  cases.push_back(Case("StartCampaign 1 MiB sampler", campaign,
                       {"spec.sampler", "bayes, uniform or guided", "more bytes"}));
  campaign = Campaign();
  for (int i = 0; i < 65; ++i) campaign.mutable_spec()->add_gpus(i);
  cases.push_back(
      Case("StartCampaign gpus", campaign, {"spec.gpus size", "[0, 64]"}));
  campaign = Campaign();
  campaign.mutable_spec()->set_minutes(kMaxCampaignMinutes + 1);
  cases.push_back(Case("StartCampaign minutes", campaign,
                       {"spec.minutes", std::to_string(kMaxCampaignMinutes)}));
  campaign = Campaign();
  campaign.mutable_spec()->set_max_samples(kMaxCampaignSamples + 1);
  cases.push_back(
      Case("StartCampaign max_samples", campaign,
           {"spec.max_samples", std::to_string(kMaxCampaignSamples)}));
  // CampaignSpec is also a response message printed as JSON, so its text
  // stays `string`: invalid UTF-8 fails the parse, which is answered too.
  campaign = Campaign();
  campaign.mutable_spec()->set_label(not_utf8);
  cases.push_back(
      Case("StartCampaign label not UTF-8", campaign,
           {"does not parse as blocktune.v1.StartCampaignRequest", "UTF-8"}));

  // TrainModel: layers, width, members, epochs and the size they make.
  cases.push_back(Case("TrainModel 33 layers", Train(std::vector<int>(33, 8)),
                       {"hidden_layers size", "[1, 32]"}));
  cases.push_back(Case("TrainModel width", Train({64, 4097}),
                       {"hidden_layers[1]", "[1, 4096]"}));
  cases.push_back(
      Case("TrainModel members", Train({64}, 17), {"members", "[0, 16]"}));
  auto train = Train({64});
  train.set_epochs(100001);
  cases.push_back(Case("TrainModel epochs", train, {"epochs", "[0, 100000]"}));
  train = Train({64});
  train.set_feature_set(5);
  cases.push_back(
      Case("TrainModel feature_set", train, {"feature_set", "[0, 4]"}));
  train = Train({64});
  train.set_top_weight(-1);
  cases.push_back(
      Case("TrainModel top_weight", train, {"top_weight", "[0, 100]"}));
  cases.push_back(Case("TrainModel parameters",
                       Train({4096, 4096, 4096, 4096}, 16),
                       {"hidden_layers 4096,4096,4096,4096 x members 16",
                        std::to_string(kMaxTrainingParameters)}));
  train = Train({64});
  train.set_device_name(not_utf8);
  cases.push_back(Case("TrainModel device_name not UTF-8", train,
                       {"device_name", "printable ASCII"}));

  // Campaign ids.
  cases.push_back({"CancelCampaign id",
                   [](v1::Blocktune::Stub& s) {
                     v1::CancelCampaignRequest req;
                     req.set_id(-5);
                     v1::CancelCampaignResponse r;
                     return s.CancelCampaign(Ctx().get(), req, &r);
                   },
                   grpc::StatusCode::INVALID_ARGUMENT,
                   {"id", "[1, 9223372036854775807]"}});
  return cases;
}

TEST_F(LimitsTest, EveryOverLimitRequestIsRefusedNamingFieldAndLimit) {
  auto d = Start();
  ASSERT_TRUE(d->ok());
  auto stub = d->NewStub();
  for (const OverLimit& c : OverLimitRequests()) {
    SCOPED_TRACE(c.what);
    grpc::Status s = c.call(*stub);
    EXPECT_EQ(s.error_code(), c.code) << s.error_message();
    for (const std::string& part : c.message_has) {
      EXPECT_NE(s.error_message().find(part), std::string::npos)
          << "'" << part << "' not in: " << s.error_message();
    }
    // Never the whole of a huge field.
    EXPECT_LT(s.error_message().size(), 1000u);
    Health(*d);
  }
  // The largest allowed sizes compute without overflow: M*N*K = 2^60.
  auto q = GemmQuery(1 << 20, 1 << 20, 1 << 20);
  q.set_fallback(true);
  v1::QueryResponse r;
  grpc::Status s = stub->Query(Ctx().get(), q, &r);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(d->Stop(SIGTERM), 0) << d->Log();
}

TEST_F(LimitsTest, RequestsThatDoNotParseAreInvalidArgumentWithAMessage) {
  auto d = Start();
  ASSERT_TRUE(d->ok());
  // Field 1 with wire type 7, which does not exist.
  grpc::Status s = RawCall(*d, "/blocktune.v1.Blocktune/Query", "\x0f\xff\xff");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(
      s.error_message().find("does not parse as blocktune.v1.QueryRequest"),
      std::string::npos)
      << s.error_message();
  s = RawCall(*d, "/blocktune.v1.Blocktune/BatchQuery", "\x0a\xff\xff\xff\xff");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("blocktune.v1.BatchQueryRequest"),
            std::string::npos)
      << s.error_message();
  // Random bytes: refused as a bad request, with a message, whether they
  // fail the parse or parse into a request that fails validation.
  std::mt19937 rng(21);
  for (int i = 0; i < 50; ++i) {
    std::string bytes(1 + rng() % 200, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    for (const char* method : {"/blocktune.v1.Blocktune/Query",
                               "/blocktune.v1.Blocktune/StartCampaign",
                               "/blocktune.v1.Blocktune/GetKernel"}) {
      s = RawCall(*d, method, bytes);
      EXPECT_NE(s.error_code(), grpc::StatusCode::INTERNAL) << method;
      EXPECT_NE(s.error_code(), grpc::StatusCode::OK) << method;
      EXPECT_FALSE(s.error_message().empty()) << method;
    }
  }
  Health(*d);
  EXPECT_EQ(d->Stop(SIGTERM), 0) << d->Log();
}

// ---------------------------------------------------- model validation --

// Every bias of every network of a stored model set to NaN.
std::string NanBiases(const std::string& weights) {
  models::Weights w;
  EXPECT_TRUE(w.ParseFromString(weights));
  auto poison = [](models::Weights* net) {
    for (models::Layer& layer : *net->mutable_layers()) {
      for (float& b : *layer.mutable_bias()) b = std::nanf("");
    }
  };
  poison(&w);
  for (models::Weights& member : *w.mutable_members()) poison(&member);
  return w.SerializeAsString();
}

TEST_F(LimitsTest, ImportRefusesModelsThatCannotAnswerQueries) {
  auto d = Start();
  ASSERT_TRUE(d->ok());
  const v1::Dataset shipped = Shipped();
  ASSERT_GE(shipped.models_size(), 2);
  ASSERT_EQ(shipped.models(0).op(), v1::OP_GEMM);

  struct Bad {
    std::string what;
    std::function<void(v1::Model*)> spoil;
    std::vector<std::string> message_has;
  };
  const std::vector<Bad> bad = {
      {"NaN biases",
       [](v1::Model* m) { m->set_weights(NanBiases(m->weights())); },
       {"dataset.models[1]", "bias", "not a finite number"}},
      {"weights that do not parse",
       [](v1::Model* m) { m->set_weights("\xff not a model"); },
       {"dataset.models[1]", "weights do not parse"}},
      {"implausible predictions",
       [](v1::Model* m) {
         // e^30 times faster, in every network (an ensemble's members
         // carry their own normalization).
         models::Weights w;
         ASSERT_TRUE(w.ParseFromString(m->weights()));
         for (models::Normalization& n : *w.mutable_member_normalizations()) {
           n.set_target_mean(n.target_mean() + 30);
         }
         m->set_weights(w.SerializeAsString());
         models::Normalization n;
         ASSERT_TRUE(n.ParseFromString(m->normalization()));
         n.set_target_mean(n.target_mean() + 30);
         m->set_normalization(n.SerializeAsString());
       },
       {"dataset.models[1]", "flop/s", "usable model"}},
      {"no profile for its compute capability",
       [](v1::Model* m) { m->mutable_device()->set_cc_major(42); },
       {"dataset.models[1]", "no device profile for compute capability 42"}},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.what);
    v1::Dataset data = shipped;
    // The bad model second, so that the good first one shows the whole
    // import is refused.
    *data.mutable_models(1) = data.models(0);
    b.spoil(data.mutable_models(1));
    grpc::Status s = Import(*d, data);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    for (const std::string& part : b.message_has) {
      EXPECT_NE(s.error_message().find(part), std::string::npos)
          << "'" << part << "' not in: " << s.error_message();
    }
    EXPECT_EQ(Health(*d).models(), 0);
  }
  // The shipped models themselves pass.
  grpc::Status s = Import(*d, shipped);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Health(*d).models(), 2);
  // A stale model (an older generator version: gemm.ffma v1 had no ST, so
  // its features are not today's) is stored as the record it is, without
  // loading: it never answers, so it cannot take over queries.
  v1::Dataset stale;
  stale.set_format(shipped.format());
  *stale.add_models() = shipped.models(0);
  stale.mutable_models(0)->set_generator_version(1);
  stale.mutable_models(0)->set_data_version(1);
  stale.mutable_models(0)->set_weights("\xff an older network");
  s = Import(*d, stale);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Health(*d).models(), 2);
  EXPECT_EQ(d->Stop(SIGTERM), 0) << d->Log();
}

TEST_F(LimitsTest, BadStoredModelIsSkippedAndQueriesUseTheOlderOne) {
  const v1::Dataset shipped = Shipped();
  int64_t good_id = 0;
  {
    auto d = Start();
    ASSERT_TRUE(d->ok());
    ASSERT_TRUE(Import(*d, shipped).ok());
    v1::ExportRequest ex;
    ex.set_include_models(true);
    v1::Dataset exported;
    ASSERT_TRUE(ExportDataset(*d->NewStub(), Ctx().get(), ex, &exported).ok());
    for (const v1::Model& m : exported.models()) {
      if (m.op() == v1::OP_GEMM) good_id = m.id();
    }
    EXPECT_EQ(d->Stop(SIGTERM), 0) << d->Log();
  }
  ASSERT_GT(good_id, 0);
  // As an older blocktuned, which did not validate, would have stored it:
  // newer than the good model, of the same device and op.
  {
    auto store = OpenSqliteStore(db());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto record = FromProto(shipped.models(0), "model");
    ASSERT_TRUE(record.ok()) << record.status().ToString();
    record->weights = NanBiases(record->weights);
    WriteBatch batch;
    batch.models.push_back(*record);
    ASSERT_TRUE((*store)->Commit(batch).ok());
  }
  auto d = Start();
  ASSERT_TRUE(d->ok());
  EXPECT_NE(d->Log().find("not loaded"), std::string::npos) << d->Log();
  EXPECT_EQ(Health(*d).models(), 2);
  for (int i = 0; i < 3; ++i) {
    auto q = GemmQuery(1000 + i, 512, 512);
    v1::QueryResponse r;
    grpc::Status s = d->NewStub()->Query(Ctx().get(), q, &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(r.answers_size(), 1);
    EXPECT_EQ(r.source(), v1::QUERY_SOURCE_PREDICTED);
    EXPECT_EQ(r.answers(0).model_id(), good_id);
    EXPECT_TRUE(std::isfinite(r.answers(0).predicted_seconds()));
  }
  EXPECT_EQ(d->Stop(SIGTERM), 0) << d->Log();
}

// ------------------------------------------------ bounded uncached work --

// `count` GEMM contexts no query has asked before (k encodes the batch).
v1::BatchQueryRequest NewShapes(int batch, int count) {
  v1::BatchQueryRequest req;
  for (int i = 0; i < count; ++i) {
    *req.add_queries() = GemmQuery(256 + 8 * i, 512 + 4 * batch, 777 + batch);
  }
  return req;
}

TEST_F(LimitsTest, UncachedSearchesBeyondTheQueueAreRefused) {
  auto d = Start({"--search-threads", "1", "--search-queue", "1"});
  ASSERT_TRUE(d->ok());
  ASSERT_TRUE(Import(*d, Shipped()).ok());
  constexpr int kCalls = 6;
  std::vector<grpc::Status> results(kCalls);
  std::vector<std::thread> calls;
  for (int c = 0; c < kCalls; ++c) {
    calls.emplace_back([&, c] {
      v1::BatchQueryResponse r;
      // 25 new shapes a call: seconds of search, so the calls overlap.
      results[c] = d->NewStub()->BatchQuery(Ctx().get(), NewShapes(c, 25), &r);
    });
  }
  for (std::thread& t : calls) t.join();
  int refused = 0;
  for (const grpc::Status& s : results) {
    if (s.ok()) continue;
    ++refused;
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(s.error_message().find("--search-queue 1"), std::string::npos)
        << s.error_message();
  }
  EXPECT_GT(refused, 0);
  EXPECT_LT(refused, kCalls);
  Health(*d);
  EXPECT_EQ(d->Stop(SIGTERM), 0) << d->Log();
}

TEST_F(LimitsTest, CachedQueriesKeepTheirLatencyWhileBatchesSearch) {
  auto d = Start({"--search-threads", "1"});
  ASSERT_TRUE(d->ok());
  ASSERT_TRUE(Import(*d, Shipped()).ok());
  const v1::QueryRequest cached = GemmQuery(4096, 4096, 4096);
  auto stub = d->NewStub();
  {
    v1::QueryResponse r;
    ASSERT_TRUE(stub->Query(Ctx().get(), cached, &r).ok());
  }
  auto measure = [&](int n) {
    std::vector<double> ms;
    for (int i = 0; i < n; ++i) {
      v1::QueryResponse r;
      const auto start = std::chrono::steady_clock::now();
      grpc::Status s = stub->Query(Ctx().get(), cached, &r);
      ms.push_back(std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count());
      EXPECT_TRUE(s.ok()) << s.error_message();
      EXPECT_EQ(r.source(), v1::QUERY_SOURCE_CACHED);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::sort(ms.begin(), ms.end());
    return std::make_pair(ms[ms.size() / 2], ms[ms.size() * 99 / 100]);
  };
  const auto [idle_p50, idle_p99] = measure(200);

  std::vector<std::thread> batches;
  std::vector<grpc::Status> results(4);
  for (int c = 0; c < 4; ++c) {
    batches.emplace_back([&, c] {
      v1::BatchQueryResponse r;
      results[c] =
          d->NewStub()->BatchQuery(Ctx(300).get(), NewShapes(c, 15), &r);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto [busy_p50, busy_p99] = measure(300);
  for (std::thread& t : batches) t.join();
  for (const grpc::Status& s : results)
    EXPECT_TRUE(s.ok()) << s.error_message();
  std::printf(
      "cached query latency: idle p50 %.2f ms p99 %.2f ms; while 4 "
      "batches search: p50 %.2f ms p99 %.2f ms\n",
      idle_p50, idle_p99, busy_p50, busy_p99);
  // The median, as the tail is noise on a shared machine: a cached query
  // does not wait for a search (one takes tens of milliseconds or more).
  EXPECT_LT(busy_p50, 5.0);
  EXPECT_EQ(d->Stop(SIGTERM), 0) << d->Log();
}

}  // namespace
}  // namespace blocktune
