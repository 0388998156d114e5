#include "server/store_test_util.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace blocktune::testing {

DeviceFingerprint TestDevice(const std::string& name) {
  DeviceFingerprint d;
  d.name = name;
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.memory_bytes = int64_t{80} << 30;
  d.sm_clock_mhz = 1980;
  d.memory_clock_mhz = 2619;
  d.driver_version = "13.0";
  d.cuda_version = "13.0";
  d.ptxas_version = "13.0.88";
  return d;
}

GemmContext TestGemm(int64_t m, int64_t n, int64_t k) {
  GemmContext g;
  g.m = m;
  g.n = n;
  g.k = k;
  return g;
}

BlockShape TestShape(int64_t ml, int64_t nl, int64_t kg) {
  BlockShape xb;
  xb.ml = ml;
  xb.nl = nl;
  xb.ms = ml >= 4 ? 4 : 1;
  xb.ns = nl >= 4 ? 4 : 1;
  xb.u = 8;
  xb.kg = kg;
  return xb;
}

SampleRecord TestSample(int64_t batch, int64_t i,
                        const DeviceFingerprint& device) {
  SampleRecord s;
  s.device = device;
  s.context = TestGemm(64 + i, 128, 256);
  s.kernel = KernelConfig::OfBlockShape(Op::kGemm, TestShape(64, 64));
  s.measurement.median_s = 1e-5 * (1 + i);
  s.measurement.spread = 0.01;
  s.measurement.repetitions = 20;
  s.measurement.sm_clock_mhz = 1980;
  s.measured_unix = batch;
  return s;
}

TunedRecord TestTuned(const Context& ctx, const BlockShape& xb,
                      double measured_s, const DeviceFingerprint& device) {
  TunedRecord t;
  t.device = device;
  t.context = ctx;
  t.kernel = KernelConfig::OfBlockShape(OpOf(ctx), xb);
  t.measured_s = measured_s;
  t.source = TunedSource::kMeasured;
  return t;
}

std::vector<std::pair<int64_t, std::string>> CampaignSamplesBySeq(
    TuningStore& store, int64_t campaign) {
  StoreFilter filter;
  filter.campaign_id = campaign;
  auto samples = store.ListSamples(filter);
  std::vector<std::pair<int64_t, std::string>> out;
  if (!samples.ok()) return out;
  for (const SampleRecord& s : *samples) {
    out.emplace_back(s.seq, ToString(s.context) + " " + s.kernel.family + " " +
                                s.kernel.ParamsText());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "blocktune-test-XXXXXX")
          .string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace blocktune::testing
