// Helpers the families' KernelFamily::ValidateParams share (family_mma.cc,
// family_wgmma.cc): the parameter count, and the field name in a
// generator's own "params..." message.
#ifndef BLOCKTUNE_KERNELS_FAMILY_PARAMS_H_
#define BLOCKTUNE_KERNELS_FAMILY_PARAMS_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/family.h"
#include "kernels/status.h"

namespace blocktune {

// INVALID_ARGUMENT "<field> must have <fields> values, got <n>" unless
// `params` has exactly `fields` values.
inline Status CheckParamCount(const Params& params, int fields,
                              std::string_view field) {
  if (params.size == fields) return OkStatus();
  return InvalidArgument(std::string(field) + " must have " +
                         std::to_string(fields) + " values, got " +
                         std::to_string(params.size));
}

// INVALID_ARGUMENT "<field> must be one of {a, b, ...}<where>, got <value>"
// unless `value` is one of `values`.
inline Status CheckOneOf(std::string_view field,
                         const std::vector<int64_t>& values, int64_t value,
                         std::string_view where = "") {
  if (std::find(values.begin(), values.end(), value) != values.end())
    return OkStatus();
  std::string allowed;
  for (int64_t v : values)
    allowed += (allowed.empty() ? "" : ", ") + std::to_string(v);
  return InvalidArgument(std::string(field) + " must be one of {" + allowed +
                         "}" + std::string(where) + ", got " +
                         std::to_string(value));
}

// `field` in place of the "params" a generator's validation messages start
// with.
inline Status RenameParamsField(Status s, std::string_view field) {
  if (!s.ok() && field != "params" && s.message().rfind("params", 0) == 0)
    return InvalidArgument(std::string(field) +
                           std::string(s.message().substr(6)));
  return s;
}

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_FAMILY_PARAMS_H_
