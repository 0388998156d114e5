// blocktune::Client over the blocktune.v1 gRPC API. Everything protobuf
// stays in this file (pimpl).
#include "blocktune/client.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include "blocktune/v1/blocktune.grpc.pb.h"
#include "client/connection.h"
#include "kernels/validate.h"

namespace blocktune {
namespace {

constexpr int kMaxBatch = 10000;

v1::DType ToProto(DType d) {
  switch (d) {
    case DType::kFp32: return v1::DTYPE_FP32;
    case DType::kTf32: return v1::DTYPE_TF32;
    case DType::kBf16: return v1::DTYPE_BF16;
    case DType::kFp16: return v1::DTYPE_FP16;
  }
  return v1::DTYPE_FP32;
}

// The daemon answers only the four precisions a family implements;
// unspecified (an older daemon) means fp32.
DType FromProto(v1::DType d) {
  switch (d) {
    case v1::DTYPE_TF32: return DType::kTf32;
    case v1::DTYPE_BF16: return DType::kBf16;
    case v1::DTYPE_FP16: return DType::kFp16;
    default: return DType::kFp32;
  }
}

void ToProto(const KernelConfig& k, v1::KernelConfig* out) {
  out->set_family(k.family);
  out->set_generator_version(k.generator_version);
  for (const ConfigParam& p : k.params) {
    v1::ConfigParam* o = out->add_params();
    o->set_name(p.name);
    o->set_value(p.value);
  }
}

KernelConfig FromProto(const v1::KernelConfig& k) {
  KernelConfig out;
  out.family = k.family();
  out.generator_version = k.generator_version();
  for (const v1::ConfigParam& p : k.params()) out.params.push_back({p.name(), p.value()});
  return out;
}

void ToProto(const GemmProblem& p, v1::Context* out) {
  v1::GemmContext* g = out->mutable_gemm();
  g->set_m(p.m);
  g->set_n(p.n);
  g->set_k(p.k);
  g->set_layout_a(p.a_transposed ? v1::LAYOUT_T : v1::LAYOUT_N);
  g->set_layout_b(p.b_transposed ? v1::LAYOUT_T : v1::LAYOUT_N);
  g->set_dtype(ToProto(p.dtype));
}

void ToProto(const ConvProblem& p, v1::Context* out) {
  v1::ConvContext* c = out->mutable_conv();
  c->set_n(p.n);
  c->set_h(p.h);
  c->set_w(p.w);
  c->set_c(p.c);
  c->set_k(p.k);
  c->set_r(p.r);
  c->set_s(p.s);
  c->set_pad_h(p.pad_h);
  c->set_pad_w(p.pad_w);
  c->set_stride_h(p.stride_h);
  c->set_stride_w(p.stride_w);
  c->set_dilation_h(p.dilation_h);
  c->set_dilation_w(p.dilation_w);
  c->set_dtype(ToProto(p.dtype));
}

void ToProto(const BlockConfig& b, v1::BlockShape* out) {
  out->set_ml(b.ml);
  out->set_nl(b.nl);
  out->set_ms(b.ms);
  out->set_ns(b.ns);
  out->set_u(b.u);
  out->set_kg(b.kg);
  if (b.st != 1) out->set_st(b.st);
}

BlockConfig FromProto(const v1::BlockShape& b) {
  return {b.ml(), b.nl(), b.ms(), b.ns(), b.u(), b.kg(), b.st() == 0 ? 1 : b.st()};
}

Error ToError(const grpc::Status& s) {
  ErrorCode code = ErrorCode::kInternal;
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      code = ErrorCode::kInvalidArgument;
      break;
    case grpc::StatusCode::UNAVAILABLE:
      code = ErrorCode::kUnavailable;
      break;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      code = ErrorCode::kUnauthenticated;
      break;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      code = ErrorCode::kDeadlineExceeded;
      break;
    case grpc::StatusCode::FAILED_PRECONDITION:
      code = ErrorCode::kFailedPrecondition;
      break;
    case grpc::StatusCode::NOT_FOUND:
      code = ErrorCode::kNotFound;
      break;
    default:
      break;
  }
  return {code, s.error_message()};
}

Error ToError(const Status& s) {
  grpc::StatusCode code = s.code() == StatusCode::kUnavailable
                              ? grpc::StatusCode::UNAVAILABLE
                              : grpc::StatusCode::FAILED_PRECONDITION;
  return ToError(grpc::Status(code, s.message()));
}

MatchQuality MatchOf(const v1::QueryResponse& r) {
  switch (r.source()) {
    case v1::QUERY_SOURCE_CACHED: return MatchQuality::kCached;
    case v1::QUERY_SOURCE_VERIFIED: return MatchQuality::kVerified;
    case v1::QUERY_SOURCE_PREDICTED: return MatchQuality::kPredicted;
    default:
      return r.match() == v1::MATCH_NEAREST ? MatchQuality::kNearest
             : r.match() == v1::MATCH_STALE ? MatchQuality::kStale
                                            : MatchQuality::kDefault;
  }
}

// The best answer of a response (the daemon sends best first).
Result<Answer> ToAnswer(const v1::QueryResponse& r) {
  if (r.answers().empty()) {
    return Error{ErrorCode::kInternal, "the daemon sent no answer"};
  }
  const v1::TunedAnswer& a = r.answers(0);
  Answer out;
  out.kernel_config = FromProto(a.kernel());
  out.block = FromProto(a.block_shape());
  out.match = MatchOf(r);
  out.predicted_seconds = a.predicted_seconds();
  out.measured_seconds = a.measured_seconds();
  out.tflops = a.tflops();
  out.provenance.device = a.device().name();
  out.provenance.cc_major = a.device().cc_major();
  out.provenance.cc_minor = a.device().cc_minor();
  out.provenance.driver_version = a.device().driver_version();
  out.provenance.ptxas_version = a.device().ptxas_version();
  out.provenance.model_id = a.model_id();
  out.provenance.updated_unix = a.updated_unix();
  out.provenance.note = r.note();
  return out;
}

std::vector<KernelParam> ToParams(
    const google::protobuf::RepeatedPtrField<v1::KernelParam>& params) {
  std::vector<KernelParam> out;
  for (const v1::KernelParam& p : params) {
    out.push_back({p.name(), p.type(), p.offset(), p.size()});
  }
  return out;
}

template <typename Repeated>
std::array<unsigned, 3> Dims(const Repeated& d) {
  std::array<unsigned, 3> out{1, 1, 1};
  for (int i = 0; i < d.size() && i < 3; ++i) out[i] = static_cast<unsigned>(d.Get(i));
  return out;
}

}  // namespace

