// Training the surrogate (thesis §4.3): Adam on minibatches of normalized
// log features, target ln(flop/s), early stopping on a held-out split, all
// from a fixed seed, on the GPU when libtorch has one and on the CPU
// otherwise.
#ifndef BLOCKTUNE_MODELS_TRAIN_H_
#define BLOCKTUNE_MODELS_TRAIN_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/status.h"
#include "models/surrogate.h"

namespace blocktune {

// One measured sample as training sees it: a configuration of the family
// being trained (for gemm.ffma and conv.ffma, ToParams of the block shape).
struct TrainingRow {
  Context ctx;
  Params params;
  double seconds = 0;  // median time, > 0
};

struct TrainOptions {
  std::vector<int> hidden = kDefaultHidden;
  int epochs = 400;               // at most; early stopping ends sooner
  int patience = 40;              // epochs without a better validation MSE
  int batch_size = 256;
  double learning_rate = 1e-3;    // halved after patience/4 flat epochs
  // About this share of the rows is held out for validation, whole groups
  // of rows with the same inputs (one configuration in one context measured
  // more than once) at a time, so no point is on both sides.
  double validation_fraction = 0.1;
  uint64_t seed = 1;
  bool use_cuda = true;           // when libtorch has CUDA
  // An ensemble of this many networks, member i trained as a single network
  // with seed + i (its own split and initial weights); 1: one network.
  int members = 1;
  // The input features (KernelFamily::FeatureNames): kLogFeatures, or
  // kShapeFeatures, which adds the tiling's (tiles, edge fill, loop length),
  // kAlignFeatures (rows' alignment) or kWaveFeatures (the last wave's fill);
  // 0: DefaultFeatureSet(op, family) (kernels/family.h).
  int feature_set = 0;
  // The SM count of the device the samples were measured on, for feature
  // set kWaveFeatures (wave_fill); 0: unknown, and the default set stops
  // below kWaveFeatures.
  int wave_sms = 0;
  // The loss's weight on the fast end of each context: a row of time t in a
  // context whose fastest row (of all those given) took t_best weighs
  // 1 + top_weight * (t_best / t)^10 (about 1 + 0.39 * top_weight at 10%
  // slower, 1 + 0.07 * top_weight at 30%), in the training loss and in the
  // validation MSE that early stopping watches. The query path answers with
  // a context's fastest predictions, and a plain MSE spends most of the
  // network on the slow configurations that no answer comes from. 0: the
  // plain MSE (models trained before 2026-12-08). In [0, 100].
  double top_weight = 0;
};

// Validates every option, naming the field and its range.
Status Validate(const TrainOptions& options);

struct EpochReport {
  int epoch = 0;     // 1-based
  int epochs = 0;    // the most there will be
  double train_mse = 0;
  double validation_mse = 0;
  double best_validation_mse = 0;
  int member = 0;    // 0-based, of an ensemble
  int members = 1;
};

struct TrainedModel {
  Surrogate surrogate;
  std::string metrics_json;  // models::Metrics as JSON
  double validation_mse = 0;         // of ln(flop/s), best epoch
  double train_mse = 0;              // last epoch
  double spearman_validation = 0;    // all held-out samples
  double spearman_within_context = 0;  // median over contexts
  int epochs_run = 0;
  int best_epoch = 0;
  int64_t training_samples = 0;
  int64_t validation_samples = 0;
};

// Asked whether training must stop: before every mini-batch, between its
// forward pass, backward pass and optimizer step, and around each
// validation pass, so that even a network of 4096-wide layers, whose epoch
// takes minutes on a CPU, stops within about a second of its caller going
// away. A non-OK Status ends the training with that Status. It runs on the
// training thread, about three times per mini-batch, so it must be cheap.
using StopCheck = std::function<Status()>;

// Trains a model of `family` in `precision` on `rows` (contexts of the
// family's op in that precision, parameters of the family; at least 20).
// `on_epoch` is called after
// every epoch; training stops with CANCELLED when it returns false. `stop`
// (when given) ends it sooner, with its own Status. A stopped training
// returns no model at all, never a partly trained one. The weights kept are
// those of the best validation epoch. An ensemble's metrics are its
// members' means; its Spearman figures are member 0's.
StatusOr<TrainedModel> Train(
    const KernelFamily& family, DType precision,
    const std::vector<TrainingRow>& rows, const TrainOptions& options,
    const std::function<bool(const EpochReport&)>& on_epoch = nullptr,
    const StopCheck& stop = nullptr);
// The fp32 block-shape family of `op` (gemm.ffma, conv.ffma).
inline StatusOr<TrainedModel> Train(
    Op op, const std::vector<TrainingRow>& rows, const TrainOptions& options,
    const std::function<bool(const EpochReport&)>& on_epoch = nullptr,
    const StopCheck& stop = nullptr) {
  return Train(BlockShapeFamily(op), DType::kFp32, rows, options, on_epoch,
               stop);
}

// Spearman's rank correlation of two equally long series (ties get their
// mean rank); 0 for fewer than 2 points.
double Spearman(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace blocktune

#endif  // BLOCKTUNE_MODELS_TRAIN_H_
