#include "models/surrogate.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cmath>
#include <thread>

#include "kernels/validate.h"
#include "models/features.h"
#include "models/surrogate.pb.h"
#include "models/surrogate_impl.h"

namespace blocktune {
namespace {

constexpr char kWeightsFormat[] = "blocktune.mlp.v1";
constexpr char kEnsembleFormat[] = "blocktune.mlp-ensemble.v1";
constexpr int kMaxMembers = 16;
constexpr char kTarget[] = "ln(flop/s)";

// A stored number that is NaN or infinite makes every prediction NaN (one
// NaN weight reaches every output through the dense layers), so a model
// with one does not load. `what` names the array ("layer 2 bias").
template <typename Values>
Status CheckFinite(const std::string& what, const Values& values) {
  for (int i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values.Get(i))) {
      return InvalidArgument("model " + what + "[" + std::to_string(i) +
                             "] is " + std::to_string(values.Get(i)) +
                             ", not a finite number");
    }
  }
  return OkStatus();
}

}  // namespace

std::string ArchitectureString(const std::vector<int>& hidden) {
  std::string s;
  for (size_t i = 0; i < hidden.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(hidden[i]);
  }
  return s;
}

StatusOr<std::vector<int>> ParseArchitecture(std::string_view text,
                                             std::string_view field) {
  std::vector<int> hidden;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string item_field =
        std::string(field) + "[" + std::to_string(hidden.size()) + "]";
    BT_ASSIGN_OR_RETURN(int64_t width,
                        ParseInt64(item_field, text.substr(start, comma - start)));
    BT_RETURN_IF_ERROR(CheckRange(item_field, width, 1, kMaxLayerWidth));
    hidden.push_back(static_cast<int>(width));
    start = comma + 1;
  }
  BT_RETURN_IF_ERROR(CheckRange(std::string(field) + " layers",
                                static_cast<int64_t>(hidden.size()), 1,
                                kMaxHiddenLayers));
  return hidden;
}

int64_t ParameterCount(const KernelFamily& family,
                       const std::vector<int>& hidden) {
  int64_t parameters = 0;
  int64_t width =
      static_cast<int64_t>(family.FeatureNames(kNewestFeatureSet).size());
  for (int h : hidden) {
    parameters += (width + 1) * h;
    width = h;
  }
  return parameters + width + 1;
}

Status CheckTrainingSize(const KernelFamily& family,
                         const std::vector<int>& hidden, int members) {
  // Layers are at most kMaxHiddenLayers of kMaxLayerWidth (validated), so
  // the count is below 2^30 and times 16 members far from overflow.
  const int64_t total =
      ParameterCount(family, hidden) * std::max(1, members);
  if (total <= kMaxTrainingParameters) return OkStatus();
  return InvalidArgument(
      "hidden_layers " + ArchitectureString(hidden) + " x members " +
      std::to_string(std::max(1, members)) + " would train " +
      std::to_string(total) + " parameters; at most " +
      std::to_string(kMaxTrainingParameters) +
      " may be trained at once: fewer or narrower layers, or fewer members");
}

std::string LibtorchVersion() {
  std::string v = TORCH_VERSION;
  if (torch::cuda::is_available()) v += "+cuda";
  return v;
}

bool LibtorchHasCuda() { return torch::cuda::is_available(); }

namespace {
std::atomic<int> scoring_threads{0};
}

