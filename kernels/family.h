// Kernel families (DESIGN.md, "Kernel families and precision"): named,
// versioned kernel templates behind one interface, so that everything
// above kernels/ (sampling, campaigns, the worker, the benchmarks, the CLI)
// takes a family from the registry and never names its parameters.
//
// A family declares
//   - its name ("gemm.ffma") and generator version, bumped whenever the
//     PTX it emits can change (family_golden_test fails until it is);
//   - its op and the precisions it implements;
//   - its parameter space: named integer parameters, each with a domain;
//   - its hardware rules, each named: the ones CanImplement applies and
//     the sampler counts rejections by;
//   - the quantities generic code needs of a configuration (the program's
//     output tile, reduction step and split, threads, programs, workspace);
//   - its generator: (problem, parameters, arch) -> PTX and launch geometry.
//
// Adding a family is a folder (or a pair of files) under kernels/ and one
// line in family.cc's registry.
#ifndef BLOCKTUNE_KERNELS_FAMILY_H_
#define BLOCKTUNE_KERNELS_FAMILY_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/context.h"
#include "kernels/limits.h"
#include "kernels/status.h"
#include "kernels/tensor_map.h"

namespace blocktune {

inline constexpr int kMaxFamilyParams = 16;

// One named integer parameter and the values it may take.
struct ParamSpec {
  std::string name;             // "bm"; parsing is case-insensitive
  std::vector<int64_t> values;  // ascending
  std::string meaning;          // one line, for `blocktune families`
  // Whether the sampling rule power_of_two applies to it.
  bool power_of_two = true;
  // Its surrogate feature: log2 of the value (values >= 1), or the value
  // itself (a switch such as 0/1).
  bool log_feature = true;
  // A parameter added in a later generator version: a record that omits it
  // (one made before it existed, or an older client's) means this value,
  // which is what the older generator did. Unset: every record names it.
  std::optional<int64_t> absent_means;
  // A refinement (needs absent_means): the model search (models/search.h)
  // ranks the configurations with this parameter at absent_means first and
  // scores its other values only for the best of them. For a parameter
  // that tunes a configuration rather than defines it (ffma's ST: how deep
  // the copies run ahead), so that it multiplies the search's cost by a
  // shortlist's, not by its value count.
  bool refines = false;

  // The name in lower case ("ml"): its feature's name, and how stored
  // models and exported headers name it.
  std::string LowerName() const;
};

// Parameter values of one configuration, in the order of the family's
// ParamSpecs. A fixed array so that rules run without allocating.
struct Params {
  std::array<int64_t, kMaxFamilyParams> v{};
  int size = 0;

  int64_t operator[](int i) const { return v[i]; }
  int64_t& operator[](int i) { return v[i]; }
  friend bool operator==(const Params& a, const Params& b) {
    if (a.size != b.size) return false;
    for (int i = 0; i < a.size; ++i)
      if (a.v[i] != b.v[i]) return false;
    return true;
  }
  friend bool operator<(const Params& a, const Params& b) {
    if (a.size != b.size) return a.size < b.size;
    for (int i = 0; i < a.size; ++i)
      if (a.v[i] != b.v[i]) return a.v[i] < b.v[i];
    return false;
  }
};

// What a kernel computes: the context (its dtype is the precision) and,
// for a GEMM, the leading dimensions (0: tight, as the layout implies).
struct Problem {
  Context ctx;
  int64_t lda = 0, ldb = 0, ldc = 0;

