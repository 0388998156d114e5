// blocktune client library: ask a blocktuned daemon for the best kernel
// configuration of a GEMM or convolution in a precision (fp32, tf32, bf16,
// fp16) -- a kernel family, its generator version and its parameters by
// name; for the fp32 block-shape families also the block shape x_B -- and
// for the PTX kernel that runs it.
//
//   #include <blocktune/client.h>
//
//   blocktune::Client client("127.0.0.1:50051");
//   blocktune::Result<blocktune::Answer> a =
//       client.Query(blocktune::GemmProblem{4096, 16, 4096});
//   if (a.ok()) use(a->block, a->match);    // never fails for lack of data
//   else report(a.error().message);          // unreachable, bad input, ...
//
//   blocktune::GemmProblem bf16{4096, 16, 4096};
//   bf16.dtype = blocktune::DType::kBf16;
//   auto k = client.GetKernel(bf16);          // e.g. a gemm.mma kernel
//   k->kernel_config.ToString();              // "gemm.mma v3 bm=128 ..."
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

// The precision of a problem. kFp32: fp32 in and out, FFMA math. kTf32:
// fp32 in and out, tensor-core math on inputs rounded to tf32 (cuBLAS's
// TF32 mode). kBf16, kFp16: that type in and out, fp32 accumulation, alpha
// and beta in fp32. A problem that names none is fp32.
enum class DType { kFp32, kTf32, kBf16, kFp16 };
// "fp32", "tf32", "bf16", "fp16".
BLOCKTUNE_CLIENT_API const char* ToString(DType dtype);
// Case-insensitive; nullopt for anything else.
BLOCKTUNE_CLIENT_API std::optional<DType> DTypeFromString(const std::string& text);

// C = op(A) * op(B), A M x K, B K x N, row-major, in `dtype`. A transposed
// operand is stored as its transpose (A as K x M, B as N x K).
struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  bool a_transposed = false;
  bool b_transposed = false;
  DType dtype = DType::kFp32;
};

// A 2-D convolution in `dtype`, NHWC activations, KRSC filters, NPQK output.
struct ConvProblem {
  int64_t n = 1, h = 0, w = 0, c = 0, k = 0, r = 3, s = 3;
  int64_t pad_h = 0, pad_w = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  DType dtype = DType::kFp32;
};

// x_B of thesis §4.1: an M_L x N_L block of C per program, M_S x N_S per
// thread, U the reduction step staged in shared memory, K_G programs
// splitting one reduction.
struct BlockConfig {
  int64_t ml = 0, nl = 0, ms = 0, ns = 0, u = 0, kg = 1;
  int64_t st = 1;  // shared-memory stages (cp.async where > 1)
  // "ML=64 NL=64 MS=4 NS=4 U=8 KG=1" (" ST=3" follows where ST != 1)
  BLOCKTUNE_CLIENT_API std::string ToString() const;
  friend bool operator==(const BlockConfig& a, const BlockConfig& b) {
    return a.ml == b.ml && a.nl == b.nl && a.ms == b.ms && a.ns == b.ns &&
           a.u == b.u && a.kg == b.kg && a.st == b.st;
  }
};

// One parameter of a kernel configuration, by its family's name for it
// (`blocktune families` lists them).
struct ConfigParam {
  std::string name;  // "ML", "bm", "stages", ...
  int64_t value = 0;
};

// Which kernel: a family ("gemm.ffma", "conv.ffma", "gemm.mma"), the
// version of its generator, and its parameters in the family's order.
// Families differ in their parameters: read them by name.
struct KernelConfig {
  std::string family;
  int generator_version = 0;  // 0 in a request: the family's current one
  std::vector<ConfigParam> params;
  // The value of parameter `name` (case-insensitive); nullopt if the
  // family has none of that name.
  BLOCKTUNE_CLIENT_API std::optional<int64_t> Get(const std::string& name) const;
  // "gemm.mma v3 bm=128 bn=128 ..."
  BLOCKTUNE_CLIENT_API std::string ToString() const;
};

