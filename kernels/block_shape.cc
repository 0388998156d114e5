#include "kernels/block_shape.h"

#include "kernels/validate.h"

namespace blocktune {

const KernelFamily& GemmFfmaFamily();  // kernels/family_ffma.cc
const KernelFamily& ConvFfmaFamily();  // kernels/family_ffma.cc

const KernelFamily& BlockShapeFamily(Op op) {
  return op == Op::kGemm ? GemmFfmaFamily() : ConvFfmaFamily();
}

Params ToParams(const BlockShape& xb) {
  Params p;
  p.size = kBlockShapeValues;
  p[0] = xb.ml;
  p[1] = xb.nl;
  p[2] = xb.ms;
  p[3] = xb.ns;
  p[4] = xb.u;
  p[5] = xb.kg;
  p[6] = xb.st;
  return p;
}

BlockShape ToBlockShape(const Params& p) {
  return BlockShape{p[0], p[1], p[2], p[3], p[4], p[5], p.size > 6 ? p[6] : 1};
}

Status Validate(const BlockShape& xb, std::string_view field) {
  BT_RETURN_IF_ERROR(
      CheckRange(JoinField(field, "ml"), xb.ml, 1, kMaxProgramTile));
  BT_RETURN_IF_ERROR(
      CheckRange(JoinField(field, "nl"), xb.nl, 1, kMaxProgramTile));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "ms"), xb.ms, 1, xb.ml));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "ns"), xb.ns, 1, xb.nl));
  if (xb.ml % xb.ms != 0) {
    return InvalidArgument(JoinField(field, "ml") + " (" +
                           std::to_string(xb.ml) + ") must be a multiple of " +
                           JoinField(field, "ms") + " (" +
                           std::to_string(xb.ms) + ")");
  }
  if (xb.nl % xb.ns != 0) {
    return InvalidArgument(JoinField(field, "nl") + " (" +
                           std::to_string(xb.nl) + ") must be a multiple of " +
                           JoinField(field, "ns") + " (" +
                           std::to_string(xb.ns) + ")");
  }
  if (xb.ThreadsPerProgram() > kMaxThreadsPerProgram) {
    return InvalidArgument(
        std::string(field) + ": threads per program (ml/ms)*(nl/ns) must be " +
        "in [1, " + std::to_string(kMaxThreadsPerProgram) + "], got " +
        std::to_string(xb.ThreadsPerProgram()));
  }
  BT_RETURN_IF_ERROR(
      CheckRange(JoinField(field, "u"), xb.u, 1, kMaxReductionStep));
  BT_RETURN_IF_ERROR(
      CheckRange(JoinField(field, "kg"), xb.kg, 1, kMaxReductionSplit));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "st"), xb.st, 1, kMaxStages));
  return OkStatus();
}

int64_t ProgramsInGrid(const Context& ctx, const BlockShape& xb) {
  GemmShape g = ImplicitGemm(ctx);
  return ((g.m + xb.ml - 1) / xb.ml) * ((g.n + xb.nl - 1) / xb.nl) * xb.kg;
}

std::string ToString(const BlockShape& xb) {
  return "ML=" + std::to_string(xb.ml) + " NL=" + std::to_string(xb.nl) +
         " MS=" + std::to_string(xb.ms) + " NS=" + std::to_string(xb.ns) +
         " U=" + std::to_string(xb.u) + " KG=" + std::to_string(xb.kg) +
         (xb.st != 1 ? " ST=" + std::to_string(xb.st) : "");
}

StatusOr<BlockShape> BlockShapeFromString(std::string_view text) {
  BlockShape xb;
  const std::pair<std::string_view, int64_t*> keys[] = {
      {"ML", &xb.ml}, {"NL", &xb.nl}, {"MS", &xb.ms},
      {"NS", &xb.ns}, {"U", &xb.u},   {"KG", &xb.kg}, {"ST", &xb.st}};
  bool seen[7] = {};
  for (std::string_view word : SplitWords(text)) {
    size_t eq = word.find('=');
    std::string_view key = word.substr(0, eq);
    size_t index = 0;
    while (index < 7 && !EqualsIgnoreCase(keys[index].first, key)) ++index;
    if (eq == std::string_view::npos || index == 7 || seen[index]) {
      return InvalidArgument(
          "block shape: expected each of ML= NL= MS= NS= U= KG= once (and "
          "optionally ST=), got '" +
          std::string(word) + "'");
    }
    seen[index] = true;
    BT_ASSIGN_OR_RETURN(*keys[index].second,
                        ParseInt64("block shape: " + std::string(key),
                                   word.substr(eq + 1)));
  }
  for (size_t k = 0; k < 6; ++k) {  // ST= may be absent: 1
    if (!seen[k]) {
      return InvalidArgument("block shape: missing " +
                             std::string(keys[k].first) + "=");
    }
  }
  BT_RETURN_IF_ERROR(Validate(xb));
  return xb;
}

}  // namespace blocktune
