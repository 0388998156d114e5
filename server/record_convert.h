// Store records <-> blocktune.v1 messages. FromProto validates and names
// fields by their path in the request ("dataset.samples[2].context.gemm.m").
#ifndef BLOCKTUNE_SERVER_RECORD_CONVERT_H_
#define BLOCKTUNE_SERVER_RECORD_CONVERT_H_

#include <string_view>

#include "proto/convert.h"
#include "server/tuning_store.h"

namespace blocktune {

void ToProto(const SampleRecord& s, v1::Sample* out);
void ToProto(const TunedRecord& t, v1::TunedAnswer* out);
void ToProto(const ModelRecord& m, v1::Model* out);
void ToProto(const CampaignRecord& c, v1::Campaign* out);
v1::Source ToProto(TunedSource source);

StatusOr<SampleRecord> FromProto(const v1::Sample& s, std::string_view field);
StatusOr<TunedRecord> FromProto(const v1::TunedAnswer& t,
                                std::string_view field);
StatusOr<ModelRecord> FromProto(const v1::Model& m, std::string_view field);

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_RECORD_CONVERT_H_
