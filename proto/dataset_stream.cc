#include "proto/dataset_stream.h"

#include <string>

namespace blocktune {
namespace {

// A record's share of a chunk: its bytes plus the field tag and length.
size_t RecordBytes(const google::protobuf::Message& record) {
  return record.ByteSizeLong() + 6;
}

template <typename Record>
Status AddTo(DatasetChunker* chunker,
             google::protobuf::RepeatedPtrField<Record>* records) {
  for (Record& r : *records) BT_RETURN_IF_ERROR(chunker->Add(std::move(r)));
  records->Clear();
  return OkStatus();
}

}  // namespace

DatasetChunker::DatasetChunker(Emit emit, size_t chunk_bytes,
                               std::string format)
    : emit_(std::move(emit)),
      chunk_bytes_(chunk_bytes),
      format_(std::move(format)) {
  chunk_.set_format(format_);
}

Status DatasetChunker::MakeRoom(size_t record_bytes) {
  if (bytes_ > 0 && bytes_ + record_bytes > chunk_bytes_) return EmitChunk();
  return OkStatus();
}

Status DatasetChunker::EmitChunk() {
  Status status = emit_(chunk_);
  chunk_.Clear();
  chunk_.set_format(format_);
  bytes_ = 0;
  ++emitted_;
  return status;
}

Status DatasetChunker::Add(v1::Sample sample) {
  const size_t n = RecordBytes(sample);
  BT_RETURN_IF_ERROR(MakeRoom(n));
  *chunk_.add_samples() = std::move(sample);
  bytes_ += n;
  return OkStatus();
}

Status DatasetChunker::Add(v1::TunedAnswer tuned) {
  const size_t n = RecordBytes(tuned);
  BT_RETURN_IF_ERROR(MakeRoom(n));
  *chunk_.add_tuned() = std::move(tuned);
  bytes_ += n;
  return OkStatus();
}

Status DatasetChunker::Add(v1::Model model) {
  const size_t n = RecordBytes(model);
  BT_RETURN_IF_ERROR(MakeRoom(n));
  *chunk_.add_models() = std::move(model);
  bytes_ += n;
  return OkStatus();
}

Status DatasetChunker::Finish() {
  if (bytes_ > 0 || emitted_ == 0) return EmitChunk();
  return OkStatus();
}

grpc::Status ImportDataset(v1::Blocktune::StubInterface& stub,
                           grpc::ClientContext* context, v1::Dataset dataset,
                           v1::ImportResponse* response) {
  // A record that cannot fit in one message would fail mid-stream with
  // gRPC's own message; say which record it is before sending anything.
  auto check = [](const auto& records, const char* field) -> grpc::Status {
    for (int i = 0; i < records.size(); ++i) {
      const size_t n = records.Get(i).ByteSizeLong();
      if (n + 64 > static_cast<size_t>(kMaxRequestMessageBytes)) {
        return grpc::Status(
            grpc::StatusCode::RESOURCE_EXHAUSTED,
            std::string("dataset.") + field + "[" + std::to_string(i) +
                "] is " + std::to_string(n) +
                " bytes; one message to blocktuned holds at most " +
                std::to_string(kMaxRequestMessageBytes) + " bytes");
      }
    }
    return grpc::Status::OK;
  };
  for (grpc::Status s :
       {check(dataset.samples(), "samples"), check(dataset.tuned(), "tuned"),
        check(dataset.models(), "models")}) {
    if (!s.ok()) return s;
  }

  std::unique_ptr<grpc::ClientWriterInterface<v1::ImportRequest>> writer =
      stub.Import(context, response);
  // Chunks are sent one behind, so that the last one can carry `commit`.
  v1::ImportRequest pending;
  bool have_pending = false;
  bool broken = false;
  DatasetChunker chunker(
      [&](v1::Dataset& chunk) -> Status {
        if (have_pending && !writer->Write(pending)) {
          broken = true;  // the daemon ended the call; Finish says why
          return Cancelled("the import stream was closed");
        }
        pending.mutable_dataset()->Swap(&chunk);
        have_pending = true;
        return OkStatus();
      },
      kDatasetChunkBytes, dataset.format());
  Status s = AddTo(&chunker, dataset.mutable_samples());
  if (s.ok()) s = AddTo(&chunker, dataset.mutable_tuned());
  if (s.ok()) s = AddTo(&chunker, dataset.mutable_models());
  if (s.ok()) s = chunker.Finish();
  if (s.ok() && !broken) {
    pending.set_commit(true);
    writer->WriteLast(pending, grpc::WriteOptions());
  } else {
    writer->WritesDone();
  }
  return writer->Finish();
}

grpc::Status ExportDataset(v1::Blocktune::StubInterface& stub,
                           grpc::ClientContext* context,
                           const v1::ExportRequest& request,
                           v1::Dataset* dataset) {
  std::unique_ptr<grpc::ClientReaderInterface<v1::ExportResponse>> reader =
      stub.Export(context, request);
  v1::ExportResponse chunk;
  while (reader->Read(&chunk)) dataset->MergeFrom(chunk.dataset());
  return reader->Finish();
}

}  // namespace blocktune