const char* ToString(DType dtype) {
  switch (dtype) {
    case DType::kFp32: return "fp32";
    case DType::kTf32: return "tf32";
    case DType::kBf16: return "bf16";
    case DType::kFp16: return "fp16";
  }
  return "?";
}

std::optional<DType> DTypeFromString(const std::string& text) {
  for (DType d : {DType::kFp32, DType::kTf32, DType::kBf16, DType::kFp16})
    if (EqualsIgnoreCase(text, ToString(d))) return d;
  return std::nullopt;
}

std::optional<int64_t> KernelConfig::Get(const std::string& name) const {
  for (const ConfigParam& p : params)
    if (EqualsIgnoreCase(p.name, name)) return p.value;
  return std::nullopt;
}

std::string KernelConfig::ToString() const {
  std::string out = family + " v" + std::to_string(generator_version);
  for (const ConfigParam& p : params)
    out += " " + p.name + "=" + std::to_string(p.value);
  return out;
}

std::string BlockConfig::ToString() const {
  return "ML=" + std::to_string(ml) + " NL=" + std::to_string(nl) +
         " MS=" + std::to_string(ms) + " NS=" + std::to_string(ns) +
         " U=" + std::to_string(u) + " KG=" + std::to_string(kg) +
         (st != 1 ? " ST=" + std::to_string(st) : "");
}

const char* ToString(MatchQuality match) {
  switch (match) {
    case MatchQuality::kCached: return "cached";
    case MatchQuality::kVerified: return "verified";
    case MatchQuality::kPredicted: return "predicted";
    case MatchQuality::kNearest: return "nearest";
    case MatchQuality::kDefault: return "default";
    case MatchQuality::kStale: return "stale";
  }
  return "?";
}

const char* ToString(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kUnauthenticated: return "unauthenticated";
    case ErrorCode::kDeadlineExceeded: return "deadline_exceeded";
    case ErrorCode::kFailedPrecondition: return "failed_precondition";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kInternal: return "internal";
  }
  return "?";
}

