// A store test that runs against every store: a fresh SQLite file in a
// temporary folder, the in-memory store, and a fresh database on a real
// PostgreSQL server started for the test binary (pg_test_server.h; skipped
// with a message where the PostgreSQL binaries are absent).
#ifndef BLOCKTUNE_SERVER_BOTH_STORES_TEST_H_
#define BLOCKTUNE_SERVER_BOTH_STORES_TEST_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "server/pg_store.h"
#include "server/pg_test_server.h"
#include "server/store_test_util.h"
#include "server/tuning_store.h"

namespace blocktune::testing {

enum class StoreKind { kSqlite, kMemory, kPostgres };

inline std::string StoreKindName(
    const ::testing::TestParamInfo<StoreKind>& info) {
  switch (info.param) {
    case StoreKind::kSqlite:
      return "Sqlite";
    case StoreKind::kMemory:
      return "Memory";
    case StoreKind::kPostgres:
      return "Postgres";
  }
  return "Unknown";
}

// INSTANTIATE_TEST_SUITE_P(Stores, FooTest, AllStoreKinds(), StoreKindName);
inline auto AllStoreKinds() {
  return ::testing::Values(StoreKind::kSqlite, StoreKind::kMemory,
                           StoreKind::kPostgres);
}

class BothStoresTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    switch (GetParam()) {
      case StoreKind::kSqlite: {
        auto s = OpenSqliteStore(dir_.path() + "/store.db");
        ASSERT_TRUE(s.ok()) << s.status().ToString();
        store_ = std::move(*s);
        break;
      }
      case StoreKind::kMemory:
        store_ = NewMemoryStore();
        break;
      case StoreKind::kPostgres: {
        std::string why;
        PgTestServer* server = PgTestServer::Shared(&why);
        if (!server) GTEST_SKIP() << "no PostgreSQL server: " << why;
        auto s = OpenPostgresStore(server->NewDatabase());
        ASSERT_TRUE(s.ok()) << s.status().ToString();
        store_ = std::move(*s);
        break;
      }
    }
  }
  bool IsSqlite() const { return GetParam() == StoreKind::kSqlite; }

  TempDir dir_;
  std::unique_ptr<TuningStore> store_;
};

}  // namespace blocktune::testing

#endif  // BLOCKTUNE_SERVER_BOTH_STORES_TEST_H_
