// Helpers the families' KernelFamily::ValidateParams share (family_mma.cc,
// family_wgmma.cc): the parameter count, and the field name in a
// generator's own "params..." message.
#ifndef BLOCKTUNE_KERNELS_FAMILY_PARAMS_H_
#define BLOCKTUNE_KERNELS_FAMILY_PARAMS_H_

#include <string>
#include <string_view>

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
