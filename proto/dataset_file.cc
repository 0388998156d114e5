#include "proto/dataset_file.h"

#include <google/protobuf/util/json_util.h>
#include <zlib.h>

#include <fstream>

namespace blocktune {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

StatusOr<std::string> ReadMaybeGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return NotFound("cannot read " + path);
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, n);
  const bool failed = n < 0;
  gzclose(f);
  if (failed) return DataLoss(path + ": corrupt gzip data");
  return out;
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
  const bool ok =
      gzwrite(f, text.data(), static_cast<unsigned>(text.size())) ==
      static_cast<int>(text.size());
  return gzclose(f) == Z_OK && ok ? OkStatus()
                                  : Internal("cannot write " + path);
}

StatusOr<v1::Dataset> ReadDatasetFile(const std::string& path) {
  BT_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzip(path));
  v1::Dataset dataset;
  google::protobuf::util::JsonParseOptions opts;
  auto parsed = google::protobuf::util::JsonStringToMessage(text, &dataset, opts);
  if (!parsed.ok()) {
    return InvalidArgument(path + " is not a blocktune dataset (" +
                           std::string(parsed.message()) + ")");
  }
  return dataset;
}

}  // namespace blocktune