// How well an answer matches the problem asked, best first.
enum class MatchQuality {
  kCached,     // stored for exactly this problem (measured, or predicted earlier)
  kVerified,   // the model's top k, re-benchmarked on the GPU just now
  kPredicted,  // the model's argmax for this problem, just now
  kNearest,    // stored for the nearest problem blocktune has an answer for
  kDefault,    // nothing stored or trained: a safe, untuned default
  kStale,      // only data of an older generator version exists for this
               // problem (never used): an untuned default of the current
               // generator; Provenance::note names the stale version
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
  // The kernel: family, generator version, parameters. Always set.
  KernelConfig kernel_config;
  // The same configuration as a block shape, for the block-shape families
  // (gemm.ffma, conv.ffma); all zero for other families.
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

// A TMA tensor map parameter (gemm.wgmma's A, B and C; conv.wgmma's input,
// filter and output): the application encodes it for the operand's device
// address and passes the 128-byte CUtensorMap by value as
// params[param_index]. mode "tiled": cuTensorMapEncodeTiled(rank
// dims.size(), dims, strides, box, element_strides, ...); mode "im2col":
// cuTensorMapEncodeIm2col(rank dims.size(), dims, strides, lower_corner,
// upper_corner, channels_per_pixel, pixels_per_column, element_strides,
// ...); both with CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
// CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE.
struct TensorMap {
  int param_index = -1;  // into Kernel::params (type "b8[128]")
  char operand = 'A';    // 'A', 'B', 'C' or 'W' (the workspace)
  int64_t offset = 0;    // 'W': bytes from the workspace's address
  int data_type = 0;     // CUtensorMapDataType: 6 fp16, 7 fp32, 9 bf16
  std::string mode = "tiled";
  std::vector<uint64_t> dims;     // elements, innermost (contiguous) first
  std::vector<uint64_t> strides;  // bytes between indices of dims 1..
  uint64_t row_stride_bytes = 0;  // strides[0]
  std::vector<uint32_t> box;      // tiled
  std::vector<int32_t> lower_corner, upper_corner;  // im2col
  uint32_t channels_per_pixel = 0, pixels_per_column = 0;  // im2col
  std::vector<uint32_t> element_strides;
};

// The kernel for one problem, ready to launch: cuModuleLoadData(ptx), then
// `entry` with `grid`, `block`, `dynamic_shared_bytes` of dynamic shared
// memory (above 48 KiB only after cuFuncSetAttribute(...,
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, ...)) and `params`; when
// `reduce_entry` is set, then it on the same stream; when `pack_entry` is
// set (gemm.mma_pk, gemm.wgmma_pk), it first, on the same stream, with
// `params` too; a tensor map of operand 'W' covers the workspace. A
// workspace of
// `workspace_bytes` goes in the "W" parameter; where counter_offset >= 0,
// the workspace bytes from that offset on must be zero before the first
// launch (every launch leaves them zero). Operands are in `dtype` (tf32:
// fp32 storage); the leading dimensions of A and B must be multiples of
// align_a and align_b elements and A's and B's addresses multiples of
// align_bytes; where align_c > 1 (gemm.wgmma, which stores C by TMA) C's
// leading dimension must be a multiple of it and its address of
// align_bytes too. Which parameters `params` holds depends on the family: fill
// them by name; a "b8[128]" parameter is one of `tensor_maps`.
struct Kernel {
  std::string ptx;
  std::string arch;  // "sm_90"
  std::string entry;
  std::array<unsigned, 3> grid{};
  std::array<unsigned, 3> block{};
  // Programs per thread-block cluster along x (fixed in the PTX); grid[0]
  // is a multiple of it.
  unsigned cluster = 1;
  // gemm.wgmma_ps, conv.wgmma_ps: the programs walk the work units
  // grid-stride, and the kernel was measured with P = min(grid[0], SM count
  // x cuOccupancyMaxActiveBlocksPerMultiprocessor(entry, block,
  // dynamic_shared_bytes)) programs, rounded down to a multiple of
  // `cluster`. Launch P for its measured speed; any grid from `cluster` to
  // grid[0] computes the same result.
  bool persistent = false;
  int64_t shared_bytes = 0;  // static, declared in the PTX
  std::vector<KernelParam> params;
  std::string pack_entry;  // empty but for gemm.mma_pk and gemm.wgmma_pk
  std::array<unsigned, 3> pack_grid{};
  std::array<unsigned, 3> pack_block{};
  std::string reduce_entry;  // empty when K_G == 1
  std::array<unsigned, 3> reduce_grid{};
  std::array<unsigned, 3> reduce_block{};
  // The reduce entry waits for `entry` in griddepcontrol.wait: launch it
  // as a programmatic dependent launch for its measured speed (an ordinary
  // launch gives the same result).
  bool reduce_dependent = false;
  std::vector<KernelParam> reduce_params;
  int64_t workspace_bytes = 0;
  int64_t dynamic_shared_bytes = 0;
  int64_t counter_offset = -1;  // -1: no counters in the workspace
  int64_t align_a = 1, align_b = 1, align_c = 1, align_bytes = 4;
  DType dtype = DType::kFp32;
  std::vector<TensorMap> tensor_maps;  // empty: plain operand addresses
  // Block-shape families only (the ffma kernels' 16-byte vector loads; 1
  // otherwise): 4 means align_bytes 16 and a leading dimension that is a
  // multiple of 4 for that operand.
  int vector_a = 1, vector_b = 1;
  KernelConfig kernel_config;  // always set
  BlockConfig config;          // block-shape families only; else all zero
  // How the configuration was chosen; absent when the caller named it.
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
  // Only this family ("gemm.mma"); empty: every family that implements the
  // problem's precision, the fastest prediction winning.
  std::string family;
};

