// Datasets on the wire. A dataset is larger than one gRPC message may be,
// so Import and Export move it in chunks (blocktune.proto): the message
// size limits both ends agree on, the chunker that cuts a dataset into
// chunks, and the client side of the two streaming calls.
#ifndef BLOCKTUNE_PROTO_DATASET_STREAM_H_
#define BLOCKTUNE_PROTO_DATASET_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <string>

#include "blocktune/v1/blocktune.grpc.pb.h"
#include "kernels/status.h"

namespace blocktune {

// Dataset.format: the version of the dataset layout.
inline constexpr char kDatasetFormat[] = "blocktune.dataset.v1";

// The largest request message blocktuned reads. Small, so that a call
// cannot make the daemon hold much memory before it is refused.
inline constexpr int kMaxRequestMessageBytes = 4 << 20;
// The largest response message either end accepts (a batch of answers, a
// kernel's PTX); datasets stream in chunks instead.
inline constexpr int kMaxResponseMessageBytes = 64 << 20;
// The size an Import or Export chunk aims at: well under the request limit,
// and large enough that the per-message cost does not matter.
inline constexpr size_t kDatasetChunkBytes = 1 << 20;
// blocktuned's default bound on one import (the sum of its chunks' sizes):
// the daemon holds an import's records in memory until it commits them.
inline constexpr int64_t kDefaultMaxImportBytes = int64_t{1} << 30;

// Gathers records into chunks of about `chunk_bytes` (a record larger than
// that goes alone) and hands each full chunk to `emit`. Not thread-safe.
class DatasetChunker {
 public:
  using Emit = std::function<Status(v1::Dataset& chunk)>;
  // Every chunk's format is `format`: kDatasetFormat for what a daemon
  // writes; what a file says, for an import, so the daemon checks it.
  explicit DatasetChunker(Emit emit, size_t chunk_bytes = kDatasetChunkBytes,
                          std::string format = kDatasetFormat);

  Status Add(v1::Sample sample);
  Status Add(v1::TunedAnswer tuned);
  Status Add(v1::Model model);
  // Emits the chunk in progress. An empty dataset still yields one (empty)
  // chunk, so the receiver always learns the format.
  Status Finish();

 private:
  // Emits the chunk in progress if `record_bytes` more would overflow it.
  Status MakeRoom(size_t record_bytes);
  Status EmitChunk();

  Emit emit_;
  size_t chunk_bytes_;
  std::string format_;
  v1::Dataset chunk_;
  size_t bytes_ = 0;  // of the records in chunk_
  int64_t emitted_ = 0;
};

// Streams `dataset` to Import in chunks and waits for the answer. A record
// too large for one message is RESOURCE_EXHAUSTED naming it and the limit,
// before anything is sent. `context` carries the token and deadline.
grpc::Status ImportDataset(v1::Blocktune::StubInterface& stub,
                           grpc::ClientContext* context, v1::Dataset dataset,
                           v1::ImportResponse* response);

// Reads the Export stream of `request` and gathers its chunks into
// `dataset`.
grpc::Status ExportDataset(v1::Blocktune::StubInterface& stub,
                           grpc::ClientContext* context,
                           const v1::ExportRequest& request,
                           v1::Dataset* dataset);

}  // namespace blocktune

#endif  // BLOCKTUNE_PROTO_DATASET_STREAM_H_
