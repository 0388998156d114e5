// The libtorch side of Surrogate, shared by surrogate.cc and train.cc only.
#ifndef BLOCKTUNE_MODELS_SURROGATE_IMPL_H_
#define BLOCKTUNE_MODELS_SURROGATE_IMPL_H_

// The parts of libtorch these two files use, not <torch/torch.h> (which
// takes a minute a file to compile: the whole C++ frontend).
#include <torch/cuda.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/version.h>

#include "models/surrogate.h"

namespace blocktune {

struct Surrogate::Impl {
  const KernelFamily* family = nullptr;  // registered, never null once made
  DType precision = DType::kFp32;
  std::vector<int> hidden;
  int feature_set = kLogFeatures;  // KernelFamily::FeatureNames
  int wave_sms = 0;                // from kWaveFeatures: the device's SMs
  int inputs = 0;
  torch::nn::Sequential net{nullptr};
  std::vector<torch::nn::Linear> linears;  // the same modules, in order
  // Feature normalization and target scale.
  std::vector<float> mean, stddev;
  double target_mean = 0, target_std = 1;
  SearchValues search_values;
  torch::Tensor mean_t, inv_std_t;  // on the net's device
  torch::Device device = torch::kCPU;
  // For inference: each layer's weight transposed to [in, out] contiguous
  // (a plain NN GEMM for BLAS) and its bias. Rebuilt by Freeze() whenever
  // the weights or the device change; empty while training.
  std::vector<torch::Tensor> frozen_w, frozen_b;

  void Freeze();

  void Build(uint64_t seed);
  // Re-derives mean_t / inv_std_t after mean or stddev change.
  void SyncNormalization();
  // Normalized features -> normalized target, no grad.
  torch::Tensor Forward(const torch::Tensor& x) { return net->forward(x); }
};

}  // namespace blocktune

#endif  // BLOCKTUNE_MODELS_SURROGATE_IMPL_H_