  Problem() = default;
  Problem(Context c) : ctx(std::move(c)) {}  // NOLINT: a context is a problem
};
// The leading dimensions with 0 resolved (A N: K, A T: M, B N: N, B T: K,
// C: N); {0, 0, 0} for a convolution.
std::array<int64_t, 3> LeadingDims(const Problem& problem);

// What generic code needs to know of one configuration on one problem.
struct ConfigShape {
  int64_t tile_m = 0;   // output rows per program (M_L)
  int64_t tile_n = 0;   // output columns per program (N_L)
  int64_t step_k = 0;   // reduction elements per step (U)
  int64_t split_k = 1;  // programs per reduction (K_G)
  int64_t threads = 0;  // per program
  int64_t programs = 0; // in the main grid, K_G included
  int64_t workspace_bytes = 0;
};

// One parameter of a generated entry, for callers that build the argument
// array of cuLaunchKernel themselves (GetKernel, exported launch code).
struct KernelParam {
  const char* name;     // "A", "M", "alpha", ...
  const char* type;     // PTX type: "u64" (device address), "u32", "f32"
  int offset;           // bytes from the start of the parameter block
  int size;             // bytes
  const char* meaning;
};

// An entry parameter that is a TMA tensor map (a CUtensorMap of 128 bytes
// passed by value, a __grid_constant__ parameter): the launcher encodes
// `map` for the operand's device address at each launch
// (kernels/tensor_map.h EncodeTensorMap) and passes the encoded bytes.
// The map is one of tensor_map.h's shapes (tiled or im2col, 128-byte
// swizzle, out-of-bounds elements read as zero). For a convolution A is the
// input, B the filter and C the output. Operand 'W' is the workspace,
// `offset` bytes on (gemm.wgmma_pk's packed operands).
struct TensorMapParam {
  int param_index = -1;  // into GeneratedKernel::entry_params (type "b8[128]")
  char operand = 'A';    // 'A', 'B', 'C' or 'W': whose device address the map covers
  TensorMapSpec map;     // mode, element type, extents, strides, box
  int64_t offset = 0;    // bytes from the workspace's address (operand 'W')
};

// A generated kernel: PTX, entries and launch geometry.
struct GeneratedKernel {
  std::string family;
  int version = 0;
  std::string ptx;
  std::string entry;
  // Present when a launch must come before `entry` on the same stream,
  // with entry's own arguments (entry_params) and its own geometry:
  // gemm.mma_pk's and gemm.wgmma_pk's, which copy the operands whose rows
  // are not 16-byte (128-byte) aligned into the workspace.
  std::string pack_entry;
  std::array<unsigned, 3> pack_grid{};
  std::array<unsigned, 3> pack_block{};
  // Present when the partial sums of K_G > 1 are added by a second
  // launch after `entry` on the same stream.
  std::string reduce_entry;
  // The reduce entry begins with griddepcontrol.wait (sm_90): launch it as
  // a programmatic dependent launch (cuda::LaunchDependent), so that it is
  // scheduled while `entry` drains and waits for its results on the GPU.
  // false: an ordinary launch after `entry`.
  bool reduce_dependent = false;
  std::array<unsigned, 3> grid{};
  std::array<unsigned, 3> block{};
  // Programs per thread-block cluster along x, fixed in the PTX
  // (.reqnctapercluster): grid[0] is always a multiple of it.
  unsigned cluster = 1;
  // A persistent grid (gemm.wgmma_ps, conv.wgmma_ps): the main entry's
  // programs walk their work units grid-stride, and the kernel is launched,
  // and measured, with P = min(grid[0], SMs * programs resident per SM)
  // programs (the driver's occupancy for `block` and dynamic_shared_bytes),
  // rounded down to whole clusters. Any grid from `cluster` to grid[0]
  // computes the same result; P is the one the measurements were made with.
  bool persistent = false;
  unsigned dynamic_shared_bytes = 0;  // above 48 KiB needs the opt-in
  std::array<unsigned, 3> reduce_grid{};
  std::array<unsigned, 3> reduce_block{};
  int64_t workspace_bytes = 0;
  // Bytes from the workspace to counters that must be zero before the first
  // launch (every launch leaves them zero); -1 when there are none.
  int64_t counter_offset = -1;
  // The leading dimensions of A and B must be multiples of these (elements),
  // and the operands' addresses multiples of align_bytes. align_c > 1: C's
  // leading dimension a multiple of it and its address of align_bytes too
  // (gemm.wgmma stores C by TMA); 1: C is free.
  int64_t align_a = 1, align_b = 1, align_c = 1, align_bytes = 4;
  std::vector<KernelParam> entry_params;
  std::vector<KernelParam> reduce_params;
  // The main entry's tensor-map parameters; empty for families that read
  // their operands through plain addresses.
  std::vector<TensorMapParam> tensor_maps;
  // The ptxas / JIT target the PTX needs when it is not the architecture
  // Generate was given ("sm_90a": wgmma and setmaxnreg exist only on the
  // arch-specific target, which runs on compute capability 9.0 alone);
  // empty: that architecture.
  std::string target;
};

// The programs a launch asked for `programs` (> 0) runs of a main entry of
// `grid` programs that walk their work units grid-stride, in clusters of
// `cluster`: at most `programs` and `grid`, in whole clusters, at least one
// cluster. A persistent grid (GeneratedKernel::persistent) asks for the
// programs the device holds at once.
inline unsigned ClampedPrograms(unsigned grid, unsigned programs,
                                unsigned cluster) {
  cluster = cluster > 1 ? cluster : 1;
  const unsigned asked = programs < grid ? programs : grid;
  const unsigned whole = asked / cluster * cluster;
  return whole > cluster ? whole : cluster;
}

// What a measurement of `kernel` depends on, as 16 lowercase hex digits
// (FNV-1a, kernels/fnv1a.h): the PTX, the entries, the target and the
// launch (grids, blocks, cluster, shared memory, workspace, tensor maps,
// persistence). The family's name and generator version are left out, so
// two versions that emit the same kernel for a configuration digest alike
// (but most generators also write their version into a PTX comment, which
// is in the digest: RelabelUnchanged tries it at older values):
// a store keeps each sample's digest and, after a generator version bump,
// re-labels the samples whose kernel did not change (server/sample_digest.h)
// instead of measuring them again. Change detection, not security.
std::string KernelDigest(const GeneratedKernel& kernel);

// The target to assemble `kernel` for when it was generated for `arch`.
inline const std::string& TargetOf(const GeneratedKernel& kernel,
                                   const std::string& arch) {
  return kernel.target.empty() ? arch : kernel.target;
}

// The surrogates' feature sets (KernelFamily::FeatureNames). A model keeps
// the set it was trained on; training uses DefaultFeatureSet unless told.
inline constexpr int kLogFeatures = 1;    // parameters and context, log2
inline constexpr int kShapeFeatures = 2;  // and the tiling's (ShapeFeatureNames)
inline constexpr int kAlignFeatures = 3;  // and the rows' alignment (AlignFeatureNames)
inline constexpr int kWaveFeatures = 4;   // and the waves' (WaveFeatureNames)
inline constexpr int kNewestFeatureSet = kWaveFeatures;
// The set that measured best for the op's models on the H100 oracles and
// evaluation (issue 20): GEMM kShapeFeatures (median top-1 of the measured
// set 0.903 -> 0.940 bf16, 0.958 -> 0.962 fp32, within 5% on more
// contexts), then kAlignFeatures (gemm.mma copies an operand whose rows are
// not 16-byte aligned in 8-, 4- or 2-byte pieces, up to 3x slower, which
// log2 M, N, K cannot tell from aligned neighbours); convolution
// kLogFeatures (its tiling features bought a better measured-set median but
// slower whole-range picks on large layers). Then GEMM kWaveFeatures: the
// last wave's fill of the device's SMs and the rows' alignment up to 128
// bytes (TMA reads rows that are 16- but not 128-byte aligned slowly). On
// the H100's bf16 oracle (34 contexts, 2,000 measured configurations each)
// retraining gemm.wgmma alone with them took validation MSE 0.0065 ->
// 0.0041 and the measured set's top 1 within 5% of its best on 62% -> 74%
// of the contexts (median 0.982 -> 0.987, lowest 0.778 -> 0.825).
inline constexpr int DefaultFeatureSet(Op op) {
  return op == Op::kGemm ? kWaveFeatures : kLogFeatures;
}
// A family's: its op's, but conv.wgmma's models take the tiling's features
// too (no split, one program per tile, so waves decide): on its first H100
// campaigns (24,000 bf16 and 16,000 tf32 samples, one network each, the
// same split) validation MSE 0.0165 -> 0.0119 in bf16, 0.0274 -> 0.0116 in
// tf32. gemm.ffma's stay without the alignment: none of the H100's 60,712
// fp32 samples has a row that is not 16-byte aligned (gemm.textproto draws
// none), so the features are constant there and a set-3 model differs by
// training noise alone (on issue 6's fp32 oracle, the same measured set,
// its GEMM rows' median top 1 was 0.929 of the best, set 2's 0.946).
// conv.wgmma_ps (conv.wgmma's kernel as a persistent grid) takes the
// waves' too: on its first H100 campaigns (run21: 12,000 bf16 and 8,000
// tf32 samples, 5-member ensembles, the same split) validation MSE was
// 0.056 (set 1), 0.045 (set 2), 0.018 (set 4) in bf16 and 0.021 (set 2),
// 0.014 (set 4) in tf32. conv.wgmma_sk (conv.wgmma's kernel with the
// reduction split over programs) takes them too: the split exists to fill
// the SMs, which the last wave's fill (tiles x kg over SMs) measures; so
// does conv.wgmma_sc, the same split added inside a cluster.
inline int DefaultFeatureSet(Op op, std::string_view family) {
  if (family == "conv.wgmma_ps" || family == "conv.wgmma_sk" ||
      family == "conv.wgmma_sc")
    return kWaveFeatures;
  if (family == "conv.wgmma" || family == "gemm.ffma") return kShapeFeatures;
  return DefaultFeatureSet(op);
}

class KernelFamily {
 public:
  virtual ~KernelFamily() = default;

