// The surrogate f(x_B, x_C) of thesis §4.3: a ReLU MLP over the log
// features of models/features.h, predicting ln(flop/s). libtorch stays in
// the .cc files: this header is all the daemon and tools see.
//
// Thread-safety: Predict may be called from many threads at once on one
// Surrogate; nothing else may run concurrently with it.
#ifndef BLOCKTUNE_MODELS_SURROGATE_H_
#define BLOCKTUNE_MODELS_SURROGATE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/block_shape.h"
#include "kernels/context.h"
#include "kernels/status.h"
#include "tuner/sampler.h"

namespace blocktune {

namespace models {
class Normalization;
class Weights;
}

// The thesis's best architecture (Table 4.1).
inline const std::vector<int> kDefaultHidden = {64, 128, 192, 256, 192, 128, 64};
inline constexpr int kMaxHiddenLayers = 32;
inline constexpr int kMaxLayerWidth = 4096;
// The most SMs a device may have for feature wave_fill (an H100 has 132).
inline constexpr int kMaxWaveSms = 4096;

// Training time and memory grow with the parameters trained (about four
// floats each: weights, gradients, Adam's two moments): one training may
// have at most 2^26 in all its members together, ~1 GiB of training state.
inline constexpr int64_t kMaxTrainingParameters = int64_t{1} << 26;

// Weights and biases of one network for `family` with `hidden` layers.
int64_t ParameterCount(const KernelFamily& family,
                       const std::vector<int>& hidden);
// OK when `members` networks of `hidden` layers stay within
// kMaxTrainingParameters; else INVALID_ARGUMENT naming hidden_layers and
// members.
Status CheckTrainingSize(const KernelFamily& family,
                         const std::vector<int>& hidden, int members);

// "64,128,64" <-> {64, 128, 64}. Parsing names `field` and the ranges.
std::string ArchitectureString(const std::vector<int>& hidden);
StatusOr<std::vector<int>> ParseArchitecture(std::string_view text,
                                             std::string_view field);

// The libtorch this build links, "1.13.1"; "+cuda" when it has CUDA.
std::string LibtorchVersion();
// Whether libtorch can use a GPU here.
bool LibtorchHasCuda();

// CPU scoring: Predict splits its rows over this many threads (0: one per
// core, at most 8), and an OpenBLAS found in the process is told to use one
// thread per call. Call once at start, before any Predict.
void ConfigureCpuInference(int threads);
int ScoringThreads();

// The parameter values a model was trained on: one ascending list per
// parameter of its family, in the family's params() order (for a
// block-shape family ml nl ms ns u kg).
using SearchValues = std::vector<std::vector<int64_t>>;

class Surrogate {
 public:
  struct Impl;

  // The mean, in ln(flop/s), of independently trained members (at least
  // two, of one family, precision and architecture): averaging cancels
  // much of each member's error between near-equal configurations.
  static StatusOr<Surrogate> Ensemble(std::vector<Surrogate> members);

  // An untrained network for the configurations of `family` in contexts of
  // `precision` (one the family implements), with deterministic initial
  // weights, taking the features of `feature_set` (kLogFeatures ..
  // kNewestFeatureSet); from kWaveFeatures `wave_sms` is the SM count of
  // the device it learns (1 to kMaxWaveSms).
  static StatusOr<Surrogate> Create(const KernelFamily& family,
                                    DType precision,
                                    const std::vector<int>& hidden,
                                    uint64_t seed,
                                    int feature_set = kLogFeatures,
                                    int wave_sms = 0);
  // From the stored blobs (ModelRecord weights and normalization), which
  // must be of `family` and `precision` (a model older than families is of
  // the op's block-shape family in fp32).
  static StatusOr<Surrogate> Load(const KernelFamily& family, DType precision,
                                  const std::string& architecture,
                                  const std::string& weights,
                                  const std::string& normalization);
  // The fp32 block-shape family of `op` (gemm.ffma, conv.ffma).
  static StatusOr<Surrogate> Create(Op op, const std::vector<int>& hidden,
                                    uint64_t seed) {
    return Create(BlockShapeFamily(op), DType::kFp32, hidden, seed);
  }
  static StatusOr<Surrogate> Load(Op op, const std::string& architecture,
                                  const std::string& weights,
                                  const std::string& normalization) {
    return Load(BlockShapeFamily(op), DType::kFp32, architecture, weights,
                normalization);
  }

  Op op() const;
  // The family whose configurations it scores, and the precision of the
  // contexts it was trained on.
  const KernelFamily& family() const;
  DType precision() const;
  const std::vector<int>& hidden() const;
  // The feature set its input is (KernelFamily::FeatureNames), and that
  // input for one configuration appended to *out.
  int feature_set() const;
  // The SMs feature wave_fill counts (kWaveFeatures); 0 below that set.
  int wave_sms() const;
  void Features(const Problem& problem, const Params& params,
                std::vector<float>* out) const {
    family().Features(problem, params, out, feature_set(), wave_sms());
  }
  int64_t parameters() const;
  // 1 for a single network.
  int members() const { return 1 + static_cast<int>(extra_.size()); }
  // Member i (0 <= i < members()) as a single network; 0 of a single
  // network is itself.
  Surrogate Member(int i) const {
    return i == 0 ? Surrogate(impl_) : extra_.at(static_cast<size_t>(i - 1));
  }
  std::string SerializeWeights() const;
  std::string SerializeNormalization() const;
  const SearchValues& search_values() const;
  // Where `ctx` lies outside the contexts it learned: the size feature
  // (log2_*) farthest from its training mean, when more than `limit`
  // standard deviations ("log2_k = 29.9 is 6.8 standard deviations above
  // its training data's mean (11.1)"); "" when none is. A log-uniform
  // sample spans at most sqrt(3) = 1.73 of them; at 3, the ResNet stem's
  // C = 3 was flagged for conv.mma (3.1), so 4.
  std::string Extrapolation(const Context& ctx, double limit = 4.0) const;

  // Predicted ln(flop/s) for `n` rows of raw features (Features),
  // row-major.
  void Predict(const float* features, int64_t n, float* out) const;
  // Predict's mean and the members' standard deviation around it (0 for a
  // single network), in ln(flop/s).
  void PredictSpread(const float* features, int64_t n, float* mean,
                     float* spread) const;
  // Predicted seconds for one configuration of family() (both must have
  // validated).
  double PredictSeconds(const Context& ctx, const Params& params) const;
  double PredictSeconds(const Context& ctx, const BlockShape& xb) const {
    return PredictSeconds(ctx, ToParams(xb));
  }

  // Moves inference (and training) to the GPU when libtorch has one.
  // Returns whether it is there.
  bool UseCuda(bool on);
  bool on_cuda() const;

  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }

 private:
  explicit Surrogate(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  static void PredictMember(Impl& impl, const float* features, int64_t n,
                            float* out);
  // One network from its parsed stored forms (Load parses them once).
  static StatusOr<Surrogate> LoadNetwork(const KernelFamily& family,
                                         DType precision,
                                         const std::string& architecture,
                                         const std::vector<int>& hidden,
                                         const models::Weights& weights,
                                         const models::Normalization& norm);
  std::shared_ptr<Impl> impl_;  // the first (or only) member
  std::vector<Surrogate> extra_;  // the other members of an ensemble
};

}  // namespace blocktune

#endif  // BLOCKTUNE_MODELS_SURROGATE_H_
