// Test helper for sqlite_store_test: commits batches of samples to the
// store at argv[1] forever, until it is killed. Batch b of this run is
// tagged measured_unix = argv[2] * 1000000 + b, so the test can check that
// every batch in the file is whole.
#include <cstdio>
#include <cstdlib>

#include "server/store_test_util.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s DB RUN BATCH_SIZE\n", argv[0]);
    return 2;
  }
  auto store = blocktune::OpenSqliteStore(argv[1]);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 3;
  }
  const int64_t run = std::atoll(argv[2]);
  const int batch_size = std::atoi(argv[3]);
  for (int64_t b = 1;; ++b) {
    blocktune::WriteBatch batch;
    for (int i = 0; i < batch_size; ++i)
      batch.samples.push_back(blocktune::testing::TestSample(run * 1000000 + b, i));
    auto done = (*store)->Commit(batch);
    if (!done.ok()) {
      std::fprintf(stderr, "%s\n", done.status().ToString().c_str());
      return 4;
    }
  }
}
