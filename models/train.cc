#include "models/train.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "kernels/validate.h"
#include "models/features.h"
#include "models/surrogate.pb.h"
#include "models/surrogate_impl.h"

namespace blocktune {
namespace {

// Mean squared error of predictions (normalized) against targets
// (normalized), in the target's own units.
double Mse(const torch::Tensor& pred, const torch::Tensor& target,
           double target_std) {
  return torch::mse_loss(pred, target).item<double>() * target_std *
         target_std;
}

// The loss: the plain MSE, or with `weight` (defined) the weighted mean of
// the squared errors (TrainOptions::top_weight).
torch::Tensor Loss(const torch::Tensor& pred, const torch::Tensor& target,
                   const torch::Tensor& weight) {
  if (!weight.defined()) return torch::mse_loss(pred, target);
  return (weight * (pred - target).pow(2)).sum() / weight.sum();
}

std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double mean_rank = 0.5 * (i + j);
    for (size_t t = i; t <= j; ++t) rank[order[t]] = mean_rank;
    i = j + 1;
  }
  return rank;
}

}  // namespace

double Spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n = std::min(a.size(), b.size());
  if (n < 2) return 0;
  std::vector<double> ra = Ranks(a), rb = Ranks(b);
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

Status Validate(const TrainOptions& o) {
  BT_RETURN_IF_ERROR(CheckRange("hidden_layers size",
                                static_cast<int64_t>(o.hidden.size()), 1,
                                kMaxHiddenLayers));
  for (size_t i = 0; i < o.hidden.size(); ++i) {
    BT_RETURN_IF_ERROR(CheckRange("hidden_layers[" + std::to_string(i) + "]",
                                  o.hidden[i], 1, kMaxLayerWidth));
  }
  BT_RETURN_IF_ERROR(CheckRange("epochs", o.epochs, 1, 100000));
  BT_RETURN_IF_ERROR(CheckRange("patience", o.patience, 1, 100000));
  BT_RETURN_IF_ERROR(CheckRange("batch_size", o.batch_size, 1, 1 << 20));
  if (!(o.learning_rate > 0 && o.learning_rate <= 1)) {
    return InvalidArgument("learning_rate must be in (0, 1], got " +
                           std::to_string(o.learning_rate));
  }
  if (!(o.validation_fraction >= 0.01 && o.validation_fraction <= 0.5)) {
    return InvalidArgument("validation_fraction must be in [0.01, 0.5], got " +
                           std::to_string(o.validation_fraction));
  }
  BT_RETURN_IF_ERROR(CheckRange("members", o.members, 1, 16));
  BT_RETURN_IF_ERROR(CheckRange("feature_set", o.feature_set, 0,
                                kNewestFeatureSet));
  BT_RETURN_IF_ERROR(CheckRange("wave_sms", o.wave_sms, 0, kMaxWaveSms));
  if (!(o.top_weight >= 0 && o.top_weight <= 100)) {
    return InvalidArgument("top_weight must be in [0, 100], got " +
                           std::to_string(o.top_weight));
  }
  return OkStatus();
}

namespace {

StatusOr<TrainedModel> TrainOne(
    const KernelFamily& family, DType precision,
    const std::vector<TrainingRow>& rows, const TrainOptions& options,
    const std::function<bool(const EpochReport&)>& on_epoch,
    const StopCheck& stop);

// Metrics as stored (ModelRecord metrics_json): every field, proto names.
std::string MetricsJson(const models::Metrics& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  google::protobuf::util::MessageToJsonString(m, &json, options);
  return json;
}

}  // namespace

