#include "client/header_export.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "client/header_model.h"
#include "client/header_text.h"
#include "kernels/block_shape.h"
#include "kernels/operation.h"
#include "tuner/device_profile.h"

namespace blocktune {
namespace {

std::string Num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// "gemm.mma" -> "GemmMma".
std::string FamilyIdent(std::string_view name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

// How the header writes a family's rules (detail::Family), or why it cannot.
struct FamilyLayout {
  std::string kind;  // "Kind::kFfma"
  int tile_m = -1, tile_n = -1, step_k = -1, split_k = -1, split_reduce = -1;
};

StatusOr<FamilyLayout> LayoutOf(const KernelFamily& f) {
  FamilyLayout l;
  if (f.name() == "gemm.ffma" || f.name() == "conv.ffma") {
    l.kind = "Kind::kFfma";
    l.tile_m = f.ParamIndex("ML");
    l.tile_n = f.ParamIndex("NL");
    l.step_k = f.ParamIndex("U");
    l.split_k = f.ParamIndex("KG");
  } else if (f.name() == "gemm.mma") {
    l.kind = "Kind::kMma";
    l.tile_m = f.ParamIndex("bm");
    l.tile_n = f.ParamIndex("bn");
    l.step_k = f.ParamIndex("bk");
    l.split_k = f.ParamIndex("kg");
    l.split_reduce = f.ParamIndex("sk");
  } else {
    return InvalidArgument("family " + std::string(f.name()) +
                           ": the exported header cannot check its rules; "
                           "export its op without it");
  }
  if (l.tile_m < 0 || l.tile_n < 0 || l.step_k < 0 || l.split_k < 0)
    return InvalidArgument("family " + std::string(f.name()) + ": parameters renamed");
  return l;
}

// The built-in device profile of the exporting device's compute capability.
std::optional<DeviceProfile> ProfileOf(const v1::DeviceFingerprint& d) {
  for (const DeviceProfile& p : BuiltinProfiles()) {
    if (p.cc_major == d.cc_major() && p.cc_minor == d.cc_minor()) {
      DeviceProfile out = p;
      if (d.sm_count() > 0) out.sm_count = d.sm_count();
      return out;
    }
  }
  return std::nullopt;
}

// The header's per-family tables, and the rule masks of configurations.
class HeaderFamilies {
 public:
  HeaderFamilies(Op op, std::optional<KernelLimits> limits)
      : op_(op), limits_(limits) {}

  // The family's index in the header's table, adding it.
  StatusOr<int> Index(const std::string& name) {
    for (size_t i = 0; i < used_.size(); ++i)
      if (used_[i]->name() == name) return static_cast<int>(i);
    BT_ASSIGN_OR_RETURN(const KernelFamily* f, FindFamily(name));
    if (f->op() != op_) {
      return InvalidArgument("family " + name + " computes " +
                             std::string(ToString(f->op())) + ", not " +
                             std::string(ToString(op_)));
    }
    BT_ASSIGN_OR_RETURN(FamilyLayout layout, LayoutOf(*f));
    used_.push_back(f);
    layouts_.push_back(layout);
    return static_cast<int>(used_.size() - 1);
  }
  const KernelFamily& family(int i) const { return *used_[i]; }

  // A problem of the header's gemm.mma RuleClass c: bit 5 A transposed,
  // bit 4 B transposed, bits 2-3 and 0-1 the copy widths of A and B
  // (2 << bits bytes). None where the width is below the element size.
  static std::optional<Problem> MmaClassProblem(int c, DType precision) {
    const int64_t es = SizeOf(precision);
    const int64_t copy_a = int64_t{2} << ((c >> 2) & 3);
    const int64_t copy_b = int64_t{2} << (c & 3);
    if (copy_a < es || copy_b < es) return std::nullopt;
    GemmContext g;
    g.m = g.n = g.k = 1024;
    g.layout_a = (c & 32) ? Layout::kT : Layout::kN;
    g.layout_b = (c & 16) ? Layout::kT : Layout::kN;
    g.dtype = precision;
    Problem problem(g);
    // ld * es = 1024 * es + copy: a multiple of copy, not of 2 * copy.
    problem.lda = 1024 + (copy_a < 16 ? copy_a / es : 0);
    problem.ldb = 1024 + (copy_b < 16 ? copy_b / es : 0);
    return problem;
  }

  // A problem of the header's ffma RuleClass c: bit 5 A transposed, bit 4
  // B transposed, bit 1 A's contiguous dimension a multiple of 4, bit 0
  // B's. A convolution's implicit GEMM is NN in the header's view, its K
  // (C*R*S) A's contiguous dimension and its N (the filters) B's. None
  // where no problem has those bits (NT with A's and B's K bits apart).
  std::optional<Problem> FfmaClassProblem(int c) const {
    if (c & 12) return std::nullopt;
    const bool a_t = c & 32, b_t = c & 16, a4 = c & 2, b4 = c & 1;
    if (op_ == Op::kConv) {
      if (a_t || b_t) return std::nullopt;
      ConvContext cv;
      cv.n = 1;
      cv.h = cv.w = 56;
      cv.c = a4 ? 64 : 3;  // C*R*S = 576 or 27
      cv.k = b4 ? 64 : 63;
      cv.r = cv.s = 3;
      cv.pad_h = cv.pad_w = 1;
      return Problem(Context(cv));
    }
    // The dimension each operand runs along, and whether it must be a
    // multiple of 4; K may be asked for by both.
    GemmContext g;
    g.m = g.n = g.k = 1024;
    g.layout_a = a_t ? Layout::kT : Layout::kN;
    g.layout_b = b_t ? Layout::kT : Layout::kN;
    int64_t* dim_a = a_t ? &g.m : &g.k;
    int64_t* dim_b = b_t ? &g.k : &g.n;
    if (dim_a == dim_b && a4 != b4) return std::nullopt;
    if (!a4) *dim_a = 1023;
    if (!b4) *dim_b = 1023;
    return Problem(g);
  }

  // `{family, {params...}, rules}`: the rule mask has bit c set where the
  // family's device rules accept `params` in `precision` on problems of
  // RuleClass c. For gemm.mma, every rule but "grid" (which the header
  // computes) depends on the problem only through the precision, the
  // layouts and the copy widths CopyBytes(lda), CopyBytes(ldb)
  // (kernels/gemm_mma.cc MakeTiling): each class is evaluated on one
  // problem with those. The ffma families' rules likewise, on the classes
  // of FfmaClassProblem.
  StatusOr<std::string> Row(int index, DType precision, const Params& params) {
    const KernelFamily& f = *used_[index];
    BT_RETURN_IF_ERROR(f.ValidateParams(params, "config"));
    uint64_t mask = 0;
    const bool mma = layouts_[index].kind == "Kind::kMma";
    if (!limits_) {
      if (mma) {
        return FailedPrecondition(
            "no built-in device profile has the exporting device's compute "
            "capability: the header cannot check " + std::string(f.name()) +
            "'s hardware rules");
      }
      mask = ~uint64_t{0};
    } else {
      // Each class of the header's RuleClass is evaluated on one problem of
      // it (MmaClassProblem, FfmaClassProblem); "grid" the header computes,
      // and ffma's "addressing" looks at the problem alone.
      for (int c = 0; c < 64; ++c) {
        const std::optional<Problem> problem =
            mma ? MmaClassProblem(c, precision) : FfmaClassProblem(c);
        if (!problem) continue;  // no such problem
        bool ok = true;
        for (int r = 0; ok && r < static_cast<int>(f.rules().size()); ++r) {
          if (f.rules()[r] != "grid" && f.rules()[r] != "addressing")
            ok = f.Passes(r, *problem, params, *limits_);
        }
        if (ok) mask |= uint64_t{1} << c;
      }
    }
    std::string out = "{" + std::to_string(index) + ", {";
    for (int i = 0; i < kMaxFamilyParams; ++i)
      out += (i ? ", " : "") + std::to_string(i < params.size ? params[i] : 0);
    char hex[32];
    std::snprintf(hex, sizeof(hex), "0x%llxull", static_cast<unsigned long long>(mask));
    return out + "}, " + hex + "}";
  }

  // The table, `k<Op>Families[]`, ended by a null name.
  std::string Table(const std::string& op) const {
    std::ostringstream out;
    for (size_t i = 0; i < used_.size(); ++i) {
      const KernelFamily& f = *used_[i];
      const std::string id = FamilyIdent(f.name());
      out << "inline constexpr const char* k" << id << "ParamNames[] = {";
      for (size_t p = 0; p < f.params().size(); ++p)
        out << (p ? ", " : "") << '"' << f.params()[p].name << '"';
      out << "};\ninline constexpr bool k" << id << "LogFeature[] = {";
      for (size_t p = 0; p < f.params().size(); ++p)
        out << (p ? ", " : "") << (f.params()[p].log_feature ? "true" : "false");
      out << "};\n";
    }
    out << "inline constexpr Family k" << op << "Families[] = {\n";
    for (size_t i = 0; i < used_.size(); ++i) {
      const KernelFamily& f = *used_[i];
      const FamilyLayout& l = layouts_[i];
      const std::string id = FamilyIdent(f.name());
      out << "    {\"" << f.name() << "\", " << f.version() << ", " << f.params().size()
          << ", k" << id << "ParamNames, k" << id << "LogFeature, " << l.kind << ", "
          << l.tile_m << ", " << l.tile_n << ", " << l.step_k << ", " << l.split_k
          << ", " << l.split_reduce << "},\n";
    }
    out << "    {nullptr, 0, 0, nullptr, nullptr, Kind::kFfma, 0, 0, 0, 0, -1},\n};\n";
    return out.str();
  }

 private:
  Op op_;
  std::optional<KernelLimits> limits_;
  std::vector<const KernelFamily*> used_;
  std::vector<FamilyLayout> layouts_;
};

// One context feature of the embedded models as a C++ expression over the
// names of the predict functions (m, n, k, layout; or shape and its output
// size p, q). INVALID_ARGUMENT for a feature the header cannot compute.
StatusOr<std::string> FeatureExpression(Op op, const std::string& feature) {
  if (op == Op::kGemm && feature == "a_transposed")
    return std::string("(layout == Layout::TN || layout == Layout::TT) ? 1.f : 0.f");
  if (op == Op::kGemm && feature == "b_transposed")
    return std::string("(layout == Layout::NT || layout == Layout::TT) ? 1.f : 0.f");
  std::string_view v = feature;
  const bool log2 = v.substr(0, 5) == "log2_";
  if (log2) v.remove_prefix(5);
  const bool plus_one = log2 && v.substr(0, 3) == "1p_";
  if (plus_one) v.remove_prefix(3);
  std::string var(v);
  static const char* const kGemm[] = {"m", "n", "k"};
  static const char* const kConv[] = {"n", "c", "k", "r", "s", "stride_h",
                                      "stride_w", "dilation_h", "dilation_w",
                                      "pad_h", "pad_w", "p", "q"};
  bool known = false;
  if (op == Op::kGemm) {
    for (const char* name : kGemm) known = known || var == name;
  } else {
    for (const char* name : kConv) known = known || var == name;
    if (var != "p" && var != "q") var = "shape." + var;
  }
  if (!log2 || !known) {
    return InvalidArgument("feature '" + feature +
                           "': the exported header cannot compute it");
  }
  return "Log2f(" + std::string(plus_one ? "1 + " : "") + var + ")";
}

// `<op>ContextFeatures`: the context's features (ContextFeatureNames)
// written from out[0].
StatusOr<std::string> ContextFeatures(Op op) {
  const std::vector<std::string>& names = ContextFeatureNames(op);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    BT_ASSIGN_OR_RETURN(std::string term, FeatureExpression(op, names[i]));
    out += "  out[" + std::to_string(i) + "] = " + term + ";\n";
  }
  return out;
}

const char* LayoutName(const GemmContext& g) {
  static const char* const kNames[2][2] = {{"NN", "NT"}, {"TN", "TT"}};
  return kNames[g.layout_a == Layout::kT][g.layout_b == Layout::kT];
}

void WriteProvenance(std::ostream& out, const HeaderSpec& spec,
                     const std::vector<const v1::Model*>& models,
                     const std::string& file_op, const std::string& precisions,
                     const std::string& left_out) {
  const v1::DeviceFingerprint& d = spec.device;
  std::map<std::string, int> sources;
  for (const HeaderEntry& e : spec.entries) ++sources[e.source];
  out << "// Tuned " << file_op << " configurations (" << precisions
      << ") from blocktune. Generated; do not edit.\n"
      << "//\n"
      << "// device:  " << d.name() << " (sm_" << d.cc_major() << d.cc_minor()
      << ", " << d.sm_count() << " SMs)\n"
      << "// driver:  " << (d.driver_version().empty() ? "unknown" : d.driver_version())
      << ", CUDA " << (d.cuda_version().empty() ? "unknown" : d.cuda_version()) << "\n"
      << "// ptxas:   " << (d.ptxas_version().empty() ? "unknown" : d.ptxas_version()) << "\n";
  if (models.empty()) out << "// model:   none (exported without --with-model)\n";
  for (const v1::Model* m : models) {
    auto key = HeaderModelKey(*m, spec.op);
    out << "// model:   " << m->id() << " (hidden layers " << m->architecture()
        << ", libtorch "
        << (m->libtorch_version().empty() ? "?" : m->libtorch_version()) << ", "
        << m->training_samples() << " training samples; "
        << (key.ok() ? std::string(key->family->name()) + " " +
                           std::string(ToString(key->precision))
                     : "?")
        << ")\n"
        << "//          " << m->training_set() << "\n";
  }
  out << "// date:    " << spec.generated_utc << "\n"
      << "// command: " << spec.command << "\n"
      << "// answers: " << spec.entries.size() << " (";
  bool first = true;
  for (const auto& [source, n] : sources) {
    out << (first ? "" : ", ") << source << " " << n;
    first = false;
  }
  out << "), " << spec.candidates.size() << " candidate configurations\n"
      << left_out
      << "//\n"
      << "// Self-contained C++17; needs only the standard library.\n"
      << "//\n";
}

}  // namespace

bool HeaderExpresses(const std::string& family) {
  auto f = FindFamily(family);
  return f.ok() && LayoutOf(**f).ok();
}

HeaderSpec LeaveOutInexpressible(const HeaderSpec& given, std::string* note,
                                  std::vector<std::string>* families) {
  HeaderSpec spec = given;
  std::map<std::string, std::array<int, 3>> left;  // answers, candidates, models
  auto expressible = [](const std::string& name) {
    auto f = FindFamily(name);
    // An unknown family stays, so the checks below name it.
    return !f.ok() || LayoutOf(**f).ok();
  };
  spec.entries.clear();
  for (const HeaderEntry& e : given.entries) {
    if (expressible(e.config.family)) spec.entries.push_back(e);
    else ++left[e.config.family][0];
  }
  spec.candidates.clear();
  for (const HeaderCandidate& c : given.candidates) {
    if (expressible(c.config.family)) spec.candidates.push_back(c);
    else ++left[c.config.family][1];
  }
  spec.models.clear();
  for (const v1::Model& m : given.models) {
    auto key = HeaderModelKey(m, given.op);
    if (!key.ok() || expressible(std::string(key->family->name()))) {
      spec.models.push_back(m);
    } else {
      ++left[std::string(key->family->name())][2];
    }
  }
  for (const auto& [family, n] : left) {
    if (families) families->push_back(family);
    *note += "// left out: " + family + " (" + std::to_string(n[0]) +
             " answers, " + std::to_string(n[1]) + " candidates, " +
             std::to_string(n[2]) +
             " models): the header cannot check its rules or launch it;\n"
             "//           its contexts are answered from the other families\n";
  }
  return spec;
}

StatusOr<std::string> WriteTunedHeader(const HeaderSpec& given) {
  std::string left_out;
  const HeaderSpec spec = LeaveOutInexpressible(given, &left_out);
  const bool gemm = spec.op == Op::kGemm;
  const std::string op = gemm ? "Gemm" : "Conv";
  const std::string guard = gemm ? "BLOCKTUNE_TUNED_GEMM_H_" : "BLOCKTUNE_TUNED_CONV_H_";
  std::optional<KernelLimits> limits;
  if (auto profile = ProfileOf(spec.device)) limits = profile->Limits();
  HeaderFamilies families(spec.op, limits);

  // Models: one per (precision, family), in precision then family order.
  std::vector<const v1::Model*> models;
  std::vector<HeaderModel> model_keys;
  {
    std::map<std::pair<int, std::string>, const v1::Model*> by_key;
    for (const v1::Model& m : spec.models) {
      BT_ASSIGN_OR_RETURN(HeaderModel key, HeaderModelKey(m, spec.op));
      if (key.family->op() != spec.op || !key.family->Implements(key.precision)) {
        return InvalidArgument("model " + std::to_string(m.id()) + " of " +
                               std::string(key.family->name()) + " " +
                               std::string(ToString(key.precision)) + " in a " +
                               std::string(ToString(spec.op)) + " header");
      }
      const int order = static_cast<int>(
          std::find(std::begin(kHeaderPrecisions), std::end(kHeaderPrecisions), key.precision) -
          std::begin(kHeaderPrecisions));
      auto [it, fresh] = by_key.emplace(
          std::pair{order, std::string(key.family->name())}, &m);
      if (!fresh) {
        return InvalidArgument("models " + std::to_string(it->second->id()) + " and " +
                               std::to_string(m.id()) + ": two of " +
                               std::string(key.family->name()) + " " +
                               std::string(ToString(key.precision)));
      }
    }
    for (const auto& [key, m] : by_key) {
      models.push_back(m);
      model_keys.push_back(*HeaderModelKey(*m, spec.op));
    }
  }

  // The precisions: those of the answers and the models.
  std::set<DType> precisions;
  for (const HeaderEntry& e : spec.entries) {
    if (OpOf(e.context) != spec.op) {
      return InvalidArgument("entries: a " + std::string(ToString(OpOf(e.context))) +
                             " context in a " + std::string(ToString(spec.op)) +
                             " header");
    }
    precisions.insert(DTypeOf(e.context));
  }
  for (const HeaderModel& k : model_keys) precisions.insert(k.precision);
  if (precisions.empty()) {
    return InvalidArgument(
        "entries: a header needs at least one answer or model" +
        std::string(left_out.empty()
                        ? ""
                        : " of a family it can express; " +
                              left_out.substr(3, left_out.find(';') - 3)));
  }
  std::string precision_names;
  for (DType d : kHeaderPrecisions) {
    if (precisions.count(d) == 0) continue;
    precision_names += (precision_names.empty() ? "" : ", ") + std::string(ToString(d));
  }
  for (DType d : precisions) {
    if (std::find(std::begin(kHeaderPrecisions), std::end(kHeaderPrecisions), d) ==
        std::end(kHeaderPrecisions)) {
      return InvalidArgument("entries: precision " + std::string(ToString(d)) +
                             " cannot be exported");
    }
  }

  std::ostringstream body;  // after the common part
  body << "\nnamespace blocktune {\nnamespace tuned {\nnamespace detail {\n\n";

  // The table of exported answers.
  std::ostringstream table;
  if (gemm) {
    table << "struct GemmEntry {\n  std::int64_t m, n, k;\n  Layout layout;\n"
             "  DType dtype;\n  ConfigRow config;\n  int version;\n  double seconds;\n};\n"
             "inline constexpr GemmEntry kGemmEntries[] = {\n";
  } else {
    table << "struct ConvEntry {\n  ConvShape shape;\n  DType dtype;\n  ConfigRow config;\n"
             "  int version;\n  double seconds;\n};\n"
             "inline constexpr ConvEntry kConvEntries[] = {\n";
  }
  for (const HeaderEntry& e : spec.entries) {
    BT_ASSIGN_OR_RETURN(int family, families.Index(e.config.family));
    const DType precision = DTypeOf(e.context);
    if (!families.family(family).Implements(precision)) {
      return InvalidArgument("entries: family " + e.config.family + " does not implement " +
                             std::string(ToString(precision)));
    }
    BT_ASSIGN_OR_RETURN(std::string row, families.Row(family, precision, e.config.params));
    if (gemm) {
      const auto& g = std::get<GemmContext>(e.context);
      table << "    {" << g.m << ", " << g.n << ", " << g.k << ", Layout::" << LayoutName(g);
    } else {
      const auto& c = std::get<ConvContext>(e.context);
      table << "    {{" << c.n << ", " << c.h << ", " << c.w << ", " << c.c << ", " << c.k
            << ", " << c.r << ", " << c.s << ", " << c.pad_h << ", " << c.pad_w << ", "
            << c.stride_h << ", " << c.stride_w << ", " << c.dilation_h << ", "
            << c.dilation_w << "}";
    }
    table << ", " << HeaderDTypeName(precision) << ", " << row << ", " << e.config.version << ", "
          << Num(e.seconds) << "},\n";
  }
  const std::string end_row = "{-1, {}, 0}";
  if (gemm) {
    table << "    {0, 0, 0, Layout::NN, DType::kFp32, " << end_row << ", 0, 0.0},\n};\n";
  } else {
    table << "    {ConvShape{}, DType::kFp32, " << end_row << ", 0, 0.0},\n};\n";
  }

  // Candidates of the models' (precision, family) pairs.
  std::ostringstream candidates;
  candidates << "inline constexpr Candidate k" << op << "Candidates[] = {\n";
  for (const HeaderCandidate& c : spec.candidates) {
    bool modeled = false;
    for (const HeaderModel& k : model_keys)
      modeled = modeled || (k.precision == c.precision && k.family->name() == c.config.family);
    if (!modeled) continue;
    BT_ASSIGN_OR_RETURN(int family, families.Index(c.config.family));
    BT_ASSIGN_OR_RETURN(std::string row, families.Row(family, c.precision, c.config.params));
    candidates << "    {" << HeaderDTypeName(c.precision) << ", " << row << "},\n";
  }
  candidates << "    {DType::kFp32, " << end_row << "},\n};\n";

  // Defaults: per precision its default family's DefaultCandidates, in order.
  std::ostringstream defaults;
  defaults << "// Per precision, its default family's default configurations, best\n"
              "// first (KernelFamily::DefaultCandidates).\n"
              "inline constexpr Candidate k" << op << "Defaults[] = {\n";
  for (DType d : kHeaderPrecisions) {
    auto family = DefaultFamily(spec.op, d);
    if (!family.ok()) continue;
    // A precision not exported whose family cannot run on the device gets
    // no default: its lookups say so (a Config with no family).
    const int cc = spec.device.cc_major() * 10 + spec.device.cc_minor();
    if (precisions.count(d) == 0 && cc > 0 && (*family)->min_compute_capability() > cc)
      continue;
    auto index = families.Index(std::string((*family)->name()));
    if (!index.ok() && precisions.count(d) == 0) continue;  // not expressible
    if (!index.ok()) return index.status();
    for (const Params& p : (*family)->DefaultCandidates()) {
      auto row = families.Row(*index, d, p);
      if (!row.ok() && precisions.count(d) == 0) break;
      if (!row.ok()) return row.status();
      defaults << "    {" << HeaderDTypeName(d) << ", " << *row << "},\n";
    }
  }
  defaults << "    {DType::kFp32, " << end_row << "},\n};\n";

  // Models.
  std::ostringstream model_text;
  if (!models.empty()) {
    std::string table_rows;
    for (size_t i = 0; i < models.size(); ++i) {
      const HeaderModel& k = model_keys[i];
      BT_ASSIGN_OR_RETURN(int family, families.Index(std::string(k.family->name())));
      // "kGemmMmaBf16": HeaderDTypeName is "DType::kBf16".
      const std::string prefix =
          "k" + FamilyIdent(k.family->name()) + HeaderDTypeName(k.precision).substr(8);
      int feature_set = kLogFeatures, wave_sms = 0;
      BT_RETURN_IF_ERROR(WriteHeaderModel(model_text, *models[i], *k.family, prefix,
                                          &feature_set, &wave_sms));
      table_rows += "    {" + HeaderDTypeName(k.precision) + ", " + std::to_string(family) +
                    ", " + prefix.substr(1) + "LnFlops, " + std::to_string(feature_set) +
                    ", " + std::to_string(wave_sms) + "},\n";
    }
    model_text << "\ninline constexpr Model k" << op << "Models[] = {\n"
               << table_rows << "    {DType::kFp32, -1, nullptr, 0, 0},\n};\n";
  }

  body << families.Table(op) << "\n" << table.str() << candidates.str() << defaults.str()
       << model_text.str();

  BT_ASSIGN_OR_RETURN(std::string context_features, ContextFeatures(spec.op));
  const int context_count = static_cast<int>(ContextFeatureNames(spec.op).size());
  const bool with_models = !models.empty();
  const int shape_count = static_cast<int>(ShapeFeatureNames().size());
  const int align_count = static_cast<int>(AlignFeatureNames(spec.op).size());
  const std::string feature_size =
      "kMaxParams + " + std::to_string(context_count) + " + " +
      std::to_string(shape_count) + " + " + std::to_string(align_count) + " + " +
      std::to_string(WaveFeatureNames(spec.op).size());
  const std::string align_at =
      "f.param_count + " + std::to_string(context_count + shape_count);
  const std::string wave_at =
      "f.param_count + " + std::to_string(context_count + shape_count + align_count);
  const std::string wide = std::to_string(kWideAlignLog2);
  if (gemm) {
    body << R"(
inline double GemmOperandBytes(const GemmView& g) {
  return ElementBytes(g.dtype) * (double(g.m) * double(g.n) + double(g.m) * double(g.k) +
                                  double(g.k) * double(g.n));
}

inline GemmView GemmProblem(std::int64_t m, std::int64_t n, std::int64_t k, Layout layout,
                            DType dtype) {
  return {m, n, k, layout == Layout::TN || layout == Layout::TT,
          layout == Layout::NT || layout == Layout::TT, dtype};
}

inline double GemmDistance(const GemmEntry& e, std::int64_t m, std::int64_t n,
                           std::int64_t k, Layout layout) {
  const int a = layout == Layout::TN || layout == Layout::TT;
  const int b = layout == Layout::NT || layout == Layout::TT;
  const int ea = e.layout == Layout::TN || e.layout == Layout::TT;
  const int eb = e.layout == Layout::NT || e.layout == Layout::TT;
  return SqLog2Ratio(double(e.m), double(m)) + SqLog2Ratio(double(e.n), double(n)) +
         SqLog2Ratio(double(e.k), double(k)) + (a != ea) + (b != eb);
}

// The context's features (KernelFamily::Features after the parameters').
inline void GemmContextFeatures(std::int64_t m, std::int64_t n, std::int64_t k,
                                Layout layout, float* out) {
)" << context_features << "}\n";
    if (with_models) {
      body << R"(
// Predicted seconds of `row` by `model` for C = op(A) op(B) of m x n x k.
inline double GemmPredict(const Model& model, const std::int64_t* params, std::int64_t m,
                          std::int64_t n, std::int64_t k, Layout layout) {
  const Family& f = kGemmFamilies[model.family];
  float features[)" << feature_size << R"(];
  ParamFeatures(f, params, features);
  GemmContextFeatures(m, n, k, layout, features + f.param_count);
  if (model.feature_set >= 2)
    ShapeFeatures(f, params, m, n, k, features + f.param_count + )" +
                std::to_string(context_count) + R"();
  if (model.feature_set >= 3) {
    // Tight rows: A N is m x k, A T k x m, B N k x n, B T n x k.
    const GemmView v = GemmProblem(m, n, k, layout, model.dtype);
    const double bytes = ElementBytes(model.dtype);
    float* align = features + )" + align_at + R"(;
    align[0] = AlignFeature(v.a_t ? m : k, bytes);
    align[1] = AlignFeature(v.b_t ? k : n, bytes);
    align[2] = AlignFeature(n, bytes);
    if (model.feature_set >= 4) {
      float* wave = features + )" + wave_at + R"(;
      wave[0] = WaveFill(f, params, m, n, model.wave_sms);
      wave[1] = RowAlignFeature(v.a_t ? m : k, bytes, )" + wide + R"();
      wave[2] = RowAlignFeature(v.b_t ? k : n, bytes, )" + wide + R"();
      wave[3] = RowAlignFeature(n, bytes, )" + wide + R"();
    }
  }
  const double flops = 2.0 * double(m) * double(n) * double(k);
  return flops / std::exp(static_cast<double>(model.ln_flops(features)));
}
)";
    }
    body << "\n}  // namespace detail\n";
    if (with_models) {
      body << R"(
// The embedded model's predicted time, in seconds, of `config` (its family
// and parameters) for C = op(A) op(B) of m x n x k in `dtype`, as a
// blocktuned query reports it (an ensemble's mean charged its members'
// spread, the time answers are ranked by); 0 where the header has no model
// of that precision and family.
inline double gemm_predict_seconds(std::int64_t m, std::int64_t n, std::int64_t k,
                                   Layout layout, DType dtype, const Config& config) {
  const int family = detail::FamilyIndex(detail::kGemmFamilies, config.family);
  for (const detail::Model* model = detail::kGemmModels; model->family >= 0; ++model) {
    if (model->dtype == dtype && model->family == family)
      return detail::GemmPredict(*model, config.params, m, n, k, layout);
  }
  return 0;
}

// The same for a block shape of gemm.ffma in fp32.
inline double gemm_predict_seconds(std::int64_t m, std::int64_t n, std::int64_t k,
                                   Layout layout, const BlockShape& block) {
  const Config c = detail::BlockConfig("gemm.ffma", block);
  return gemm_predict_seconds(m, n, k, layout, DType::kFp32, c);
}
)";
    }
    body << R"(