// Which kernel GetKernel returns.
struct KernelOptions {
  // A configuration of any family (checked against the device's limits);
  // unset: the answer Query would give.
  std::optional<KernelConfig> config;
  // Without `config`: the best answer of this family only; with it, empty
  // or config->family.
  std::string family;
  std::string arch;  // PTX target ("sm_90"); empty: the device's own
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

  // The best kernel configuration for one problem, in its precision.
  Result<Answer> Query(const GemmProblem& problem,
                       const QueryOptions& options = {}) const;
  Result<Answer> Query(const ConvProblem& problem,
                       const QueryOptions& options = {}) const;

  // One answer per problem, in order, in one call (at most 10,000).
  Result<std::vector<Answer>> BatchQuery(const std::vector<GemmProblem>& problems,
                                         const QueryOptions& options = {}) const;
  Result<std::vector<Answer>> BatchQuery(const std::vector<ConvProblem>& problems,
                                         const QueryOptions& options = {}) const;

  // The kernel for `problem`: with `config`, that block shape of the op's
  // fp32 block-shape family (checked against the device's limits; fp32
  // problems only); without, the answer Query would give, of any family.
  // `arch` ("sm_90"): the PTX target; empty: the device's own.
  Result<Kernel> GetKernel(const GemmProblem& problem,
                           const std::optional<BlockConfig>& config = {},
                           const std::string& arch = "") const;
  Result<Kernel> GetKernel(const ConvProblem& problem,
                           const std::optional<BlockConfig>& config = {},
                           const std::string& arch = "") const;
  // The same for any family: a configuration of it, or the best answer of
  // one family, or of all.
  Result<Kernel> GetKernel(const GemmProblem& problem,
                           const KernelOptions& options) const;
  Result<Kernel> GetKernel(const ConvProblem& problem,
                           const KernelOptions& options) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_CLIENT_H_