StatusOr<TrainedModel> Train(
    const KernelFamily& family, DType precision,
    const std::vector<TrainingRow>& rows, const TrainOptions& options,
    const std::function<bool(const EpochReport&)>& on_epoch,
    const StopCheck& stop) {
  BT_RETURN_IF_ERROR(Validate(options));
  if (options.members == 1) return TrainOne(family, precision, rows, options, on_epoch, stop);
  std::vector<Surrogate> networks;
  std::vector<TrainedModel> each;
  for (int i = 0; i < options.members; ++i) {
    TrainOptions one = options;
    one.members = 1;
    one.seed = options.seed + static_cast<uint64_t>(i);
    std::function<bool(const EpochReport&)> report;
    if (on_epoch) {
      report = [&, i](const EpochReport& r) {
        EpochReport tagged = r;
        tagged.member = i;
        tagged.members = options.members;
        return on_epoch(tagged);
      };
    }
    BT_ASSIGN_OR_RETURN(TrainedModel t, TrainOne(family, precision, rows, one, report, stop));
    networks.push_back(t.surrogate);
    each.push_back(std::move(t));
  }
  BT_ASSIGN_OR_RETURN(Surrogate ensemble, Surrogate::Ensemble(networks));
  TrainedModel out = each[0];
  out.surrogate = ensemble;
  out.validation_mse = out.train_mse = 0;
  out.epochs_run = 0;
  models::Metrics m;
  double seconds = 0;
  for (const TrainedModel& t : each) {
    models::Metrics mi;
    if (!google::protobuf::util::JsonStringToMessage(t.metrics_json, &mi).ok())
      return Internal("cannot read back a member's metrics");
    if (&t == &each[0]) m = mi;  // its Spearman figures stand
    out.validation_mse += t.validation_mse / each.size();
    out.train_mse += t.train_mse / each.size();
    out.epochs_run += t.epochs_run;
    seconds += mi.seconds();
    m.add_member_validation_mse(t.validation_mse);
  }
  m.set_validation_mse(out.validation_mse);
  m.set_train_mse(out.train_mse);
  m.set_epochs_run(out.epochs_run);
  m.set_seconds(seconds);
  m.set_seed(options.seed);
  m.set_members(options.members);
  out.metrics_json = MetricsJson(m);
  return out;
}

