// A dataset file as `blocktune export` writes it, holding one measured
// answer (GEMM 4096 x 16 x 4096, NT, on an H100), for the client and CLI
// tests to import.
#ifndef BLOCKTUNE_CLIENT_TEST_DATASET_H_
#define BLOCKTUNE_CLIENT_TEST_DATASET_H_

namespace blocktune::testing {

inline constexpr char kOneTunedGemmDataset[] = R"({
    "format": "blocktune.dataset.v1",
    "tuned": [{
      "context": {"gemm": {"m": "4096", "n": "16", "k": "4096",
                           "layout_a": "LAYOUT_N", "layout_b": "LAYOUT_T",
                           "dtype": "DTYPE_FP32"}},
      "block_shape": {"ml": "64", "nl": "16", "ms": "4", "ns": "2",
                      "u": "8", "kg": "4"},
      "device": {"name": "NVIDIA H100 80GB HBM3", "cc_major": 9,
                 "cc_minor": 0, "sm_count": 132,
                 "memory_bytes": "85899345920", "sm_clock_mhz": 1980,
                 "memory_clock_mhz": 2619, "driver_version": "13.0",
                 "cuda_version": "13.0", "ptxas_version": "13.0.88"},
      "measured_seconds": 8.5e-05, "source": "SOURCE_MEASURED"}]})";

}  // namespace blocktune::testing

#endif  // BLOCKTUNE_CLIENT_TEST_DATASET_H_
