// Fuzzes the import reader: a dataset file's bytes -> ReadDatasetFile
// (gunzip when gzip, JSON -> blocktune.v1.Dataset) -> the checks Import
// runs on every record (FromProto of server/record_convert.h).
//
// The bytes go through the path-taking ReadDatasetFile itself, by way of
// an in-memory file (memfd), so the fuzzer runs exactly the code
// `blocktune import FILE` runs, size limits included.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <google/protobuf/stubs/logging.h>

#include "proto/dataset_file.h"
#include "server/record_convert.h"

namespace {

int MemoryFile() {
  static const int fd = [] {
    int f = memfd_create("dataset", 0);
    if (f < 0) std::abort();
    return f;
  }();
  return fd;
}

}  // namespace

// Protobuf logs each string field that is not UTF-8; the fuzzer makes
// many, and the log would drown its own output.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace blocktune;
  const int fd = MemoryFile();
  if (ftruncate(fd, 0) != 0) std::abort();
  if (size > 0 && pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) {
    std::abort();
  }
  auto dataset = ReadDatasetFile("/proc/self/fd/" + std::to_string(fd));
  if (!dataset.ok()) return 0;
  for (int i = 0; i < dataset->samples_size(); ++i) {
    auto s = FromProto(dataset->samples(i), "dataset.samples");
    if (!s.ok()) continue;
    v1::Sample proto;
    ToProto(*s, &proto);
    if (!FromProto(proto, "again").ok()) std::abort();
  }
  for (int i = 0; i < dataset->tuned_size(); ++i) {
    auto t = FromProto(dataset->tuned(i), "dataset.tuned");
    if (!t.ok()) continue;
    v1::TunedAnswer proto;
    ToProto(*t, &proto);
    if (!FromProto(proto, "again").ok()) std::abort();
  }
  for (int i = 0; i < dataset->models_size(); ++i) {
    auto m = FromProto(dataset->models(i), "dataset.models");
    if (!m.ok()) continue;
    v1::Model proto;
    ToProto(*m, &proto);
    if (!FromProto(proto, "again").ok()) std::abort();
  }
  return 0;
}