namespace {

StatusOr<TrainedModel> TrainOne(
    const KernelFamily& family, DType precision,
    const std::vector<TrainingRow>& rows, const TrainOptions& options,
    const std::function<bool(const EpochReport&)>& on_epoch,
    const StopCheck& stop) {
  const auto started = std::chrono::steady_clock::now();
  BT_RETURN_IF_ERROR(Validate(options));
  auto check_stop = [&]() -> Status { return stop ? stop() : OkStatus(); };
  const Op op = family.op();
  if (rows.size() < 20) {
    return FailedPrecondition("training needs at least 20 measured " +
                              std::string(ToString(op)) + " samples, got " +
                              std::to_string(rows.size()));
  }
  const int64_t n = static_cast<int64_t>(rows.size());
  // The default set, but below kWaveFeatures for samples of a device whose
  // SM count is unknown (wave_sms 0).
  int feature_set = options.feature_set > 0
                        ? options.feature_set
                        : DefaultFeatureSet(op, family.name());
  if (options.feature_set == 0 && options.wave_sms == 0)
    feature_set = std::min(feature_set, kAlignFeatures);
  if (feature_set >= kWaveFeatures && options.wave_sms < 1) {
    return InvalidArgument(
        "wave_sms must be the device's SM count (1 to " +
        std::to_string(kMaxWaveSms) + ") for feature_set " +
        std::to_string(feature_set) + ", got " +
        std::to_string(options.wave_sms));
  }
  const int64_t f = static_cast<int64_t>(family.FeatureNames(feature_set).size());

  // Features, targets, and the parameter values the data covers.
  std::vector<float> x(n * f);
  std::vector<float> y(n);
  std::vector<std::set<int64_t>> seen(family.params().size());
  std::vector<float> fi;
  for (int64_t i = 0; i < n; ++i) {
    const TrainingRow& r = rows[i];
    if (OpOf(r.ctx) != op) {
      return InvalidArgument("rows[" + std::to_string(i) + "] is a " +
                             std::string(ToString(OpOf(r.ctx))) +
                             " sample; training a " +
                             std::string(ToString(op)) + " model");
    }
    if (DTypeOf(r.ctx) != precision) {
      return InvalidArgument("rows[" + std::to_string(i) + "] is a " +
                             std::string(ToString(DTypeOf(r.ctx))) +
                             " sample; training a " +
                             std::string(ToString(precision)) + " model");
    }
    if (r.params.size != static_cast<int>(family.params().size())) {
      return InvalidArgument("rows[" + std::to_string(i) + "].params has " +
                             std::to_string(r.params.size) + " values; " +
                             std::string(family.name()) + " has " +
                             std::to_string(family.params().size()) +
                             " parameters");
    }
    if (!(r.seconds > 0) || !std::isfinite(r.seconds)) {
      return InvalidArgument("rows[" + std::to_string(i) +
                             "].seconds must be positive and finite");
    }
    const Params& params = r.params;
    fi.clear();
    family.Features(r.ctx, params, &fi, feature_set, options.wave_sms);
    std::copy(fi.begin(), fi.end(), x.begin() + i * f);
    y[i] = static_cast<float>(std::log(Flops(r.ctx) / r.seconds));
    for (size_t p = 0; p < seen.size(); ++p) seen[p].insert(params[static_cast<int>(p)]);
  }

  // The split, from the seed, by input: rows with the same features (one
  // configuration in one context measured again, by another campaign, a
  // retune or another GPU of a fleet) fall on one side together, so the
  // validation never scores a point the training part holds too.
  std::map<std::vector<float>, size_t> group_of;
  std::vector<std::vector<int64_t>> groups;
  for (int64_t i = 0; i < n; ++i) {
    auto [it, added] = group_of.emplace(
        std::vector<float>(x.begin() + i * f, x.begin() + (i + 1) * f),
        groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  Rng rng(options.seed);
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = order.size() - 1; i > 0; --i) {
    std::swap(order[i], order[rng.Below(static_cast<uint32_t>(i + 1))]);
  }
  const int64_t wanted_val = std::max<int64_t>(
      1, static_cast<int64_t>(std::llround(n * options.validation_fraction)));
  std::vector<int64_t> val_idx, train_idx;
  for (size_t g : order) {
    std::vector<int64_t>& side =
        static_cast<int64_t>(val_idx.size()) < wanted_val ? val_idx : train_idx;
    side.insert(side.end(), groups[g].begin(), groups[g].end());
  }
  if (train_idx.empty()) {
    return FailedPrecondition(
        "training needs samples of at least two distinct configurations or "
        "contexts; all " + std::to_string(n) + " have the same inputs");
  }
  const int64_t n_val = static_cast<int64_t>(val_idx.size());
  const int64_t n_train = static_cast<int64_t>(train_idx.size());

  // Each row's weight in the loss (TrainOptions::top_weight): its speed
  // against the fastest row of its context.
  std::vector<float> w;
  if (options.top_weight > 0) {
    std::map<std::string, double> fastest;
    std::vector<std::string> context_of(n);
    for (int64_t i = 0; i < n; ++i) {
      context_of[i] = ToString(rows[i].ctx);
      auto [it, added] = fastest.emplace(context_of[i], rows[i].seconds);
      if (!added) it->second = std::min(it->second, rows[i].seconds);
    }
    w.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      const double speed = fastest[context_of[i]] / rows[i].seconds;
      w[i] = static_cast<float>(1 + options.top_weight * std::pow(speed, 10));
    }
  }

  BT_ASSIGN_OR_RETURN(Surrogate model,
                      Surrogate::Create(family, precision, options.hidden,
                                        options.seed, feature_set,
                                        options.wave_sms));
  Surrogate::Impl& impl = model.impl();
  for (size_t p = 0; p < seen.size(); ++p) {
    impl.search_values[p].assign(seen[p].begin(), seen[p].end());
  }

  // Normalization from the training part only.
  std::vector<double> sum(f, 0), sq(f, 0);
  double ysum = 0, ysq = 0;
  for (int64_t i : train_idx) {
    for (int64_t j = 0; j < f; ++j) {
      sum[j] += x[i * f + j];
      sq[j] += double(x[i * f + j]) * x[i * f + j];
    }
    ysum += y[i];
    ysq += double(y[i]) * y[i];
  }
  for (int64_t j = 0; j < f; ++j) {
    const double m = sum[j] / n_train;
    const double var = std::max(0.0, sq[j] / n_train - m * m);
    impl.mean[j] = static_cast<float>(m);
    impl.stddev[j] = var > 1e-12 ? static_cast<float>(std::sqrt(var)) : 1.f;
  }
  impl.target_mean = ysum / n_train;
  const double yvar = std::max(0.0, ysq / n_train - impl.target_mean * impl.target_mean);
  impl.target_std = yvar > 1e-12 ? std::sqrt(yvar) : 1.0;

  const bool cuda = model.UseCuda(options.use_cuda);
  impl.frozen_w.clear();  // training changes the weights
  impl.frozen_b.clear();
  const torch::Device dev = impl.device;
  torch::Tensor X = torch::from_blob(x.data(), {n, f}, torch::kFloat32).clone();
  X = ((X - torch::tensor(impl.mean)) / torch::tensor(impl.stddev)).to(dev);
  torch::Tensor Y = ((torch::from_blob(y.data(), {n}, torch::kFloat32).clone() -
                      impl.target_mean) /
                     impl.target_std)
                        .view({n, 1})
                        .to(dev);
  auto to_index = [&](const std::vector<int64_t>& idx) {
    return torch::tensor(idx, torch::kInt64).to(dev);
  };
  torch::Tensor Xv = X.index_select(0, to_index(val_idx));
  torch::Tensor Yv = Y.index_select(0, to_index(val_idx));
  torch::Tensor Xt = X.index_select(0, to_index(train_idx));
  torch::Tensor Yt = Y.index_select(0, to_index(train_idx));
  torch::Tensor Wv, Wt;  // undefined: the plain MSE
  if (!w.empty()) {
    torch::Tensor W =
        torch::from_blob(w.data(), {n, 1}, torch::kFloat32).clone().to(dev);
    Wv = W.index_select(0, to_index(val_idx));
    Wt = W.index_select(0, to_index(train_idx));
  }

  torch::optim::Adam adam(impl.net->parameters(),
                          torch::optim::AdamOptions(options.learning_rate));
  double lr = options.learning_rate;
  // best: the validation loss early stopping watches (weighted with
  // top_weight); best_plain: the plain MSE at that epoch, the one reported.
  double best = INFINITY, best_plain = INFINITY, last_train = 0;
  int best_epoch = 0, since_change = 0, epochs_run = 0;
  std::vector<torch::Tensor> best_state;
  const int decay_after = std::max(1, options.patience / 4);
  torch::manual_seed(options.seed);

  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    epochs_run = epoch;
    impl.net->train();
    torch::Tensor perm = torch::randperm(n_train, torch::TensorOptions()
                                                      .dtype(torch::kInt64)
                                                      .device(dev));
    double loss_sum = 0;
    int64_t seen_rows = 0;
    for (int64_t s = 0; s < n_train; s += options.batch_size) {
      const int64_t rows_b = std::min<int64_t>(options.batch_size, n_train - s);
      // A mini-batch of wide layers takes a good part of a second on a
      // CPU, so each of its three costly steps is preceded by a check.
      BT_RETURN_IF_ERROR(check_stop());
      torch::Tensor idx = perm.slice(0, s, s + rows_b);
      torch::Tensor xb = Xt.index_select(0, idx);
      torch::Tensor yb = Yt.index_select(0, idx);
      torch::Tensor wb = Wt.defined() ? Wt.index_select(0, idx) : torch::Tensor();
      adam.zero_grad();
      torch::Tensor loss = Loss(impl.net->forward(xb), yb, wb);
      BT_RETURN_IF_ERROR(check_stop());
      loss.backward();
      BT_RETURN_IF_ERROR(check_stop());
      adam.step();
      loss_sum += loss.item<double>() * rows_b;
      seen_rows += rows_b;
    }
    last_train = loss_sum / seen_rows * impl.target_std * impl.target_std;
    // The validation pass stays whole (chunking it would change the MSE in
    // its last bits, and with it early stopping); it costs about a forward
    // pass of one or two mini-batches.
    BT_RETURN_IF_ERROR(check_stop());
    impl.net->eval();
    double val, plain_val;
    {
      torch::NoGradGuard ng;
      const torch::Tensor pv = impl.net->forward(Xv);
      plain_val = Mse(pv, Yv, impl.target_std);
      val = Wv.defined() ? Loss(pv, Yv, Wv).item<double>() * impl.target_std *
                               impl.target_std
                         : plain_val;
    }
    if (val < best) {
      best = val;
      best_plain = plain_val;
      best_epoch = epoch;
      since_change = 0;
      best_state.clear();
      for (const auto& p : impl.net->parameters()) best_state.push_back(p.detach().clone());
    } else if (++since_change % decay_after == 0) {
      lr *= 0.5;
      for (auto& group : adam.param_groups()) {
        static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
      }
    }
    EpochReport report{epoch, options.epochs, last_train, val, best};
    if (on_epoch && !on_epoch(report)) {
      return Cancelled("training cancelled after epoch " + std::to_string(epoch));
    }
    if (epoch - best_epoch >= options.patience) break;
  }
  {
    torch::NoGradGuard ng;
    auto params = impl.net->parameters();
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(best_state[i]);
  }
  impl.net->eval();
  impl.Freeze();

