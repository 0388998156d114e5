// Header export: tuned answers (and optionally a surrogate) frozen into one
// self-contained C++17 header, so a shipped application needs neither the
// daemon nor the database.
//
// The header declares, in namespace blocktune::tuned:
//   gemm_config(m, n, k, layout)  /  conv_config(ConvShape)
// which return, in order of preference:
//   1. kExact: the table's answer for exactly this shape;
//   2. kPredicted (headers written with a model): the block shape the
//      embedded MLP predicts fastest among the table's candidate block
//      shapes (every block shape any exported answer named) that fit;
//   3. kNearest: the answer of the table's nearest shape whose block shape
//      fits, by the distance the header documents (the daemon's,
//      server/fallback.h);
//   4. kDefault: a moderate default block shape.
// With a model, gemm_predict_seconds / conv_predict_seconds evaluate it
// for any (shape, block shape) exactly as the daemon does, in float.
#ifndef BLOCKTUNE_CLIENT_HEADER_EXPORT_H_
#define BLOCKTUNE_CLIENT_HEADER_EXPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "blocktune/v1/blocktune.pb.h"
#include "kernels/block_shape.h"
#include "kernels/context.h"
#include "kernels/status.h"

namespace blocktune {

struct HeaderEntry {
  Context context;
  BlockShape block_shape;
  double seconds = 0;  // measured, else predicted; 0 unknown
  std::string source;  // "measured", "predicted", "verified", "imported"...
};

struct HeaderSpec {
  Op op = Op::kGemm;
  std::vector<HeaderEntry> entries;  // one per context
  // Block shapes the embedded model chooses among for shapes not in the
  // table (every block shape of the exported answers' top k).
  std::vector<BlockShape> candidates;
  v1::DeviceFingerprint device;
  std::optional<v1::Model> model;  // --with-model
  std::string command;             // the command line, for the provenance
  std::string generated_utc;       // "2026-11-22T10:00:00Z"
};

// The header's text. INVALID_ARGUMENT if the model's stored weights or
// normalization do not parse or do not fit the op's features.
StatusOr<std::string> WriteTunedHeader(const HeaderSpec& spec);

}  // namespace blocktune

#endif  // BLOCKTUNE_CLIENT_HEADER_EXPORT_H_
