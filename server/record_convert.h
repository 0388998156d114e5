// Store records <-> blocktune.v1 messages. FromProto validates and names
// fields by their path in the request ("dataset.samples[2].context.gemm.m").
#ifndef BLOCKTUNE_SERVER_RECORD_CONVERT_H_
#define BLOCKTUNE_SERVER_RECORD_CONVERT_H_

#include <string_view>

#include "proto/convert.h"
#include "server/tuning_store.h"

namespace blocktune {

// Which rows a KernelConfig from a request may name.
enum class KernelVersions {
  kCurrent,  // a request to run or answer: 0 (or the current version) only
  kKept,     // an imported record: any version up to the current (older
             // ones stay stale); a later one is a newer blocktune's, refused
};

void ToProto(const KernelConfig& k, v1::KernelConfig* out);
// The family must be registered and of `op`; parameters by the family's
// names, each once. With kCurrent, generator_version 0 means the current
// one; with kKept it is version 0 (the first generators, stale).
StatusOr<KernelConfig> FromProto(const v1::KernelConfig& k, Op op,
                                 KernelVersions versions,
                                 std::string_view field);
// A record's kernel: `kernel` when set (and `block_shape`, when set too,
// must be the same kernel), else `block_shape` (null: an empty one, which
// fails naming the field) as the op's block-shape family at its current
// version (a dataset or client older than families).
StatusOr<KernelConfig> KernelOf(const v1::KernelConfig* kernel,
                                const v1::BlockShape* block_shape, Op op,
                                KernelVersions versions, std::string_view field);

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
