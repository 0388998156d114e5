// Records for store tests: valid by construction, distinct by index.
#ifndef BLOCKTUNE_SERVER_STORE_TEST_UTIL_H_
#define BLOCKTUNE_SERVER_STORE_TEST_UTIL_H_

#include <string>
#include <utility>
#include <vector>

#include "server/tuning_store.h"

namespace blocktune::testing {

DeviceFingerprint TestDevice(const std::string& name = "NVIDIA H100 80GB HBM3");
GemmContext TestGemm(int64_t m, int64_t n, int64_t k);
BlockShape TestShape(int64_t ml, int64_t nl, int64_t kg = 1);
// The i-th sample of batch `batch`: a GEMM whose m encodes i, tagged with
// measured_unix = batch so tests can count samples per batch.
SampleRecord TestSample(int64_t batch, int64_t i,
                        const DeviceFingerprint& device = TestDevice());
TunedRecord TestTuned(const Context& ctx, const BlockShape& xb,
                      double measured_s,
                      const DeviceFingerprint& device = TestDevice());

// Campaign `campaign`'s stored samples in seq order, each as (seq, "<context>
// <family> <parameters>"): two campaigns that measured the same candidates
// in the same seqs give equal lists, and a list whose i-th seq is i has
// neither duplicates nor gaps. Empty when the store cannot list them, which
// a caller's size or order check then reports.
std::vector<std::pair<int64_t, std::string>> CampaignSamplesBySeq(
    TuningStore& store, int64_t campaign);

// A fresh temporary folder, removed with its contents when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace blocktune::testing

#endif  // BLOCKTUNE_SERVER_STORE_TEST_UTIL_H_