int ScoringThreads() {
  int t = scoring_threads.load();
  if (t > 0) return t;
  return std::min(8, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

void ConfigureCpuInference(int threads) {
  scoring_threads = threads;
  // OpenBLAS's own threads would fight ours: one BLAS thread per caller.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(
          dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set(1);
  }
}

void Surrogate::Impl::Build(uint64_t seed) {
  torch::manual_seed(seed);
  net = torch::nn::Sequential();
  linears.clear();
  int width = inputs;
  for (int h : hidden) {
    linears.push_back(torch::nn::Linear(width, h));
    net->push_back(linears.back());
    net->push_back(torch::nn::ReLU());
    width = h;
  }
  linears.push_back(torch::nn::Linear(width, 1));
  net->push_back(linears.back());
  net->eval();
}

void Surrogate::Impl::Freeze() {
  torch::NoGradGuard no_grad;
  frozen_w.clear();
  frozen_b.clear();
  for (const auto& lin : linears) {
    frozen_w.push_back(lin->weight.detach().t().contiguous());
    frozen_b.push_back(lin->bias.detach().clone());
  }
  // Fold the feature normalization into the first layer:
  // W (x - mean) * inv = (W * inv) x - (W * inv) mean.
  if (!frozen_w.empty() && mean_t.defined()) {
    torch::Tensor w = frozen_w[0] * inv_std_t.view({-1, 1});  // [in, out]
    frozen_b[0] = frozen_b[0] - torch::matmul(mean_t.view({1, -1}), w).view({-1});
    frozen_w[0] = w.contiguous();
  }
}

void Surrogate::Impl::SyncNormalization() {
  std::vector<float> inv(stddev.size());
  for (size_t i = 0; i < stddev.size(); ++i)
    inv[i] = stddev[i] > 0 ? 1.f / stddev[i] : 1.f;
  mean_t = torch::tensor(mean).to(device);
  inv_std_t = torch::tensor(inv).to(device);
}

StatusOr<Surrogate> Surrogate::Create(const KernelFamily& family,
                                      DType precision,
                                      const std::vector<int>& hidden,
                                      uint64_t seed, int feature_set,
                                      int wave_sms) {
  if (!family.Implements(precision)) {
    return InvalidArgument("family " + std::string(family.name()) +
                           " does not implement " +
                           std::string(ToString(precision)));
  }
  BT_RETURN_IF_ERROR(CheckRange("hidden_layers size",
                                static_cast<int64_t>(hidden.size()), 1,
                                kMaxHiddenLayers));
  BT_RETURN_IF_ERROR(
      CheckRange("feature_set", feature_set, kLogFeatures, kNewestFeatureSet));
  if (feature_set >= kWaveFeatures) {
    BT_RETURN_IF_ERROR(CheckRange("wave_sms", wave_sms, 1, kMaxWaveSms));
  }
  for (size_t i = 0; i < hidden.size(); ++i) {
    BT_RETURN_IF_ERROR(CheckRange("hidden_layers[" + std::to_string(i) + "]",
                                  hidden[i], 1, kMaxLayerWidth));
  }
  auto impl = std::make_shared<Impl>();
  impl->family = &family;
  impl->precision = precision;
  impl->hidden = hidden;
  impl->feature_set = feature_set;
  impl->wave_sms = feature_set >= kWaveFeatures ? wave_sms : 0;
  impl->inputs = static_cast<int>(family.FeatureNames(feature_set).size());
  impl->search_values.assign(family.params().size(), {});
  impl->mean.assign(impl->inputs, 0.f);
  impl->stddev.assign(impl->inputs, 1.f);
  impl->Build(seed);
  impl->SyncNormalization();
  return Surrogate(std::move(impl));
}

StatusOr<Surrogate> Surrogate::Load(const KernelFamily& family,
                                    DType precision,
                                    const std::string& architecture,
                                    const std::string& weights,
                                    const std::string& normalization) {
  BT_ASSIGN_OR_RETURN(std::vector<int> hidden,
                      ParseArchitecture(architecture, "architecture"));
  models::Weights w;
  if (!w.ParseFromString(weights)) return DataLoss("model weights do not parse");
  models::Normalization norm;
  if (!norm.ParseFromString(normalization)) {
    return DataLoss("model normalization does not parse");
  }
  if (w.format() != kEnsembleFormat)
    return LoadNetwork(family, precision, architecture, hidden, w, norm);
  if (w.members_size() < 2 || w.members_size() > kMaxMembers ||
      w.member_normalizations_size() != w.members_size()) {
    return InvalidArgument(
        "model ensemble has " + std::to_string(w.members_size()) +
        " members and " + std::to_string(w.member_normalizations_size()) +
        " normalizations; expected the same number, 2 to " +
        std::to_string(kMaxMembers));
  }
  std::vector<Surrogate> members;
  for (int i = 0; i < w.members_size(); ++i) {
    auto member = LoadNetwork(family, precision, architecture, hidden,
                              w.members(i), w.member_normalizations(i));
    if (!member.ok()) {
      return Status(member.status().code(),
                    "model ensemble member " + std::to_string(i) + ": " +
                        member.status().message());
    }
    members.push_back(*std::move(member));
  }
  return Ensemble(std::move(members));
}

StatusOr<Surrogate> Surrogate::LoadNetwork(const KernelFamily& family,
                                           DType precision,
                                           const std::string& architecture,
                                           const std::vector<int>& hidden,
                                           const models::Weights& w,
                                           const models::Normalization& norm) {
  const Op op = family.op();
  // The stored names say the feature set.
  const int set = family.FeatureSetNamed(
      std::vector<std::string>(norm.features().begin(), norm.features().end()));
  BT_ASSIGN_OR_RETURN(Surrogate s,
                      Create(family, precision, hidden, 0, set, norm.wave_sms()));
  Impl& impl = *s.impl_;

  if (norm.op() != ToString(op)) {
    return InvalidArgument("model normalization is for op '" + norm.op() +
                           "', not " + std::string(ToString(op)));
  }
  // A model older than families predicts its op's block-shape family in
  // fp32.
  const std::string stored_family = norm.family().empty()
                                        ? std::string(BlockShapeFamily(op).name())
                                        : norm.family();
  const std::string stored_dtype = norm.dtype().empty() ? "fp32" : norm.dtype();
  if (stored_family != family.name() || stored_dtype != ToString(precision)) {
    return InvalidArgument("model normalization is for " + stored_family +
                           " " + stored_dtype + ", not " +
                           std::string(family.name()) + " " +
                           std::string(ToString(precision)));
  }
  const std::vector<std::string> names = family.FeatureNames(impl.feature_set);
  if (norm.features_size() != static_cast<int>(names.size()) ||
      norm.mean_size() != norm.features_size() ||
      norm.stddev_size() != norm.features_size()) {
    return InvalidArgument("model normalization has " +
                           std::to_string(norm.features_size()) +
                           " features; this build's " +
                           std::string(ToString(op)) + " model takes " +
                           std::to_string(names.size()));
  }
  for (int i = 0; i < norm.features_size(); ++i) {
    if (norm.features(i) != names[i]) {
      return InvalidArgument("model feature " + std::to_string(i) + " is '" +
                             norm.features(i) + "', this build expects '" +
                             names[i] + "'");
    }
  }
  if (norm.target() != kTarget) {
    return InvalidArgument("model target is '" + norm.target() +
                           "', expected " + kTarget);
  }
  BT_RETURN_IF_ERROR(CheckFinite("normalization mean", norm.mean()));
  BT_RETURN_IF_ERROR(CheckFinite("normalization stddev", norm.stddev()));
  if (!std::isfinite(norm.target_mean()) || !std::isfinite(norm.target_std()) ||
      !(norm.target_std() > 0)) {
    return InvalidArgument(
        "model target mean and stddev must be finite with stddev > 0, got " +
        std::to_string(norm.target_mean()) + " and " +
        std::to_string(norm.target_std()));
  }
  impl.mean.assign(norm.mean().begin(), norm.mean().end());
  impl.stddev.assign(norm.stddev().begin(), norm.stddev().end());
  impl.target_mean = norm.target_mean();
  impl.target_std = norm.target_std();
  const std::vector<ParamSpec>& specs = s.family().params();
  if (norm.search_values_size() != static_cast<int>(specs.size())) {
    std::string names;
    for (const ParamSpec& spec : specs)
      names += (names.empty() ? "" : " ") + spec.LowerName();
    return InvalidArgument("model normalization lists " +
                           std::to_string(norm.search_values_size()) +
                           " search ranges, expected " +
                           std::to_string(specs.size()) + " (" + names + ")");
  }
  for (int p = 0; p < norm.search_values_size(); ++p) {
    const auto& v = norm.search_values(p);
    const std::string name = specs[p].LowerName();
    if (v.parameter() != name || v.values_size() == 0) {
      return InvalidArgument("model search range " + std::to_string(p) +
                             " is '" + v.parameter() + "', expected a " +
                             name + " with values");
    }
    impl.search_values[p].assign(v.values().begin(), v.values().end());
  }

  if (w.format() != kWeightsFormat ||
      w.layers_size() != static_cast<int>(impl.linears.size())) {
    return InvalidArgument("model weights are '" + w.format() + "' with " +
                           std::to_string(w.layers_size()) +
                           " layers; architecture " + architecture + " needs " +
                           std::to_string(impl.linears.size()) + " layers of " +
                           kWeightsFormat);
  }
  torch::NoGradGuard no_grad;
  for (int l = 0; l < w.layers_size(); ++l) {
    const models::Layer& layer = w.layers(l);
    auto& lin = impl.linears[l];
    const int64_t out = lin->weight.size(0), in = lin->weight.size(1);
    if (layer.inputs() != in || layer.outputs() != out ||
        layer.weight_size() != in * out || layer.bias_size() != out) {
      return InvalidArgument("model layer " + std::to_string(l) + " is " +
                             std::to_string(layer.inputs()) + "x" +
                             std::to_string(layer.outputs()) +
                             ", architecture needs " + std::to_string(in) +
                             "x" + std::to_string(out));
    }
    const std::string name = "layer " + std::to_string(l);
    BT_RETURN_IF_ERROR(CheckFinite(name + " weight", layer.weight()));
    BT_RETURN_IF_ERROR(CheckFinite(name + " bias", layer.bias()));
    std::vector<float> wv(layer.weight().begin(), layer.weight().end());
    std::vector<float> bv(layer.bias().begin(), layer.bias().end());
    lin->weight.copy_(torch::tensor(wv).view({out, in}));
    lin->bias.copy_(torch::tensor(bv));
  }
  impl.SyncNormalization();
  impl.Freeze();
  return s;
}

Op Surrogate::op() const { return impl_->family->op(); }
const KernelFamily& Surrogate::family() const { return *impl_->family; }
DType Surrogate::precision() const { return impl_->precision; }
const std::vector<int>& Surrogate::hidden() const { return impl_->hidden; }
int Surrogate::feature_set() const { return impl_->feature_set; }
int Surrogate::wave_sms() const { return impl_->wave_sms; }
const SearchValues& Surrogate::search_values() const {
  return impl_->search_values;
}

std::string Surrogate::Extrapolation(const Context& ctx, double limit) const {
  const Impl& m = *impl_;
  const std::vector<std::string> names = m.family->FeatureNames(m.feature_set);
  const std::vector<std::string>& context_names = ContextFeatureNames(OpOf(ctx));
  std::vector<float> values;
  AppendContextFeatures(ctx, &values);
  std::string worst;
  double worst_z = limit;
  for (size_t c = 0; c < context_names.size() && c < values.size(); ++c) {
    // Sizes only (log2_*): a layout flag a family's data holds mostly one
    // way is not an extrapolation.
    if (context_names[c].rfind("log2_", 0) != 0) continue;
    const auto at = std::find(names.begin(), names.end(), context_names[c]);
    const size_t i = static_cast<size_t>(at - names.begin());
    if (at == names.end() || i >= m.mean.size() || !(m.stddev[i] > 0)) continue;
    const double z = (values[c] - m.mean[i]) / m.stddev[i];
    if (std::abs(z) > worst_z) {
      worst_z = std::abs(z);
      char text[160];
      std::snprintf(text, sizeof(text),
                    "%s = %.3g is %.1f standard deviations %s its training data's "
                    "mean (%.3g)",
                    context_names[c].c_str(), values[c], std::abs(z),
                    z > 0 ? "above" : "below", m.mean[i]);
      worst = text;
    }
  }
  return worst;
}

StatusOr<Surrogate> Surrogate::Ensemble(std::vector<Surrogate> members) {
  if (members.size() < 2 || members.size() > kMaxMembers) {
    return InvalidArgument("an ensemble needs 2 to " +
                           std::to_string(kMaxMembers) + " members, got " +
                           std::to_string(members.size()));
  }
  for (const Surrogate& m : members) {
    if (m.members() != 1 || &m.family() != &members[0].family() ||
        m.precision() != members[0].precision() ||
        m.hidden() != members[0].hidden() ||
        m.feature_set() != members[0].feature_set() ||
        m.wave_sms() != members[0].wave_sms()) {
      return InvalidArgument(
          "ensemble members must be single networks of one family, "
          "precision, architecture and feature set (and SM count)");
    }
  }
  Surrogate out = members[0];
  out.extra_.assign(members.begin() + 1, members.end());
  return out;
}

int64_t Surrogate::parameters() const {
  int64_t n = 0;
  for (const auto& p : impl_->net->parameters()) n += p.numel();
  for (const Surrogate& m : extra_) n += m.parameters();
  return n;
}

namespace {

// One network's stored forms.
models::Weights NetworkWeights(const Surrogate::Impl& impl) {
  models::Weights w;
  w.set_format(kWeightsFormat);
  for (const auto& lin : impl.linears) {
    torch::Tensor wt = lin->weight.detach().to(torch::kCPU).contiguous();
    torch::Tensor bt = lin->bias.detach().to(torch::kCPU).contiguous();
    models::Layer* layer = w.add_layers();
    layer->set_inputs(static_cast<int32_t>(wt.size(1)));
    layer->set_outputs(static_cast<int32_t>(wt.size(0)));
    layer->mutable_weight()->Add(wt.data_ptr<float>(),
                                 wt.data_ptr<float>() + wt.numel());
    layer->mutable_bias()->Add(bt.data_ptr<float>(),
                               bt.data_ptr<float>() + bt.numel());
  }
  return w;
}

models::Normalization NetworkNormalization(const Surrogate::Impl& impl) {
  models::Normalization n;
  const KernelFamily& family = *impl.family;
  n.set_op(std::string(ToString(family.op())));
  // A block-shape family's fp32 model stays readable by blocktune builds
  // older than families (and the headers they wrote), as before.
  if (&family != &BlockShapeFamily(family.op()) ||
      impl.precision != DType::kFp32) {
    n.set_family(std::string(family.name()));
    n.set_dtype(std::string(ToString(impl.precision)));
  }
  for (const auto& name : family.FeatureNames(impl.feature_set))
    n.add_features(name);
  n.mutable_mean()->Add(impl.mean.begin(), impl.mean.end());
  n.mutable_stddev()->Add(impl.stddev.begin(), impl.stddev.end());
  n.set_target(kTarget);
  n.set_target_mean(impl.target_mean);
  n.set_target_std(impl.target_std);
  if (impl.feature_set >= kWaveFeatures) n.set_wave_sms(impl.wave_sms);
  const std::vector<ParamSpec>& specs = family.params();
  for (size_t p = 0; p < specs.size() && p < impl.search_values.size(); ++p) {
    auto* v = n.add_search_values();
    v->set_parameter(specs[p].LowerName());
    v->mutable_values()->Add(impl.search_values[p].begin(),
                             impl.search_values[p].end());
  }
  return n;
}

}  // namespace

std::string Surrogate::SerializeWeights() const {
  if (extra_.empty()) return NetworkWeights(*impl_).SerializeAsString();
  models::Weights e;
  e.set_format(kEnsembleFormat);
  for (int i = 0; i < members(); ++i) {
    const Impl& member = *Member(i).impl_;
    *e.add_members() = NetworkWeights(member);
    *e.add_member_normalizations() = NetworkNormalization(member);
  }
  return e.SerializeAsString();
}

// An ensemble's is its first member's: the search range and features are
// every member's.
std::string Surrogate::SerializeNormalization() const {
  return NetworkNormalization(*impl_).SerializeAsString();
}

void Surrogate::Predict(const float* features, int64_t n, float* out) const {
  PredictMember(*impl_, features, n, out);
  if (extra_.empty()) return;
  std::vector<float> member(n);
  for (const Surrogate& m : extra_) {
    PredictMember(*m.impl_, features, n, member.data());
    for (int64_t i = 0; i < n; ++i) out[i] += member[i];
  }
  const float count = static_cast<float>(members());
  for (int64_t i = 0; i < n; ++i) out[i] /= count;
}

void Surrogate::PredictSpread(const float* features, int64_t n, float* mean,
                              float* spread) const {
  std::vector<std::vector<float>> y(static_cast<size_t>(members()),
                                    std::vector<float>(n));
  for (int m = 0; m < members(); ++m)
    PredictMember(*Member(m).impl_, features, n, y[m].data());
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (const auto& ym : y) sum += ym[i];
    const double mu = sum / static_cast<double>(y.size());
    double var = 0;
    for (const auto& ym : y) var += (ym[i] - mu) * (ym[i] - mu);
    mean[i] = static_cast<float>(mu);
    spread[i] = static_cast<float>(std::sqrt(var / static_cast<double>(y.size())));
  }
}

