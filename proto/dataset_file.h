// Dataset files: a blocktune.v1.Dataset as JSON, gzip-compressed when the
// name ends in .gz (reading accepts either, whatever the name).
#ifndef BLOCKTUNE_PROTO_DATASET_FILE_H_
#define BLOCKTUNE_PROTO_DATASET_FILE_H_

#include <string>

#include "blocktune/v1/blocktune.pb.h"
#include "kernels/status.h"

namespace blocktune {

// A whole file, decompressed if it is gzip.
StatusOr<std::string> ReadMaybeGzip(const std::string& path);
// Writes `text`, gzip-compressed when `path` ends in .gz.
Status WriteMaybeGzip(const std::string& path, const std::string& text);

// INVALID_ARGUMENT when the file is not a dataset, naming the parse error.
StatusOr<v1::Dataset> ReadDatasetFile(const std::string& path);

}  // namespace blocktune

#endif  // BLOCKTUNE_PROTO_DATASET_FILE_H_