struct Client::Impl {
  Impl(std::string address, ClientOptions opts) : options(std::move(opts)) {
    ConnectionOptions c;
    c.server = std::move(address);
    c.token_file = options.token_file;
    c.tls_ca = options.tls_ca;
    c.timeout_s = std::max(1, (options.timeout_ms + 999) / 1000);
    connection = std::make_unique<Connection>(c);
  }

  // The stub once the channel is up; retried on the next call after a
  // failure, so a daemon started later is found.
  Result<v1::Blocktune::Stub*> Stub() const {
    std::lock_guard<std::mutex> lock(mu);
    if (!connected) {
      Status s = connection->Connect();
      if (!s.ok()) return ToError(s);
      connected = true;
    }
    return &connection->stub();
  }

  std::unique_ptr<grpc::ClientContext> NewContext() const {
    auto ctx = connection->NewContext();
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(options.timeout_ms));
    return ctx;
  }

  template <typename Problem>
  Result<Answer> Query(const Problem& problem, const QueryOptions& q) const {
    auto stub = Stub();
    if (!stub.ok()) return stub.error();
    v1::QueryRequest req;
    Fill(problem, q, &req);
    v1::QueryResponse resp;
    grpc::Status s = (*stub)->Query(NewContext().get(), req, &resp);
    if (!s.ok()) return ToError(s);
    return ToAnswer(resp);
  }

  template <typename Problem>
  Result<std::vector<Answer>> BatchQuery(const std::vector<Problem>& problems,
                                         const QueryOptions& q) const {
    if (problems.empty()) return std::vector<Answer>();
    if (problems.size() > static_cast<size_t>(kMaxBatch)) {
      return Error{ErrorCode::kInvalidArgument,
                   "problems: at most " + std::to_string(kMaxBatch) +
                       " per call, got " + std::to_string(problems.size())};
    }
    auto stub = Stub();
    if (!stub.ok()) return stub.error();
    v1::BatchQueryRequest req;
    for (const Problem& p : problems) Fill(p, q, req.add_queries());
    v1::BatchQueryResponse resp;
    grpc::Status s = (*stub)->BatchQuery(NewContext().get(), req, &resp);
    if (!s.ok()) return ToError(s);
    std::vector<Answer> out;
    for (int i = 0; i < resp.results_size(); ++i) {
      const v1::BatchQueryResult& r = resp.results(i);
      if (r.code() != 0) {
        Error e = ToError(grpc::Status(static_cast<grpc::StatusCode>(r.code()),
                                       r.message()));
        e.message = "problems[" + std::to_string(i) + "]: " + e.message;
        return e;
      }
      auto answer = ToAnswer(r.response());
      if (!answer.ok()) return answer.error();
      out.push_back(std::move(*answer));
    }
    return out;
  }

  template <typename Problem>
  Result<Kernel> GetKernel(const Problem& problem,
                           const std::optional<BlockConfig>& config,
                           const std::string& arch) const {
    v1::GetKernelRequest req;
    ToProto(problem, req.mutable_context());
    if (config) ToProto(*config, req.mutable_block_shape());
    req.set_arch(arch);
    return GetKernel(std::move(req));
  }

  template <typename Problem>
  Result<Kernel> GetKernel(const Problem& problem, const KernelOptions& o) const {
    v1::GetKernelRequest req;
    ToProto(problem, req.mutable_context());
    if (o.config) ToProto(*o.config, req.mutable_kernel());
    req.set_family(o.family);
    req.set_arch(o.arch);
    return GetKernel(std::move(req));
  }

  Result<Kernel> GetKernel(v1::GetKernelRequest req) const {
    auto stub = Stub();
    if (!stub.ok()) return stub.error();
    req.set_device_name(options.device);
    v1::GetKernelResponse resp;
    grpc::Status s = (*stub)->GetKernel(NewContext().get(), req, &resp);
    if (!s.ok()) return ToError(s);
    Kernel k;
    k.ptx = std::move(*resp.mutable_ptx());
    k.arch = resp.arch();
    k.entry = resp.entry();
    k.grid = Dims(resp.grid());
    k.block = Dims(resp.block());
    k.cluster = static_cast<unsigned>(std::max<int64_t>(resp.cluster(), 1));
    k.persistent = resp.persistent();
    k.shared_bytes = resp.shared_bytes();
    k.params = ToParams(resp.params());
    k.pack_entry = resp.pack_entry();
    if (!k.pack_entry.empty()) {
      k.pack_grid = Dims(resp.pack_grid());
      k.pack_block = Dims(resp.pack_block());
    }
    k.reduce_entry = resp.reduce_entry();
    if (!k.reduce_entry.empty()) {
      k.reduce_grid = Dims(resp.reduce_grid());
      k.reduce_block = Dims(resp.reduce_block());
      k.reduce_dependent = resp.reduce_dependent();
      k.reduce_params = ToParams(resp.reduce_params());
    }
    k.workspace_bytes = resp.workspace_bytes();
    k.dynamic_shared_bytes = resp.dynamic_shared_bytes();
    k.counter_offset = resp.counter_offset();
    k.align_a = std::max<int64_t>(1, resp.align_a());
    k.align_b = std::max<int64_t>(1, resp.align_b());
    k.align_c = std::max<int64_t>(1, resp.align_c());
    k.align_bytes = std::max<int64_t>(1, resp.align_bytes());
    k.dtype = FromProto(resp.dtype());
    k.vector_a = std::max(1, resp.vector_a());
    k.vector_b = std::max(1, resp.vector_b());
    k.kernel_config = FromProto(resp.kernel());
    k.config = FromProto(resp.block_shape());
    for (const v1::TensorMapDesc& t : resp.tensor_maps()) {
      TensorMap m;
      m.param_index = t.param_index();
      m.operand = t.operand().empty() ? '?' : t.operand()[0];
      m.offset = t.offset();
      m.data_type = t.data_type();
      if (!t.mode().empty()) m.mode = t.mode();
      m.dims.assign(t.dims().begin(), t.dims().end());
      m.strides.assign(t.strides().begin(), t.strides().end());
      // A server older than the strides field sent the row stride alone.
      if (m.strides.empty() && t.row_stride_bytes() != 0)
        m.strides.push_back(t.row_stride_bytes());
      m.row_stride_bytes = t.row_stride_bytes();
      m.box.assign(t.box().begin(), t.box().end());
      m.lower_corner.assign(t.lower_corner().begin(), t.lower_corner().end());
      m.upper_corner.assign(t.upper_corner().begin(), t.upper_corner().end());
      m.channels_per_pixel = t.channels_per_pixel();
      m.pixels_per_column = t.pixels_per_column();
      m.element_strides.assign(t.element_strides().begin(),
                               t.element_strides().end());
      if (m.element_strides.empty()) m.element_strides.assign(m.dims.size(), 1);
      k.tensor_maps.push_back(m);
    }
    if (resp.has_query()) {
      auto answer = ToAnswer(resp.query());
      if (answer.ok()) k.answer = std::move(*answer);
    }
    return k;
  }

  template <typename Problem>
  void Fill(const Problem& p, const QueryOptions& q, v1::QueryRequest* req) const {
    ToProto(p, req->mutable_context());
    req->set_device_name(options.device);
    req->set_top(1);
    req->set_verify(q.verify);
    req->set_fallback(true);
    req->set_family(q.family);
  }

  const ClientOptions options;
  std::unique_ptr<Connection> connection;
  mutable std::mutex mu;
  mutable bool connected = false;
};

