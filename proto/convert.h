// The one translation between blocktune.v1 messages and domain types.
//
// FromProto validates as it converts: a message that converts is a value the
// domain accepts, and a message that does not gets INVALID_ARGUMENT naming
// the field by its path in the request ("context.gemm.m"). Unspecified or
// unknown enum values are errors, not defaults; clients fill defaults.
#ifndef BLOCKTUNE_PROTO_CONVERT_H_
#define BLOCKTUNE_PROTO_CONVERT_H_

#include <string_view>

#include "blocktune/v1/blocktune.pb.h"
#include "kernels/block_shape.h"
#include "kernels/context.h"
#include "kernels/device.h"
#include "kernels/operation.h"
#include "kernels/status.h"
#include "tuner/campaign_spec.h"

namespace blocktune {

StatusOr<Op> FromProto(v1::Op op, std::string_view field);
StatusOr<DType> FromProto(v1::DType dtype, std::string_view field);
// A problem's precision: unspecified means fp32 (clients older than
// precisions send none); an unknown number is INVALID_ARGUMENT.
StatusOr<DType> ContextDTypeFromProto(v1::DType dtype, std::string_view field);
StatusOr<Layout> FromProto(v1::Layout layout, std::string_view field);
StatusOr<CampaignState> FromProto(v1::CampaignState state,
                                  std::string_view field);
StatusOr<Context> FromProto(const v1::Context& ctx, std::string_view field);
StatusOr<BlockShape> FromProto(const v1::BlockShape& xb,
                               std::string_view field);
StatusOr<DeviceFingerprint> FromProto(const v1::DeviceFingerprint& device,
                                      std::string_view field);
StatusOr<CampaignSpec> FromProto(const v1::CampaignSpec& spec,
                                 std::string_view field);

v1::Op ToProto(Op op);
v1::DType ToProto(DType dtype);
v1::Layout ToProto(Layout layout);
v1::CampaignState ToProto(CampaignState state);
void ToProto(const Context& ctx, v1::Context* out);
void ToProto(const BlockShape& xb, v1::BlockShape* out);
void ToProto(const DeviceFingerprint& device, v1::DeviceFingerprint* out);
void ToProto(const CampaignSpec& spec, v1::CampaignSpec* out);

}  // namespace blocktune

#endif  // BLOCKTUNE_PROTO_CONVERT_H_
