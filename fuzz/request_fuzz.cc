// Fuzzes the validation the daemon runs on requests before it touches the
// store: protobuf bytes -> FromProto (proto/convert.h, and the record
// checks of server/record_convert.h) -> the domain checks of kernels/ and
// tuner/.
//
// The first byte picks the request type; the rest is the serialized
// message, as the daemon receives it. The handlers' own checks
// (BlocktuneService::ValidateQuery and friends) are private to
// server/service.cc, whose library brings SQLite and libtorch; the few
// lines they add to the public pieces are spelled out here, with the
// limits of server/service.h. Keep them in step.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <google/protobuf/stubs/logging.h>

#include "blocktune/v1/blocktune.pb.h"
#include "kernels/gemm_ptx.h"
#include "kernels/validate.h"
#include "proto/convert.h"
#include "server/record_convert.h"
#include "tuner/device_profile.h"

namespace blocktune {
namespace {

// server/service.h
constexpr int kMaxTop = 100;
constexpr int kMaxBatchQueries = 10000;
constexpr char kDatasetFormat[] = "blocktune.dataset.v1";

void Check(bool condition) {
  if (!condition) std::abort();
}

Status CheckDeviceName(std::string_view field, const std::string& name) {
  return CheckText(field, name, 0, 256);
}

// What every handler may do with a context that validated.
void UseContext(const Context& ctx) {
  auto again = ContextFromString(ToString(ctx));
  Check(again.ok() && *again == ctx);
  v1::Context proto;
  ToProto(ctx, &proto);
  auto back = FromProto(proto, "context");
  Check(back.ok() && *back == ctx);
  (void)Flops(ctx);
  (void)MinBytes(ctx);
}

// BlocktuneService::ValidateQuery.
Status ValidateQuery(const v1::QueryRequest& req, std::string_view field) {
  BT_ASSIGN_OR_RETURN(Context ctx,
                      FromProto(req.context(), JoinField(field, "context")));
  BT_RETURN_IF_ERROR(
      CheckDeviceName(JoinField(field, "device_name"), req.device_name()));
  BT_RETURN_IF_ERROR(
      CheckRange(JoinField(field, "top"), req.top(), 0, kMaxTop));
  UseContext(ctx);
  return OkStatus();
}

Status BatchQuery(const v1::BatchQueryRequest& req) {
  BT_RETURN_IF_ERROR(
      CheckRange("queries size", req.queries_size(), 1, kMaxBatchQueries));
  for (int i = 0; i < req.queries_size(); ++i) {
    BT_RETURN_IF_ERROR(ValidateQuery(
        req.queries(i), "queries[" + std::to_string(i) + "]"));
  }
  return OkStatus();
}

// GetKernel with a block shape: its checks, then the hardware rules of
// each device the daemon knows, then the kernel itself.
Status GetKernel(const v1::GetKernelRequest& req) {
  BT_ASSIGN_OR_RETURN(Context ctx, FromProto(req.context(), "context"));
  if (!req.has_block_shape()) return OkStatus();  // answered from the store
  BT_ASSIGN_OR_RETURN(BlockShape xb,
                      FromProto(req.block_shape(), "block_shape"));
  BT_RETURN_IF_ERROR(CheckDeviceName("device_name", req.device_name()));
  if (!req.arch().empty()) BT_RETURN_IF_ERROR(CheckArch("arch", req.arch()));
  UseContext(ctx);
  Status fits = CanImplement(ctx, xb, KernelLimits{});
  for (const DeviceProfile& profile : BuiltinProfiles()) {
    Status on = CanImplement(ctx, xb, profile.Limits());
    if (on.ok()) fits = on;
  }
  if (!fits.ok()) return fits;
  BT_ASSIGN_OR_RETURN(
      GemmKernel kernel,
      GenerateKernel(ctx, xb, req.arch().empty() ? "sm_80" : req.arch()));
  Check(!kernel.ptx.empty());
  return OkStatus();
}

Status StartCampaign(const v1::StartCampaignRequest& req) {
  BT_ASSIGN_OR_RETURN(CampaignSpec spec, FromProto(req.spec(), "spec"));
  v1::CampaignSpec proto;
  ToProto(spec, &proto);
  auto back = FromProto(proto, "spec");
  Check(back.ok() && *back == spec);
  return OkStatus();
}

// Import's checks: the format, then every record.
Status Import(const v1::ImportRequest& req) {
  const v1::Dataset& dataset = req.dataset();
  if (dataset.format() != kDatasetFormat) {
    return InvalidArgument("dataset.format");
  }
  for (int i = 0; i < dataset.samples_size(); ++i) {
    BT_ASSIGN_OR_RETURN(SampleRecord s, FromProto(dataset.samples(i), "s"));
    v1::Sample proto;
    ToProto(s, &proto);
    Check(FromProto(proto, "s").ok());
  }
  for (int i = 0; i < dataset.tuned_size(); ++i) {
    BT_ASSIGN_OR_RETURN(TunedRecord t, FromProto(dataset.tuned(i), "t"));
    v1::TunedAnswer proto;
    ToProto(t, &proto);
    Check(FromProto(proto, "t").ok());
  }
  for (int i = 0; i < dataset.models_size(); ++i) {
    BT_ASSIGN_OR_RETURN(ModelRecord m, FromProto(dataset.models(i), "m"));
    v1::Model proto;
    ToProto(m, &proto);
    Check(FromProto(proto, "m").ok());
  }
  return OkStatus();
}

Status Export(const v1::ExportRequest& req) {
  BT_RETURN_IF_ERROR(CheckDeviceName("device_name", req.device_name()));
  if (req.op() != v1::OP_UNSPECIFIED) {
    BT_RETURN_IF_ERROR(FromProto(req.op(), "op").status());
  }
  return OkStatus();
}

template <typename Message>
bool Parse(const uint8_t* data, size_t size, Message* message) {
  return message->ParseFromArray(data, static_cast<int>(size));
}

}  // namespace
}  // namespace blocktune

// Protobuf logs each string field that is not UTF-8; the fuzzer makes
// many, and the log would drown its own output.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace blocktune;
  if (size < 1 || size > (1 << 20)) return 0;
  const uint8_t kind = data[0];
  ++data;
  --size;
  switch (kind % 6) {
    case 0: {
      v1::QueryRequest req;
      if (Parse(data, size, &req)) (void)ValidateQuery(req, "");
      break;
    }
    case 1: {
      v1::BatchQueryRequest req;
      if (Parse(data, size, &req)) (void)BatchQuery(req);
      break;
    }
    case 2: {
      v1::GetKernelRequest req;
      if (Parse(data, size, &req)) (void)GetKernel(req);
      break;
    }
    case 3: {
      v1::StartCampaignRequest req;
      if (Parse(data, size, &req)) (void)StartCampaign(req);
      break;
    }
    case 4: {
      v1::ImportRequest req;
      if (Parse(data, size, &req)) (void)Import(req);
      break;
    }
    case 5: {
      v1::ExportRequest req;
      if (Parse(data, size, &req)) (void)Export(req);
      break;
    }
  }
  return 0;
}
