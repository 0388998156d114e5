// blocktune client library: ask a blocktuned daemon for the best block shape
// x_B of a GEMM or convolution, and for the PTX kernel k(x_B) that runs it.
//
//   #include <blocktune/client.h>
//
//   blocktune::Client client("127.0.0.1:50051");
//   blocktune::Result<blocktune::Answer> a =
//       client.Query(blocktune::GemmProblem{4096, 16, 4096});
//   if (a.ok()) use(a->block, a->match);    // never fails for lack of data
//   else report(a.error().message);          // unreachable, bad input, ...
//
// Lookups never fail for lack of tuning data: with nothing stored or
// trained, the answer is the nearest stored context's block shape or a safe
// default, and Answer::match says which. Errors are returned, never thrown:
// an unreachable daemon, a bad argument (the message names the field and
// its range), or a denied token.
//
// Thread safety: a Client may be used from many threads at once. It owns
// one channel to the daemon, opened on the first call.
//
// Nothing of gRPC or protobuf appears here; link blocktune::client
// (find_package(blocktune)).
#ifndef BLOCKTUNE_CLIENT_H_
#define BLOCKTUNE_CLIENT_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#if defined(_WIN32)
#define BLOCKTUNE_CLIENT_API
#else
#define BLOCKTUNE_CLIENT_API __attribute__((visibility("default")))
#endif

namespace blocktune {

// C = op(A) * op(B), A M x K, B K x N, row-major fp32. A transposed operand
// is stored as its transpose (A as K x M, B as N x K).
struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  bool a_transposed = false;
  bool b_transposed = false;
};

// An fp32 2-D convolution, NHWC activations, KRSC filters, NPQK output.
struct ConvProblem {
  int64_t n = 1, h = 0, w = 0, c = 0, k = 0, r = 3, s = 3;
  int64_t pad_h = 0, pad_w = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
};

// x_B of thesis §4.1: an M_L x N_L block of C per program, M_S x N_S per
// thread, U the reduction step staged in shared memory, K_G programs
// splitting one reduction.
struct BlockConfig {
  int64_t ml = 0, nl = 0, ms = 0, ns = 0, u = 0, kg = 1;
  // "ML=64 NL=64 MS=4 NS=4 U=8 KG=1"
  BLOCKTUNE_CLIENT_API std::string ToString() const;
  friend bool operator==(const BlockConfig& a, const BlockConfig& b) {
    return a.ml == b.ml && a.nl == b.nl && a.ms == b.ms && a.ns == b.ns &&
           a.u == b.u && a.kg == b.kg;
  }
};

// How well an answer matches the problem asked, best first.
enum class MatchQuality {
  kCached,     // stored for exactly this problem (measured, or predicted earlier)
  kVerified,   // the model's top k, re-benchmarked on the GPU just now
  kPredicted,  // the model's argmax for this problem, just now
  kNearest,    // stored for the nearest problem blocktune has an answer for
  kDefault,    // nothing stored or trained: a safe, untuned default
};
BLOCKTUNE_CLIENT_API const char* ToString(MatchQuality match);

// Where an answer comes from.
struct Provenance {
  std::string device;          // GPU name, e.g. "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  std::string driver_version;  // of the box that measured or trained
  std::string ptxas_version;
  int64_t model_id = 0;        // the surrogate behind a prediction; 0: none
  int64_t updated_unix = 0;    // when the answer was stored
  std::string note;            // e.g. which problem a kNearest answer is for
};

struct Answer {
  BlockConfig block;
  MatchQuality match = MatchQuality::kDefault;
  double predicted_seconds = 0;  // 0: not predicted
  double measured_seconds = 0;   // 0: not measured (on this problem)
  double tflops = 0;             // from measured, else predicted, time; 0: neither
  Provenance provenance;
};

// One kernel parameter, as cuLaunchKernel's argument array wants it.
struct KernelParam {
  std::string name;  // "A", "M", "alpha", ...
  std::string type;  // "u64" (a device address), "u32" or "f32"
  int offset = 0;    // bytes into the parameter block
  int size = 0;
};

// k(x_B) for one problem, ready to launch: cuModuleLoadData(ptx), then
// `entry` with `grid`, `block`, no dynamic shared memory and `params`;
// when K_G > 1, then `reduce_entry` on the same stream, with a workspace of
// `workspace_bytes`. Where vector_a or vector_b is 4, that operand's address
// must be 16-byte aligned and its leading dimension a multiple of 4.
struct Kernel {
  std::string ptx;
  std::string arch;  // "sm_90"
  std::string entry;
  std::array<unsigned, 3> grid{};
  std::array<unsigned, 3> block{};
  int64_t shared_bytes = 0;  // static, declared in the PTX
  std::vector<KernelParam> params;
  std::string reduce_entry;  // empty when K_G == 1
  std::array<unsigned, 3> reduce_grid{};
  std::array<unsigned, 3> reduce_block{};
  std::vector<KernelParam> reduce_params;
  int64_t workspace_bytes = 0;
  int vector_a = 1, vector_b = 1;
  BlockConfig config;
  // How `config` was chosen; absent when the caller named it.
  std::optional<Answer> answer;
};

enum class ErrorCode {
  kInvalidArgument,     // a field out of range; the message names it
  kUnavailable,         // the daemon cannot be reached
  kUnauthenticated,     // missing or wrong token
  kDeadlineExceeded,    // the call took longer than ClientOptions::timeout_ms
  kFailedPrecondition,  // e.g. the block shape asked for cannot run there
  kNotFound,            // e.g. a device name the daemon does not know
  kInternal,            // the daemon failed; its log says why
};
BLOCKTUNE_CLIENT_API const char* ToString(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

// A value or an Error. value() on an error (or error() on a value) is a
// programming error and aborts.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}           // NOLINT
  Result(Error error) : v_(std::move(error)) {}       // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

struct ClientOptions {
  std::string token_file;     // send the bearer token in this file
  std::string tls_ca;         // PEM roots; set: connect with TLS
  int timeout_ms = 30000;     // per call (a cold query scores ~50k shapes)
  std::string device;         // GPU name to answer for; empty: any
};

struct QueryOptions {
  bool verify = false;  // re-benchmark the model's top k on the daemon's GPU
};

class BLOCKTUNE_CLIENT_API Client {
 public:
  // `address`: "host:port" or "unix:/path". Connects lazily.
  explicit Client(std::string address, ClientOptions options = {});
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // The best block shape for one problem.
  Result<Answer> Query(const GemmProblem& problem,
                       const QueryOptions& options = {}) const;
  Result<Answer> Query(const ConvProblem& problem,
                       const QueryOptions& options = {}) const;

  // One answer per problem, in order, in one call (at most 10,000).
  Result<std::vector<Answer>> BatchQuery(const std::vector<GemmProblem>& problems,
                                         const QueryOptions& options = {}) const;
  Result<std::vector<Answer>> BatchQuery(const std::vector<ConvProblem>& problems,
                                         const QueryOptions& options = {}) const;

  // The kernel for `problem`: with `config`, that block shape (checked
  // against the device's limits); without, the answer Query would give.
  // `arch` ("sm_90"): the PTX target; empty: the device's own.
  Result<Kernel> GetKernel(const GemmProblem& problem,
                           const std::optional<BlockConfig>& config = {},
                           const std::string& arch = "") const;
  Result<Kernel> GetKernel(const ConvProblem& problem,
                           const std::optional<BlockConfig>& config = {},
                           const std::string& arch = "") const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_CLIENT_H_