  // Rank quality on the held-out samples.
  std::vector<float> pred(n_val);
  std::vector<float> xval(n_val * f);
  for (int64_t i = 0; i < n_val; ++i) {
    std::copy(x.begin() + val_idx[i] * f, x.begin() + (val_idx[i] + 1) * f,
              xval.begin() + i * f);
  }
  model.Predict(xval.data(), n_val, pred.data());
  std::vector<double> pv(pred.begin(), pred.end()), mv(n_val);
  std::map<std::string, std::vector<int64_t>> by_context;
  for (int64_t i = 0; i < n_val; ++i) {
    mv[i] = y[val_idx[i]];
    by_context[ToString(rows[val_idx[i]].ctx)].push_back(i);
  }
  std::vector<double> within;
  for (const auto& [ctx, members] : by_context) {
    if (members.size() < 8) continue;
    std::vector<double> a, b;
    for (int64_t i : members) {
      a.push_back(pv[i]);
      b.push_back(mv[i]);
    }
    within.push_back(Spearman(a, b));
  }
  double within_median = 0;
  if (!within.empty()) {
    std::sort(within.begin(), within.end());
    within_median = within[within.size() / 2];
  }

  models::Metrics m;
  m.set_validation_mse(best_plain);
  m.set_train_mse(last_train);
  m.set_top_weight(options.top_weight);
  m.set_epochs_run(epochs_run);
  m.set_best_epoch(best_epoch);
  m.set_training_samples(n_train);
  m.set_validation_samples(n_val);
  m.set_spearman_validation(Spearman(pv, mv));
  m.set_spearman_within_context_median(within_median);
  m.set_contexts_ranked(static_cast<int32_t>(within.size()));
  m.set_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                              started)
                    .count());
  m.set_device(cuda ? "cuda" : "cpu");
  m.set_libtorch_version(LibtorchVersion());
  m.set_seed(options.seed);
  m.set_members(1);
  m.set_batch_size(options.batch_size);
  m.set_learning_rate(options.learning_rate);
  m.set_architecture(ArchitectureString(options.hidden));

  model.UseCuda(false);  // also freezes the weights for inference
  TrainedModel out{model, "", best_plain, last_train, m.spearman_validation(),
                   within_median, epochs_run, best_epoch, n_train, n_val};
  out.metrics_json = MetricsJson(m);
  return out;
}

}  // namespace

}  // namespace blocktune