// The configuration to run C = op(A) op(B) of m x n x k in `dtype` with
// (see the top of this file for the order of preference).
inline Config gemm_config(std::int64_t m, std::int64_t n, std::int64_t k, Layout layout,
                          DType dtype) {
  // No such product: no configuration (and no overflow in the arithmetic
  // below, whose sizes stay under 2^31 as blocktuned's do).
  const std::int64_t kMaxDim = 2147483647;
  if (m < 1 || n < 1 || k < 1 || m > kMaxDim || n > kMaxDim || k > kMaxDim) return Config{};
  for (const detail::GemmEntry* e = detail::kGemmEntries; e->config.family >= 0; ++e) {
    if (e->m == m && e->n == n && e->k == k && e->layout == layout && e->dtype == dtype) {
      return detail::MakeConfig(detail::kGemmFamilies, e->config, Match::kExact,
                                e->seconds, e->version);
    }
  }
  const detail::GemmView view = detail::GemmProblem(m, n, k, layout, dtype);
  const double operands = detail::GemmOperandBytes(view);
)";
    if (with_models) {
      body << R"(  auto predict = [&](const detail::Model& model, const detail::ConfigRow& row) {
    return detail::GemmPredict(model, row.params, m, n, k, layout);
  };
)";
    }
    body << TunedLookupText(op, with_models, "detail::GemmDistance(*e, m, n, k, layout)");
    body << R"(
