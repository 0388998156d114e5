#include "server/dataset_import.h"

#include <string>

#include "proto/dataset_stream.h"
#include "server/record_convert.h"

namespace blocktune {

Status DatasetImport::Add(const v1::ImportRequest& chunk) {
  const std::string where = "chunk " + std::to_string(chunks_) + ": ";
  if (committed_) {
    return FailedPrecondition(where +
                              "comes after the chunk marked commit, which "
                              "must be the last");
  }
  // Counted before the records are converted: the bound holds however the
  // records are shaped.
  bytes_ += static_cast<int64_t>(chunk.ByteSizeLong());
  if (bytes_ > max_bytes_) {
    return Status(StatusCode::kResourceExhausted,
                  "the import is larger than this blocktuned's limit of " +
                      std::to_string(max_bytes_ >> 20) + " MiB (" +
                      std::to_string(max_bytes_) +
                      " bytes of messages, blocktuned --max-import-mib); "
                      "split the dataset into smaller imports");
  }
  const v1::Dataset& dataset = chunk.dataset();
  if (dataset.format() != kDatasetFormat) {
    return InvalidArgument(where + "dataset.format must be '" + kDatasetFormat +
                           "', got '" + dataset.format().substr(0, 64) + "'");
  }
  for (const v1::Sample& sample : dataset.samples()) {
    BT_ASSIGN_OR_RETURN(
        SampleRecord s,
        FromProto(sample, "dataset.samples[" +
                              std::to_string(batch_.samples.size()) + "]"));
    s.campaign_id = 0;
    batch_.samples.push_back(std::move(s));
  }
  for (const v1::TunedAnswer& tuned : dataset.tuned()) {
    BT_ASSIGN_OR_RETURN(
        TunedRecord t,
        FromProto(tuned, "dataset.tuned[" +
                             std::to_string(batch_.tuned.size()) + "]"));
    t.source = TunedSource::kImported;
    t.model_id = 0;
    batch_.tuned.push_back(std::move(t));
  }
  for (const v1::Model& model : dataset.models()) {
    BT_ASSIGN_OR_RETURN(
        ModelRecord m,
        FromProto(model, "dataset.models[" +
                             std::to_string(batch_.models.size()) + "]"));
    batch_.models.push_back(std::move(m));
  }
  ++chunks_;
  committed_ = chunk.commit();
  return OkStatus();
}

}  // namespace blocktune
