// Header export: tuned answers (and optionally the surrogates) frozen into
// one self-contained C++17 header, so a shipped application needs neither
// the daemon nor the database.
//
// A header covers one op in one or more precisions. It declares, in
// namespace blocktune::tuned:
//   gemm_config(m, n, k, layout, dtype)  /  conv_config(ConvShape, dtype)
// (and the fp32 forms gemm_config(m, n, k, layout) / conv_config(shape) of
// headers before precisions), which return a Config naming its kernel
// family, generator version and parameters by name, in order of preference:
//   1. kExact: the table's answer for exactly this shape and precision;
//   2. kPredicted (headers written with models): the configuration the
//      embedded models predict fastest, over every family of the precision
//      that has a model, among that family's candidates (the exported
//      answers' top k) that fit;
//   3. kNearest: the answer of the table's nearest shape of the precision
//      whose configuration fits, by the daemon's distance
//      (server/fallback.h);
//   4. kDefault: the precision's default family's Default for the shape,
//      else that family's first default configuration.
// With models, gemm_predict_seconds / conv_predict_seconds evaluate the
// model of a (precision, family) for any (shape, configuration) exactly as
// the daemon does, in float.
#ifndef BLOCKTUNE_CLIENT_HEADER_EXPORT_H_
#define BLOCKTUNE_CLIENT_HEADER_EXPORT_H_

#include <string>
#include <vector>

#include "blocktune/v1/blocktune.pb.h"
#include "kernels/context.h"
#include "kernels/family.h"
#include "kernels/status.h"

namespace blocktune {

// One configuration of a registered family.
struct HeaderConfig {
  std::string family;  // "gemm.ffma", "gemm.mma"
  int version = 0;     // the generator version that produced the answer
  Params params;       // in the family's params() order
};

struct HeaderEntry {
  Context context;     // its dtype is the precision
  HeaderConfig config;
  double seconds = 0;  // measured, else predicted; 0 unknown
  std::string source;  // "measured", "predicted", "verified", "imported"...
};

// A configuration the embedded model of (precision, config.family) chooses
// among for shapes not in the table.
struct HeaderCandidate {
  DType precision = DType::kFp32;
  HeaderConfig config;
};

struct HeaderSpec {
  Op op = Op::kGemm;
  std::vector<HeaderEntry> entries;
  std::vector<HeaderCandidate> candidates;
  v1::DeviceFingerprint device;  // its compute capability picks the limits
  // --with-model: at most one per (precision, family), of `op`.
  std::vector<v1::Model> models;
  std::string command;        // the command line, for the provenance
  std::string generated_utc;  // "2026-11-22T10:00:00Z"
};

// The header's text. INVALID_ARGUMENT if the spec has neither an entry nor
// a model, names an unregistered family or one of another op, if a model's
// stored weights or normalization do not parse or do not fit its family's
// features; FAILED_PRECONDITION when a
// gemm.mma configuration needs the device's limits and no built-in profile
// has its compute capability.
// Answers, candidates and models of a family whose rules cannot be written
// into a header (only gemm.ffma, conv.ffma and gemm.mma can; gemm.wgmma
// cannot) are left out, and the header's leading comment says how many
// ("// left out: gemm.wgmma (...)"); INVALID_ARGUMENT when nothing else
// remains.
// Whether a header can check `family`'s rules and launch it (gemm.ffma,
// conv.ffma, gemm.mma; not gemm.wgmma, gemm.ffma_k, ...).
bool HeaderExpresses(const std::string& family);

// What WriteTunedHeader keeps of `spec`: answers, candidates and models of
// the families whose rules LayoutOf writes. The rest (gemm.wgmma's TMA
// launch and sm_90a rules, say) is left out: *note gets one "// left out:
// F (...)" line per family, and `families` (when given) their names.
HeaderSpec LeaveOutInexpressible(const HeaderSpec& spec, std::string* note,
                                 std::vector<std::string>* families = nullptr);

StatusOr<std::string> WriteTunedHeader(const HeaderSpec& spec);

}  // namespace blocktune

#endif  // BLOCKTUNE_CLIENT_HEADER_EXPORT_H_