// fp32 (gemm.ffma), as headers before precisions declared it.
inline Config gemm_config(std::int64_t m, std::int64_t n, std::int64_t k,
                          Layout layout = Layout::NN) {
  return gemm_config(m, n, k, layout, DType::kFp32);
}
)";
  } else {
    body << R"(
inline std::int64_t ConvP(const ConvShape& s) {
  return (s.h + 2 * s.pad_h - s.dilation_h * (s.r - 1) - 1) / s.stride_h + 1;
}
inline std::int64_t ConvQ(const ConvShape& s) {
  return (s.w + 2 * s.pad_w - s.dilation_w * (s.s - 1) - 1) / s.stride_w + 1;
}
inline bool SameShape(const ConvShape& a, const ConvShape& b) {
  return a.n == b.n && a.h == b.h && a.w == b.w && a.c == b.c && a.k == b.k &&
         a.r == b.r && a.s == b.s && a.pad_h == b.pad_h && a.pad_w == b.pad_w &&
         a.stride_h == b.stride_h && a.stride_w == b.stride_w &&
         a.dilation_h == b.dilation_h && a.dilation_w == b.dilation_w;
}
inline double ConvDistance(const ConvShape& a, const ConvShape& b) {
  return SqLog2Ratio(double(a.n), double(b.n)) + SqLog2Ratio(double(a.h), double(b.h)) +
         SqLog2Ratio(double(a.w), double(b.w)) + SqLog2Ratio(double(a.c), double(b.c)) +
         SqLog2Ratio(double(a.k), double(b.k)) + SqLog2Ratio(double(a.r), double(b.r)) +
         SqLog2Ratio(double(a.s), double(b.s)) + (a.pad_h != b.pad_h) +
         (a.pad_w != b.pad_w) + (a.stride_h != b.stride_h) +
         (a.stride_w != b.stride_w) + (a.dilation_h != b.dilation_h) +
         (a.dilation_w != b.dilation_w);
}
// The implicit GEMM: M = N*P*Q, N = K, K = C*R*S.
inline GemmView ConvProblem(const ConvShape& s, DType dtype) {
  return {s.n * ConvP(s) * ConvQ(s), s.k, s.c * s.r * s.s, false, false, dtype};
}
inline double ConvOperandBytes(const ConvShape& s, DType dtype) {
  const double m = double(s.n * ConvP(s) * ConvQ(s));
  return ElementBytes(dtype) * (m * double(s.k) +
                                double(s.n) * double(s.h) * double(s.w) * double(s.c) +
                                double(s.k) * double(s.r) * double(s.s) * double(s.c));
}

// The context's features (KernelFamily::Features after the parameters').
inline void ConvContextFeatures(const ConvShape& shape, float* out) {
  const std::int64_t p = ConvP(shape), q = ConvQ(shape);
)" << context_features << "}\n";
    if (with_models) {
      body << R"(
inline double ConvPredict(const Model& model, const std::int64_t* params,
                          const ConvShape& shape) {
  const Family& f = kConvFamilies[model.family];
  float features[)" << feature_size << R"(];
  ParamFeatures(f, params, features);
  ConvContextFeatures(shape, features + f.param_count);
  const std::int64_t p = ConvP(shape), q = ConvQ(shape);
  if (model.feature_set >= 2)
    ShapeFeatures(f, params, shape.n * p * q, shape.k, shape.c * shape.r * shape.s,
                  features + f.param_count + )" +
                std::to_string(context_count) + R"();
  if (model.feature_set >= 3) {
    const double bytes = ElementBytes(model.dtype);
    features[)" + align_at + R"(] = AlignFeature(shape.c, bytes);
    features[)" + align_at + R"( + 1] = AlignFeature(shape.k, bytes);
    if (model.feature_set >= 4) {
      features[)" + wave_at + R"(] = WaveFill(f, params, shape.n * p * q, shape.k, model.wave_sms);
      features[)" + wave_at + R"( + 1] = RowAlignFeature(shape.c, bytes, )" + wide + R"();
      features[)" + wave_at + R"( + 2] = RowAlignFeature(shape.k, bytes, )" + wide + R"();
    }
  }
  const double flops = 2.0 * double(shape.n * p * q) * double(shape.k) *
                       double(shape.c * shape.r * shape.s);
  return flops / std::exp(static_cast<double>(model.ln_flops(features)));
}
)";
    }
    body << "\n}  // namespace detail\n";
    if (with_models) {
      body << R"(
// The embedded model's predicted time, in seconds, of `config` for the
// convolution `shape` in `dtype`, as a blocktuned query reports it (the
// ranking time, as gemm_predict_seconds); 0 where the header has no model
// of that precision and family.
inline double conv_predict_seconds(const ConvShape& shape, DType dtype,
                                   const Config& config) {
  const int family = detail::FamilyIndex(detail::kConvFamilies, config.family);
  for (const detail::Model* model = detail::kConvModels; model->family >= 0; ++model) {
    if (model->dtype == dtype && model->family == family)
      return detail::ConvPredict(*model, config.params, shape);
  }
  return 0;
}

// The same for a block shape of conv.ffma in fp32.
inline double conv_predict_seconds(const ConvShape& shape, const BlockShape& block) {
  const Config c = detail::BlockConfig("conv.ffma", block);
  return conv_predict_seconds(shape, DType::kFp32, c);
}
)";
    }
    body << R"(
