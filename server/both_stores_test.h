// A store test that runs against both stores: GetParam() true is a fresh
// SQLite file in a temporary folder, false the in-memory store.
#ifndef BLOCKTUNE_SERVER_BOTH_STORES_TEST_H_
#define BLOCKTUNE_SERVER_BOTH_STORES_TEST_H_

#include <gtest/gtest.h>

#include <memory>

#include "server/store_test_util.h"
#include "server/tuning_store.h"

namespace blocktune::testing {

class BothStoresTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      auto s = OpenSqliteStore(dir_.path() + "/store.db");
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      store_ = std::move(*s);
    } else {
      store_ = NewMemoryStore();
    }
  }
  TempDir dir_;
  std::unique_ptr<TuningStore> store_;
};

}  // namespace blocktune::testing

#endif  // BLOCKTUNE_SERVER_BOTH_STORES_TEST_H_