void Surrogate::PredictMember(Impl& impl, const float* features, int64_t n,
                              float* out) {
  const int64_t f = impl.inputs;
  // On the CPU, small chunks spread over threads, each a chain of
  // single-threaded BLAS calls: on 2 cores ~1.3x the speed of one
  // multithreaded BLAS call per layer on large chunks (bench/results/cpu).
  // On a GPU, large chunks.
  const bool gpu = impl.device.is_cuda();
  const int64_t chunk = gpu ? 65536 : 512;
  const int64_t chunks = (n + chunk - 1) / chunk;
  auto run = [&](int64_t first, int64_t step) {
    torch::InferenceMode guard;
    for (int64_t c = first; c < chunks; c += step) {
      const int64_t start = c * chunk;
      const int64_t rows = std::min(chunk, n - start);
      torch::Tensor a =
          torch::from_blob(const_cast<float*>(features + start * f), {rows, f},
                           torch::kFloat32)
              .to(impl.device);
      if (impl.frozen_w.empty()) {
        a = impl.Forward((a - impl.mean_t) * impl.inv_std_t);
      } else {
        for (size_t l = 0; l < impl.frozen_w.size(); ++l) {
          a = torch::addmm(impl.frozen_b[l], a, impl.frozen_w[l]);
          if (l + 1 < impl.frozen_w.size()) a.relu_();
        }
      }
      torch::Tensor y = a.view({rows}).to(torch::kCPU).contiguous();
      const float* py = y.data_ptr<float>();
      for (int64_t i = 0; i < rows; ++i) {
        out[start + i] =
            static_cast<float>(py[i] * impl.target_std + impl.target_mean);
      }
    }
  };
  const int threads = gpu ? 1
                          : static_cast<int>(std::min<int64_t>(
                                chunks, std::max(1, ScoringThreads())));
  if (threads <= 1) {
    run(0, 1);
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(run, t, threads);
  run(0, threads);
  for (auto& t : pool) t.join();
}

double Surrogate::PredictSeconds(const Context& ctx,
                                 const Params& params) const {
  std::vector<float> f;
  Features(ctx, params, &f);
  float y = 0;
  Predict(f.data(), 1, &y);
  return Flops(ctx) / std::exp(static_cast<double>(y));
}

bool Surrogate::UseCuda(bool on) {
  Impl& impl = *impl_;
  torch::Device want = (on && torch::cuda::is_available())
                           ? torch::Device(torch::kCUDA, 0)
                           : torch::Device(torch::kCPU);
  impl.net->to(want);
  impl.device = want;
  impl.SyncNormalization();
  impl.Freeze();
  for (Surrogate& m : extra_) m.UseCuda(on);
  return impl.device.is_cuda();
}

bool Surrogate::on_cuda() const { return impl_->device.is_cuda(); }

}  // namespace blocktune