// The configuration to run the convolution `shape` in `dtype` with (see the
// top of this file for the order of preference).
inline Config conv_config(const ConvShape& shape, DType dtype) {
  // No such convolution: no configuration (sizes as blocktuned takes them;
  // the output at least 1 x 1).
  const std::int64_t kMaxDim = 2147483647, kMaxWindow = 65535;
  const std::int64_t sizes[] = {shape.n, shape.h, shape.w, shape.c, shape.k};
  for (std::int64_t v : sizes)
    if (v < 1 || v > kMaxDim) return Config{};
  const std::int64_t windows[] = {shape.r, shape.s, shape.stride_h, shape.stride_w,
                                  shape.dilation_h, shape.dilation_w};
  for (std::int64_t v : windows)
    if (v < 1 || v > kMaxWindow) return Config{};
  if (shape.pad_h < 0 || shape.pad_w < 0 || shape.pad_h > kMaxWindow ||
      shape.pad_w > kMaxWindow || detail::ConvP(shape) < 1 || detail::ConvQ(shape) < 1)
    return Config{};
  for (const detail::ConvEntry* e = detail::kConvEntries; e->config.family >= 0; ++e) {
    if (e->dtype == dtype && detail::SameShape(e->shape, shape)) {
      return detail::MakeConfig(detail::kConvFamilies, e->config, Match::kExact,
                                e->seconds, e->version);
    }
  }
  const detail::GemmView view = detail::ConvProblem(shape, dtype);
  const double operands = detail::ConvOperandBytes(shape, dtype);
)";
    if (with_models) {
      body << R"(  auto predict = [&](const detail::Model& model, const detail::ConfigRow& row) {
    return detail::ConvPredict(model, row.params, shape);
  };
)";
    }
    body << TunedLookupText(op, with_models, "detail::ConvDistance(e->shape, shape)");
    body << R"(
