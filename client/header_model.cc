#include "client/header_model.h"

#include <cstdio>
#include <vector>

#include "kernels/block_shape.h"
#include "models/search.h"
#include "models/surrogate.pb.h"
#include "proto/convert.h"

namespace blocktune {
namespace {

std::string Hex(float v) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%af", static_cast<double>(v));
  return buf;
}


// `name`[] as a float array, eight values a line.
void FloatArray(std::ostream& out, const std::string& name,
                const google::protobuf::RepeatedField<float>& values) {
  out << "inline constexpr float " << name << "[] = {";
  for (int i = 0; i < values.size(); ++i) {
    out << (i % 8 == 0 ? "\n    " : " ") << Hex(values.Get(i)) << ",";
  }
  out << "};\n";
}

// One network of an embedded model: its arrays, and `<name>Layers`,
// `<name>Mean`, ...
Status WriteNetwork(std::ostream& out, const v1::Model& model,
                    const KernelFamily& family, const std::string& name,
                    const models::Weights& weights,
                    const models::Normalization& norm, int set,
                    int* inputs_out) {
  const int inputs = norm.features_size();
  const std::vector<std::string> expected = family.FeatureNames(set);
  const std::string id = "model " + std::to_string(model.id());
  if (weights.format() != "blocktune.mlp.v1" || weights.layers().empty() ||
      norm.target() != "ln(flop/s)") {
    return InvalidArgument(id + ": weights do not parse as blocktune.mlp.v1");
  }
  bool same = inputs == static_cast<int>(expected.size());
  for (int i = 0; same && i < inputs; ++i) same = norm.features(i) == expected[i];
  if (!same || norm.mean_size() != inputs || norm.stddev_size() != inputs ||
      weights.layers(0).inputs() != inputs) {
    return InvalidArgument(id + " takes " + std::to_string(inputs) +
                           " features; the header computes " + std::string(family.name()) +
                           "'s " + std::to_string(expected.size()) +
                           " (KernelFamily::FeatureNames)");
  }
  int previous = inputs;
  for (const models::Layer& l : weights.layers()) {
    if (l.inputs() != previous || l.outputs() < 1 || l.outputs() > 1024 ||
        l.weight_size() != l.inputs() * l.outputs() || l.bias_size() != l.outputs()) {
      return InvalidArgument(id + ": inconsistent layer sizes");
    }
    previous = l.outputs();
  }
  if (previous != 1) return InvalidArgument(id + ": the last layer must have one output");
  const std::string& p = name;
  FloatArray(out, p + "Mean", norm.mean());
  FloatArray(out, p + "Stddev", norm.stddev());
  for (int l = 0; l < weights.layers_size(); ++l) {
    FloatArray(out, p + "W" + std::to_string(l), weights.layers(l).weight());
    FloatArray(out, p + "B" + std::to_string(l), weights.layers(l).bias());
  }
  out << "inline constexpr MlpLayer " << p << "Layers[] = {\n";
  for (int l = 0; l < weights.layers_size(); ++l) {
    out << "    {" << weights.layers(l).inputs() << ", "
        << weights.layers(l).outputs() << ", " << p << "W" << l << ", " << p << "B"
        << l << "},\n";
  }
  out << "};\n";
  // Full precision for the target's scale: it enters every prediction.
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", norm.target_mean());
  out << "inline constexpr double " << p << "TargetMean = " << buf << ";\n";
  std::snprintf(buf, sizeof(buf), "%.17g", norm.target_std());
  out << "inline constexpr double " << p << "TargetStd = " << buf << ";\n";
  *inputs_out = inputs;
  return OkStatus();
}

// The expression of one network's ln(flop/s), as the daemon computes it
// (models/surrogate.cc): float(y * std + mean).
std::string NetworkLnFlops(const std::string& p, int layers, int inputs) {
  return "static_cast<float>(Mlp(" + p + "Layers, " + std::to_string(layers) +
         ", features, " + p + "Mean, " + p + "Stddev, " +
         std::to_string(inputs) + ") * " + p + "TargetStd + " + p +
         "TargetMean)";
}

}  // namespace

