// `blocktune export --op gemm|conv (--shapes FILE | --all-tuned)
//  [--dtype LIST] [--device NAME] [--with-model] -o tuned_gemm.h`: gathers
// the answers from the daemon (BatchQuery for the shapes of FILE, with
// fallback; or every stored answer) in the precisions asked, and with
// --with-model the newest model of each (precision, family), and writes
// the header (header_export.h).
#ifndef BLOCKTUNE_CLIENT_HEADER_EXPORT_CMD_H_
#define BLOCKTUNE_CLIENT_HEADER_EXPORT_CMD_H_

#include <string>
#include <vector>

#include "client/connection.h"
#include "kernels/context.h"

namespace blocktune {

struct HeaderExportFlags {
  std::string op;          // gemm or conv (required)
  std::string device;      // empty: the only device with answers or a model
  // Precisions, comma-separated ("fp32,bf16"); empty: with --shapes those
  // the lines name (fp32 where a line names none), with --all-tuned every
  // exported precision.
  std::string dtype;
  std::string shapes;      // a file of contexts, one per line
  bool all_tuned = false;  // every stored answer of op instead
  bool with_model = false;
  std::string out;         // the header; "" or "-": stdout
  std::string command;     // the command line, for the provenance comment
};

// Parses a shapes file: one context per line in the store's text form
// ("gemm m=4096 n=16 k=4096 layout=NT", "conv n=1 h=56 w=56 c=64 k=64 r=3
// s=3 pad=1"), '#' comments and blank lines skipped. Missing keys take
// defaults: layout=NN, dtype=fp32, pad=0, stride=1, dilation=1. Errors name
// the line.
StatusOr<std::vector<Context>> ReadShapesFile(const std::string& path, Op op);
// The same, a line without dtype= read once in each of `precisions` (fp32
// when empty); a line that names one must name one of them.
StatusOr<std::vector<Context>> ReadShapesFile(const std::string& path, Op op,
                                              const std::vector<DType>& precisions);
// "fp32,bf16" -> {kFp32, kBf16}; "" -> {}. INVALID_ARGUMENT names --dtype.
StatusOr<std::vector<DType>> ParseDTypeList(const std::string& text);

// Returns the CLI exit code.
int RunHeaderExport(Connection& conn, const HeaderExportFlags& flags);

}  // namespace blocktune

#endif  // BLOCKTUNE_CLIENT_HEADER_EXPORT_CMD_H_