// fp32 (conv.ffma), as headers before precisions declared it.
inline Config conv_config(const ConvShape& shape) {
  return conv_config(shape, DType::kFp32);
}
)";
  }
  body << "\n}  // namespace tuned\n}  // namespace blocktune\n\n#endif  // " << guard
       << "\n";

  std::ostringstream out;
  WriteProvenance(out, spec, models, gemm ? "GEMM" : "convolution", precision_names,
                  left_out);
  const std::string call = gemm ? "gemm_config(m, n, k, layout, dtype)" : "conv_config(shape, dtype)";
  out << "// blocktune::tuned::" << call << " returns, in order:\n"
      << "//   kExact     the answer exported for exactly this shape and precision;\n";
  if (with_models) {
    out << "//   kPredicted the candidate configuration the embedded models predict\n"
           "//              fastest, over the precision's families with a model,\n"
           "//              among those that fit the shape;\n";
  }
  out << "//   kNearest   the answer of the nearest exported shape of the precision\n"
         "//              whose configuration fits. Distance: the sum over "
      << (gemm ? "M, N and K" : "N, H, W, C, K, R and S")
      << " of the\n"
         "//              squared log2 ratio, plus 1 for every "
      << (gemm ? "operand layout" : "pad, stride or dilation")
      << " that differs;\n"
         "//   kDefault   the precision's default family's first default\n"
         "//              configuration that runs, else its first.\n"
         "// A configuration fits when a split leaves every program at least one\n"
         "// reduction step (K_G * U <= K), the grid fits, the device's rules\n"
         "// hold, and the K_G partial sums fit in 1 GiB with the operands.\n"
         "// A shape blocktuned would refuse (a size below 1 or above 2^31 - 1, no\n"
         "// output) gets Config{}: family null, as a precision with no family.\n"
         "// The fp32 forms without a dtype are those of headers before precisions.\n"
      << "#ifndef " << guard << "\n#define " << guard << "\n\n"
      << "#include <cmath>\n#include <cstddef>\n#include <cstdint>\n#include <cstring>\n\n"
      << TunedCommonText() << body.str();
  return out.str();
}

}  // namespace blocktune