StatusOr<HeaderModel> HeaderModelKey(const v1::Model& m, Op op) {
  BT_ASSIGN_OR_RETURN(DType precision, ContextDTypeFromProto(m.dtype(), "model.dtype"));
  const KernelFamily* family = &BlockShapeFamily(op);
  if (!m.family().empty()) {
    BT_ASSIGN_OR_RETURN(family, FindFamily(m.family()));
  }
  return HeaderModel{precision, family};
}

Status WriteHeaderModel(std::ostream& out, const v1::Model& model,
                        const KernelFamily& family, const std::string& p,
                        int* feature_set, int* wave_sms) {
  models::Weights weights;
  models::Normalization norm;
  if (!weights.ParseFromString(model.weights()) ||
      !norm.ParseFromString(model.normalization())) {
    return InvalidArgument("model " + std::to_string(model.id()) +
                           ": weights or normalization do not parse");
  }
  const bool ensemble = weights.format() == "blocktune.mlp-ensemble.v1";
  const int members = ensemble ? weights.members_size() : 1;
  if (ensemble && (members < 2 || weights.member_normalizations_size() != members)) {
    return InvalidArgument("model " + std::to_string(model.id()) +
                           ": an ensemble needs 2 or more members, each with "
                           "its normalization");
  }
  out << "\n// The surrogate f(x_B, x_C) of " << family.name() << ": model " << model.id()
      << ", hidden layers " << model.architecture();
  if (ensemble) out << ", " << members << " networks";
  // The names the model lists say its feature set (WriteNetwork names a
  // mismatch).
  const int set = family.FeatureSetNamed(
      std::vector<std::string>(norm.features().begin(), norm.features().end()));
  if (feature_set) *feature_set = set;
  if (wave_sms) *wave_sms = norm.wave_sms();
  out << ". Inputs:";
  for (const std::string& f : family.FeatureNames(set)) out << " " << f;
  out << ".\n// Output: ln(flop/s); of an ensemble, its members' mean less "
      << kEnsembleRisk << " of their standard deviation, as blocktuned ranks.\n";
  std::vector<std::string> terms;
  for (int m = 0; m < members; ++m) {
    const std::string name = ensemble ? p + "M" + std::to_string(m) : p;
    const models::Weights& w = ensemble ? weights.members(m) : weights;
    const models::Normalization& n =
        ensemble ? weights.member_normalizations(m) : norm;
    int inputs = 0;
    BT_RETURN_IF_ERROR(WriteNetwork(out, model, family, name, w, n, set, &inputs));
    terms.push_back(NetworkLnFlops(name, w.layers_size(), inputs));
  }
  out << "inline float " << p.substr(1) << "LnFlops(const float* features) {\n";
  if (!ensemble) {
    out << "  return " << terms[0] << ";\n}\n";
    return OkStatus();
  }
  // The ranking (models/search.h, BlockSearch): the members' mean less
  // kEnsembleRisk of their standard deviation, in double as the daemon
  // computes it (Surrogate::PredictSpread).
  char risk[32];
  std::snprintf(risk, sizeof(risk), "%.17g", kEnsembleRisk);
  out << "  const float y[" << members << "] = {";
  for (int m = 0; m < members; ++m) out << (m ? ", " : "") << terms[m];
  out << "};\n"
      << "  double sum = 0;\n"
      << "  for (float v : y) sum += v;\n"
      << "  const double mean = sum / " << members << ";\n"
      << "  double var = 0;\n"
      << "  for (float v : y) var += (v - mean) * (v - mean);\n"
      << "  return static_cast<float>(static_cast<float>(mean) - " << risk
      << " * static_cast<float>(std::sqrt(var / " << members << ")));\n}\n";
  return OkStatus();
}

}  // namespace blocktune
