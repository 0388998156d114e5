#include "proto/dataset_file.h"

#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cctype>
#include <cstdio>
#include <fstream>

namespace blocktune {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status TooLarge(const std::string& path, const char* what, int64_t max_bytes) {
  return Status(StatusCode::kResourceExhausted,
                path + ": " + what + " is larger than the limit of " +
                    std::to_string(max_bytes >> 20) + " MiB (" +
                    std::to_string(max_bytes) +
                    " bytes) for a dataset file; split the dataset");
}

// Reads `path` (gunzipped when it is gzip) in blocks, never past
// `max_bytes` of file or of text. With `json`, the first non-blank byte must
// open a JSON object, so that a device or a binary file is refused at once.
StatusOr<std::string> ReadBounded(const std::string& path, int64_t max_bytes,
                                  bool json) {
  // A regular file's size is known up front; pipes and devices are counted
  // as they are read (gzoffset below). A folder opens and reads as "corrupt
  // gzip data": said as what it is.
  if (struct stat st {}; stat(path.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode) && st.st_size > max_bytes)
      return TooLarge(path, "the file", max_bytes);
    if (S_ISDIR(st.st_mode))
      return InvalidArgument(path + " is a folder, not a dataset file");
  }
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return NotFound("cannot read " + path);
  std::string out;
  char buf[1 << 16];
  int n;
  bool checked = !json;
  Status status;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) {
    if (static_cast<int64_t>(out.size()) + n > max_bytes) {
      status = TooLarge(path, "the decompressed text", max_bytes);
      break;
    }
    if (gzoffset(f) > max_bytes) {
      status = TooLarge(path, "the file", max_bytes);
      break;
    }
    out.append(buf, n);
    if (!checked) {
      size_t first = 0;
      while (first < out.size() &&
             std::isspace(static_cast<unsigned char>(out[first])))
        ++first;
      if (first < out.size()) {
        checked = true;
        if (out[first] != '{') {
          char byte[8];
          std::snprintf(byte, sizeof(byte), "0x%02x",
                        static_cast<unsigned char>(out[first]));
          status = InvalidArgument(path +
                                   " is not a blocktune dataset: a dataset is "
                                   "a JSON object (optionally gzipped), and "
                                   "this starts with the byte " +
                                   byte);
          break;
        }
      }
    }
  }
  const bool failed = status.ok() && n < 0;
  gzclose(f);
  if (!status.ok()) return status;
  if (failed) return DataLoss(path + ": corrupt gzip data");
  return out;
}

}  // namespace

StatusOr<std::string> ReadMaybeGzip(const std::string& path,
                                    int64_t max_bytes) {
  return ReadBounded(path, max_bytes, /*json=*/false);
}

Status WriteMaybeGzip(const std::string& path, const std::string& text) {
  if (!EndsWith(path, ".gz")) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    return out ? OkStatus() : Internal("cannot write " + path);
  }
  gzFile f = gzopen(path.c_str(), "wb9");
  if (f == nullptr) return Internal("cannot write " + path);
  const bool ok = gzwrite(f, text.data(), static_cast<unsigned>(text.size())) ==
                  static_cast<int>(text.size());
  return gzclose(f) == Z_OK && ok ? OkStatus()
                                  : Internal("cannot write " + path);
}

StatusOr<v1::Dataset> ReadDatasetFile(const std::string& path,
                                      int64_t max_bytes) {
  BT_ASSIGN_OR_RETURN(std::string text,
                      ReadBounded(path, max_bytes, /*json=*/true));
  v1::Dataset dataset;
  google::protobuf::util::JsonParseOptions opts;
  auto parsed =
      google::protobuf::util::JsonStringToMessage(text, &dataset, opts);
  if (!parsed.ok()) {
    return InvalidArgument(path + " is not a blocktune dataset (" +
                           std::string(parsed.message()) + ")");
  }
  return dataset;
}

}  // namespace blocktune