  virtual std::string_view name() const = 0;
  virtual int version() const = 0;
  virtual Op op() const = 0;
  virtual const std::vector<DType>& precisions() const = 0;
  virtual const std::vector<ParamSpec>& params() const = 0;
  // Named hardware rules, in the order FirstFailingRule tries them.
  virtual const std::vector<std::string>& rules() const = 0;
  // A short description for `blocktune families`.
  virtual std::string_view summary() const = 0;
  // The lowest compute capability (major * 10 + minor) that runs it.
  virtual int min_compute_capability() const { return 70; }

  bool Implements(DType precision) const;
  // The checks every family's CanImplement and Generate start with: the
  // context is of the family's op and precision and validates, and a
  // GEMM's leading dimensions are at least its stored rows' lengths.
  // INVALID_ARGUMENT naming the field otherwise.
  Status CheckProblem(const Problem& problem) const;

  // Structural validity of `params` on its own (each value in its domain,
  // the tiling consistent): INVALID_ARGUMENT naming "<field>.<name>".
  virtual Status ValidateParams(const Params& params,
                                std::string_view field = "params") const = 0;
  // Whether hardware rule `rule` (an index into rules()) holds. No
  // allocation: samplers call it millions of times a second. `params` must
  // validate and the problem's context must validate.
  virtual bool Passes(int rule, const Problem& problem, const Params& params,
                      const KernelLimits& limits) const = 0;
  // Whether rule `rule` looks at the problem. One that does not holds or
  // fails for a configuration on every problem, so a search may apply it
  // once per configuration instead of once per query.
  virtual bool RuleUsesProblem(int rule) const { return true; }
  // The first failing rule's index, or -1 when all hold.
  int FirstFailingRule(const Problem& problem, const Params& params,
                       const KernelLimits& limits) const;
  // OK if the kernel of `params` computes `problem` on a device with
  // `limits`; FAILED_PRECONDITION naming the rule and the numbers;
  // INVALID_ARGUMENT for a precision the family does not implement or
  // parameters that do not validate.
  virtual Status CanImplement(const Problem& problem, const Params& params,
                              const KernelLimits& limits) const = 0;

