// Human-readable output of blocktune.v1 responses for the CLI, and JSON
// output for --json (proto3 JSON mapping, field names as in the .proto).
#ifndef BLOCKTUNE_CLIENT_PRINT_H_
#define BLOCKTUNE_CLIENT_PRINT_H_

#include <google/protobuf/message.h>

#include <ostream>
#include <string>

#include "blocktune/v1/blocktune.pb.h"

namespace blocktune {

std::string ToJson(const google::protobuf::Message& message);

// "measured", "predicted", "imported", "verified", "default".
const char* SourceName(v1::Source source);
// How a query was answered: "cached", "predicted", "verified", or for a
// fallback "nearest" / "default" / "stale".
const char* QuerySourceName(const v1::QueryResponse& response);

// "gemm.mma v3 bm=128 bn=128 ...": family, generator version, parameters
// by the family's names.
std::string KernelConfigText(const v1::KernelConfig& kernel);
// How an answer line names its configuration: for the block-shape families
// the block shape first, then family and version ("ML=64 NL=16 MS=4 NS=2
// U=8 KG=4  gemm.ffma v1"), else KernelConfigText.
std::string ConfigText(const v1::KernelConfig& kernel,
                       const v1::BlockShape* block_shape);

void Print(const v1::HealthResponse& health, std::ostream& out);
void Print(const v1::ListDevicesResponse& devices, std::ostream& out);
void Print(const v1::Campaign& campaign, std::ostream& out);
void Print(const v1::CampaignProgress& progress, std::ostream& out);
// One line of progress: "campaign 3 running [#####     ] 5120/10000
// 51.2%  103.4 samples/s  acc 27%  fail 12 (wrong_result 2, timeout 1)
// best 41.2 TFLOP/s  families gemm.ffma 3000, gemm.mma 2120  ETA 47s".
// bar_width 0 leaves the bar out.
std::string ProgressLine(const v1::CampaignProgress& progress, int bar_width);
void Print(const v1::QueryResponse& response, std::ostream& out);
void Print(const v1::TrainProgress& progress, std::ostream& out);
// GetKernel without the PTX: kernel configuration and precision, block
// shape (ffma families), entry, geometry, dynamic shared memory,
// parameters, workspace and counters, alignment.
void PrintKernelSummary(const v1::GetKernelResponse& kernel, std::ostream& out);

}  // namespace blocktune

#endif  // BLOCKTUNE_CLIENT_PRINT_H_