Client::Client(std::string address, ClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(address), std::move(options))) {}
Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

Result<Answer> Client::Query(const GemmProblem& p, const QueryOptions& q) const {
  return impl_->Query(p, q);
}
Result<Answer> Client::Query(const ConvProblem& p, const QueryOptions& q) const {
  return impl_->Query(p, q);
}
Result<std::vector<Answer>> Client::BatchQuery(
    const std::vector<GemmProblem>& p, const QueryOptions& q) const {
  return impl_->BatchQuery(p, q);
}
Result<std::vector<Answer>> Client::BatchQuery(
    const std::vector<ConvProblem>& p, const QueryOptions& q) const {
  return impl_->BatchQuery(p, q);
}
Result<Kernel> Client::GetKernel(const GemmProblem& p,
                                 const std::optional<BlockConfig>& config,
                                 const std::string& arch) const {
  return impl_->GetKernel(p, config, arch);
}
Result<Kernel> Client::GetKernel(const ConvProblem& p,
                                 const std::optional<BlockConfig>& config,
                                 const std::string& arch) const {
  return impl_->GetKernel(p, config, arch);
}
Result<Kernel> Client::GetKernel(const GemmProblem& p,
                                 const KernelOptions& options) const {
  return impl_->GetKernel(p, options);
}
Result<Kernel> Client::GetKernel(const ConvProblem& p,
                                 const KernelOptions& options) const {
  return impl_->GetKernel(p, options);
}

}  // namespace blocktune