  virtual ConfigShape Shape(const Problem& problem,
                            const Params& params) const = 0;
  // Configurations to fall back on when no answer is known, best first.
  virtual std::vector<Params> DefaultCandidates() const = 0;
  // The first of DefaultCandidates that CanImplement accepts for `problem`
  // and that splits K only where each split has a step of work; for
  // callers that give none (`blocktune kernel` without --params, the
  // daemon's fallback). FAILED_PRECONDITION saying why the first failed.
  StatusOr<Params> Default(const Problem& problem,
                           const KernelLimits& limits) const;

  // The PTX for `arch` ("sm_80", "sm_90"). The launch geometry is for the
  // problem's sizes.
  virtual StatusOr<GeneratedKernel> Generate(const Problem& problem,
                                             const Params& params,
                                             const std::string& arch) const = 0;

  // The surrogate's input (thesis §4.3.1) in feature set `set`: one
  // feature per parameter (ParamSpec::log_feature), then the context's
  // (ContextFeatureNames), then from kShapeFeatures the tiling's
  // (ShapeFeatureNames), then in kAlignFeatures the rows' alignment
  // (AlignFeatureNames). A stored model lists the names it was trained on,
  // which says its set.
  std::vector<std::string> FeatureNames(int set = kLogFeatures) const;
  // The set whose FeatureNames are `names` (a stored model's), or
  // kNewestFeatureSet when none is, for the caller to name the mismatch.
  int FeatureSetNamed(const std::vector<std::string>& names) const;
  // Appends the features of (problem, params) in `set` to *out; both must
  // validate: ParamFeatures, AppendContextFeatures, then (kShapeFeatures)
  // AppendShapeFeatures of Shape(problem, params), then (kAlignFeatures)
  // AppendAlignFeatures, then (kWaveFeatures) AppendWaveFeatures with
  // `wave_sms`, the SMs of the device the model learns (at least 1 there).
  void Features(const Problem& problem, const Params& params,
                std::vector<float>* out, int set = kLogFeatures,
                int wave_sms = 0) const;
  // The parameters' part of Features, one per parameter; a search computes
  // it once per configuration and the context's once per query.
  void ParamFeatures(const Params& params, std::vector<float>* out) const;

