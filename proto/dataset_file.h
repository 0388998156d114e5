// Dataset files: a blocktune.v1.Dataset as JSON, gzip-compressed when the
// name ends in .gz (reading accepts either, whatever the name).
#ifndef BLOCKTUNE_PROTO_DATASET_FILE_H_
#define BLOCKTUNE_PROTO_DATASET_FILE_H_

#include <cstdint>
#include <string>

#include "blocktune/v1/blocktune.pb.h"
#include "kernels/status.h"

namespace blocktune {

// The most a dataset file may hold, compressed and decompressed: the file is
// read whole and parsed in memory, and a path like /dev/zero or a gzip bomb
// must not take the reader's memory without bound.
inline constexpr int64_t kMaxDatasetFileBytes = int64_t{1} << 30;

// A whole file, decompressed if it is gzip. RESOURCE_EXHAUSTED naming the
// limit when the file, or its decompressed text, passes `max_bytes`.
StatusOr<std::string> ReadMaybeGzip(const std::string& path,
                                    int64_t max_bytes = kMaxDatasetFileBytes);
// Writes `text`, gzip-compressed when `path` ends in .gz.
Status WriteMaybeGzip(const std::string& path, const std::string& text);

// INVALID_ARGUMENT when the file is not a dataset, naming the parse error;
// a file whose text does not start like JSON is refused from its first
// bytes, without reading the rest. RESOURCE_EXHAUSTED past `max_bytes`.
StatusOr<v1::Dataset> ReadDatasetFile(const std::string& path,
                                      int64_t max_bytes = kMaxDatasetFileBytes);

}  // namespace blocktune

#endif  // BLOCKTUNE_PROTO_DATASET_FILE_H_
