// The blocktune.v1 service: translates messages to domain calls and back,
// and nothing more (gRPC route_guide). Every handler checks the token,
// validates the whole request before touching the store, and answers with
// exactly one mapping of domain Status to gRPC status (grpc_status.h). No
// exception escapes a handler: the daemon never crashes on a request.
#ifndef BLOCKTUNE_SERVER_SERVICE_H_
#define BLOCKTUNE_SERVER_SERVICE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "blocktune/v1/blocktune.grpc.pb.h"
#include "proto/dataset_stream.h"
#include "server/auth.h"
#include "server/campaigns.h"
#include "server/search_pool.h"
#include "server/surrogates.h"
#include "server/tuning_store.h"

namespace blocktune {

inline constexpr int kMaxTop = 100;
inline constexpr int kMaxBatchQueries = 10000;
// Answers a batch may ask for in all (the sum of each query's top, 0 and 1
// counting as 1): an answer is about 100 bytes, so a full batch stays well
// inside the daemon's 64 MiB response limit.
inline constexpr int kMaxBatchAnswers = 100000;

// How queries use the surrogate and the GPU.
struct QueryPolicy {
  bool verify_always = false;  // re-benchmark every new answer when a GPU
                               // is free, as if each query said --verify
  int verify_top = 10;         // block shapes re-benchmarked per verify
  int search_threads = 0;      // surrogate searches at once; 0: as many as
                               // keep every core busy
                               // (SearchPool::DefaultThreads)
  int search_queue = kDefaultSearchQueue;  // searches that may wait
};

class BlocktuneService final : public v1::Blocktune::Service {
 public:
  // `store` and `auth` must outlive the service. Streams end soon after
  // BeginShutdown().
  BlocktuneService(TuningStore* store, const TokenAuth* auth);

  // The GPUs this daemon may use, found at start, and a line saying why
  // there are none (or which were left out).
  void SetAttachedGpus(std::vector<DeviceFingerprint> gpus, std::string status);

  // The scheduler that runs campaigns; without one, StartCampaign and
  // CancelCampaign answer FAILED_PRECONDITION.
  void SetCampaigns(CampaignManager* campaigns) { campaigns_ = campaigns; }
  // The trained surrogates; without them, queries answer from stored
  // answers only and TrainModel is refused.
  void SetSurrogates(SurrogateRegistry* surrogates, QueryPolicy policy);

  // The most the chunks of one Import may total (kDefaultMaxImportBytes).
  void SetMaxImportBytes(int64_t bytes) { max_import_bytes_ = bytes; }

  void BeginShutdown() { stopping_ = true; }

  grpc::Status Health(grpc::ServerContext* ctx, const v1::HealthRequest* req,
                      v1::HealthResponse* resp) override;
  grpc::Status ListDevices(grpc::ServerContext* ctx,
                           const v1::ListDevicesRequest* req,
                           v1::ListDevicesResponse* resp) override;
  grpc::Status StartCampaign(grpc::ServerContext* ctx,
                             const v1::StartCampaignRequest* req,
                             v1::StartCampaignResponse* resp) override;
  grpc::Status WatchCampaign(
      grpc::ServerContext* ctx, const v1::WatchCampaignRequest* req,
      grpc::ServerWriter<v1::CampaignProgress>* writer) override;
  grpc::Status ListCampaigns(grpc::ServerContext* ctx,
                             const v1::ListCampaignsRequest* req,
                             v1::ListCampaignsResponse* resp) override;
  grpc::Status CancelCampaign(grpc::ServerContext* ctx,
                              const v1::CancelCampaignRequest* req,
                              v1::CancelCampaignResponse* resp) override;
  grpc::Status TrainModel(grpc::ServerContext* ctx,
                          const v1::TrainModelRequest* req,
                          grpc::ServerWriter<v1::TrainProgress>* writer) override;
  grpc::Status Query(grpc::ServerContext* ctx, const v1::QueryRequest* req,
                     v1::QueryResponse* resp) override;
  grpc::Status BatchQuery(grpc::ServerContext* ctx,
                          const v1::BatchQueryRequest* req,
                          v1::BatchQueryResponse* resp) override;
  grpc::Status GetKernel(grpc::ServerContext* ctx,
                         const v1::GetKernelRequest* req,
                         v1::GetKernelResponse* resp) override;
  grpc::Status Export(grpc::ServerContext* ctx, const v1::ExportRequest* req,
                      grpc::ServerWriter<v1::ExportResponse>* writer) override;
  grpc::Status Import(grpc::ServerContext* ctx,
                      grpc::ServerReader<v1::ImportRequest>* reader,
                      v1::ImportResponse* resp) override;

 private:
  struct ValidQuery {
    Context context;
    std::string device_name;
    std::string family;  // empty: every family of the precision
    int top = 1;
    bool verify = false;
    bool fallback = false;
  };
  static StatusOr<ValidQuery> ValidateQuery(const v1::QueryRequest& req,
                                            std::string_view field);
  // `deadline`: the call's; a search waits for a thread until then.
  // A query that names no device asks for the daemon's own GPU where a
  // model of it exists; else the newest model's device predicts, and the
  // answer's note says so where that is not the only choice (issue 20).
  Status AnswerQuery(const ValidQuery& q,
                     std::chrono::system_clock::time_point deadline,
                     v1::QueryResponse* resp);
  Status AnswerQueryOnDevice(const ValidQuery& q,
                             std::chrono::system_clock::time_point deadline,
                             v1::QueryResponse* resp);
  // QueryRequest.fallback: the nearest stored context's answer, else a
  // default configuration (MATCH_STALE when only stale rows exist for the
  // context); `why` says why nothing better was found.
  Status AnswerFallback(const ValidQuery& q, const std::string& why,
                        v1::QueryResponse* resp);
  // What the store holds for q's context of older generators only: "" when
  // nothing, else e.g. "stored answers of gemm.ffma generator version 0
  // (current: 1)".
  StatusOr<std::string> StaleNote(const ValidQuery& q);
  // NOT_FOUND naming `field` and the store's devices when `name` (not
  // empty) is neither a device of the store nor this daemon's GPU: a
  // misspelt or short name ("h100") would otherwise get a default answer
  // or an empty export.
  Status CheckKnownDevice(const std::string& field, const std::string& name);

  // The records of a whole streamed import, checked; CANCELLED if the
  // stream ended before the chunk marked commit.
  StatusOr<WriteBatch> ReadImport(
      grpc::ServerContext* ctx,
      grpc::ServerReaderInterface<v1::ImportRequest>* reader);

  template <typename Fn>
  grpc::Status Serve(const char* method, grpc::ServerContext* ctx, Fn&& fn);

  TuningStore* const store_;
  const TokenAuth* const auth_;
  const std::chrono::steady_clock::time_point started_;
  std::atomic<bool> stopping_{false};
  std::vector<DeviceFingerprint> attached_;
  CampaignManager* campaigns_ = nullptr;
  SurrogateRegistry* surrogates_ = nullptr;
  QueryPolicy policy_;
  std::unique_ptr<SearchPool> searches_;  // with surrogates_
  std::timed_mutex training_mu_;  // one training at a time
  std::timed_mutex import_mu_;  // one import at a time
  int64_t max_import_bytes_ = kDefaultMaxImportBytes;
  std::string gpu_status_ = "GPUs not probed";
};

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_SERVICE_H_