  // "bm=128 bn=128 ..." in params() order.
  std::string Format(const Params& params) const;
  // Parses Format's form (keys case-insensitive, in any order); keys not
  // given take `base`'s values (the family's default when null), and the
  // result validates. Errors name the key and list the family's names.
  StatusOr<Params> Parse(std::string_view text,
                         const Params* base = nullptr) const;
  int ParamIndex(std::string_view name) const;  // -1 if absent
};

// Bytes a benchmark of a configuration touches: A, B and C in the
// context's storage type, and the workspace.
int64_t WorkingSetBytes(const Problem& problem, const ConfigShape& shape);
// Whether every program of a split reduction has a step of work:
// split_k == 1 or split_k * step_k <= K (the sampling rule split_has_work,
// and what query-time search and fallbacks require).
bool SplitHasWork(const Problem& problem, const ConfigShape& shape);

// The tiling's features (feature set kShapeFeatures), from the implicit
// GEMM's M, N, K and the configuration's tile_m, tile_n, step_k and
// split_k (what a log-feature MLP finds hard: ceilings and products):
//   log2_tiles   log2(ceil(M / tile_m) * ceil(N / tile_n) * split_k), the
//                programs' work tiles, against the device's SMs (waves);
//   fill_m       M / (ceil(M / tile_m) * tile_m), the used share of the
//   fill_n       edge tiles' rows and columns (0, 1];
//   fill_k       K / (split_k * steps * step_k), of the reduction steps;
//   log2_k_steps log2(steps), steps = ceil(ceil(K / split_k) / step_k),
//                each program's reduction loop.
// Bounded or log-scaled like the rest, so normalization keeps them in range.
const std::vector<std::string>& ShapeFeatureNames();
void AppendShapeFeatures(const GemmShape& gemm, int64_t tile_m, int64_t tile_n,
                         int64_t step_k, int64_t split_k,
                         std::vector<float>* out);

// The waves' features (feature set kWaveFeatures), which a log-feature MLP
// cannot derive from log2_tiles (a sawtooth) or from log2_align (which
// stops at 16 bytes):
//   wave_fill        WaveFill: programs / (waves * sms), programs =
//                    ceil(M / tile_m) * ceil(N / tile_n) * split_k and
//                    waves = ceil(programs / sms), the share of the last
//                    wave's SMs that work (one program per SM; a device's
//                    SMs, `sms`);
//   log2_align128_*  the rows' alignment as in kAlignFeatures, up to 128
//                    bytes (AppendRowAlignFeatures with kWideAlignLog2).
const std::vector<std::string>& WaveFeatureNames(Op op);
void AppendWaveFeatures(const Problem& problem, const ConfigShape& shape,
                        int sms, std::vector<float>* out);
float WaveFill(const GemmShape& gemm, const ConfigShape& shape, int sms);

// The rows' alignment (feature set kAlignFeatures): log2 of the largest
// power of two, at most 16, of bytes that divides each operand's row
// length (its leading dimension, LeadingDims, times the element's bytes),
// so 1 (2-byte rows) to 4 (16-byte aligned rows, what cp.async.cg and TMA
// take):
//   GEMM         log2_align_a, log2_align_b, log2_align_c;
//   convolution  log2_align_c (NHWC input and KRSC filter rows of C),
//                log2_align_k (the NHWC output's rows of K).
const std::vector<std::string>& AlignFeatureNames(Op op);
void AppendAlignFeatures(const Problem& problem, std::vector<float>* out);
// The feature of one row of `elements` of `element_bytes` each.
float AlignFeature(int64_t elements, int element_bytes);

// Both sets' row alignment, up to 2^max_log2 bytes: kAlignLog2 (16,
// feature set 3) or kWideAlignLog2 (128, feature set 4), of one row, and
// of the problem's rows in AlignFeatureNames' order.
inline constexpr int kAlignLog2 = 4;
inline constexpr int kWideAlignLog2 = 7;
float RowAlignFeature(int64_t elements, int element_bytes, int max_log2);
void AppendRowAlignFeatures(const Problem& problem, int max_log2,
                            std::vector<float>* out);

// The context's features: GEMM log2 M, N, K and the two layouts as 0/1;
// convolution log2 of N, P, Q, C, K, R, S, strides and dilations, then
// log2(1 + pad) per axis.
const std::vector<std::string>& ContextFeatureNames(Op op);
void AppendContextFeatures(const Context& ctx, std::vector<float>* out);

// A GeneratedKernel from a family's own kernel struct: the fields every
// generator's struct shares by name (ptx, entry, grid, block, workspace).
template <typename FamilyKernel>
GeneratedKernel ToGenerated(const KernelFamily& family, FamilyKernel&& k) {
  GeneratedKernel out;
  out.family = std::string(family.name());
  out.version = family.version();
  out.ptx = std::move(k.ptx);
  out.entry = std::move(k.entry);
  out.grid = k.grid;
  out.block = k.block;
  out.workspace_bytes = k.workspace_bytes;
  return out;
}

// Every registered family, in registration order.
const std::vector<const KernelFamily*>& Families();
// NOT_FOUND naming the families that exist.
StatusOr<const KernelFamily*> FindFamily(std::string_view name);
// A configuration as plans and result files write it: the family's name,
// then its parameters in Format's words ("gemm.gemv R=1 NC=1 W=4 ...").
// The parameters validate (KernelFamily::Parse); errors name the family or
// the key.
struct FamilyConfig {
  const KernelFamily* family = nullptr;
  Params params;
};
StatusOr<FamilyConfig> ParseFamilyConfig(std::string_view text);
// The families of `op` that implement `precision`.
std::vector<const KernelFamily*> FamiliesFor(Op op, DType precision);
// The family a context goes to when none is named: the first registered
// family of its op that implements its precision.
StatusOr<const KernelFamily*> DefaultFamily(Op op, DType precision);
// The precisions `f` implements, as a message names them: "bf16, fp16, tf32".
std::string PrecisionNames(const KernelFamily& f);

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_FAMILY_H_
