// What only the PostgreSQL store has: connection strings, their errors,
// Describe() without passwords, the dialect, reopening a shared database.
#include "server/pg_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/pg_test_server.h"
#include "server/schema.h"
#include "server/store_sql.h"
#include "server/store_test_util.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(PgStoreTest, TellsPostgresFromSqlite) {
  EXPECT_TRUE(IsPostgresUri("postgresql://bt@db.example/blocktune"));
  EXPECT_TRUE(IsPostgresUri("postgres://db.example/blocktune"));
  EXPECT_TRUE(IsPostgresUri("host=/run/postgresql dbname=blocktune"));
  EXPECT_FALSE(IsPostgresUri("/var/lib/blocktune/store.db"));
  EXPECT_FALSE(IsPostgresUri("store.db"));
}

TEST(PgStoreTest, DescribeNeverShowsThePassword) {
  auto uri = DescribePostgres(
      "postgresql://bt:s3cret@db.example:5433/blocktune?sslmode=verify-full");
  ASSERT_TRUE(uri.ok()) << uri.status().ToString();
  EXPECT_EQ(*uri,
            "postgresql://bt@db.example:5433/blocktune?sslmode=verify-full");
  auto keywords =
      DescribePostgres("host=db.example user=bt password=s3cret dbname=tune");
  ASSERT_TRUE(keywords.ok());
  EXPECT_THAT(*keywords, Not(HasSubstr("s3cret")));
  EXPECT_EQ(*keywords, "postgresql://bt@db.example/tune");
}

TEST(PgStoreTest, ABadConnectionStringNamesTheFlag) {
  auto store = OpenPostgresStore("host=x dbname");  // no value for dbname
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(store.status().message(), HasSubstr("--db"));
  auto uri = OpenPostgresStore("postgresql://bt:s3cret@[::1/blocktune");
  ASSERT_FALSE(uri.ok());
  EXPECT_EQ(uri.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(uri.status().message(), Not(HasSubstr("s3cret")));
}

TEST(PgStoreTest, AServerThatIsDownIsUnavailableWithoutThePassword) {
  testing::TempDir dir;  // no server listens there
  auto store = OpenPostgresStore("host=" + dir.path() +
                                 " user=bt password=s3cret dbname=blocktune "
                                 "connect_timeout=2");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable)
      << store.status().ToString();
  EXPECT_THAT(store.status().message(), Not(HasSubstr("s3cret")));
  EXPECT_THAT(store.status().message(), HasSubstr(dir.path()));
}

TEST(PgStoreTest, DialectRewritesTypesOnly) {
  EXPECT_EQ(PostgresDialect("CREATE TABLE t (id INTEGER PRIMARY KEY, "
                            "n INTEGER NOT NULL, x REAL, b BLOB NOT NULL "
                            "DEFAULT x'', name TEXT)"),
            "CREATE TABLE t (id BIGSERIAL PRIMARY KEY, n BIGINT NOT NULL, "
            "x DOUBLE PRECISION, b BYTEA NOT NULL DEFAULT ''::bytea, "
            "name TEXT)");
}

TEST(PgStoreTest, ReopeningKeepsTheDataAndTheSchemaVersion) {
  std::string why;
  testing::PgTestServer* server = testing::PgTestServer::Shared(&why);
  if (!server) GTEST_SKIP() << "no PostgreSQL server: " << why;
  const std::string conninfo = server->NewDatabase();
  CampaignSpec spec;
  spec.max_samples = 7;
  {
    auto store = OpenPostgresStore(conninfo);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ((*store)->SchemaVersion(), CurrentSchemaVersion());
    ASSERT_TRUE((*store)->CreateCampaign(spec).ok());
  }
  // A second daemon on the same database, while the first is still open.
  auto first = OpenPostgresStore(conninfo);
  auto second = OpenPostgresStore(conninfo);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ((*second)->SchemaVersion(), CurrentSchemaVersion());
  auto campaigns = (*second)->ListCampaigns();
  ASSERT_TRUE(campaigns.ok());
  ASSERT_EQ(campaigns->size(), 1u);
  EXPECT_EQ((*campaigns)[0].spec.max_samples, 7);
  EXPECT_THAT((*first)->Describe(), HasSubstr("postgresql://blocktune@"));
  EXPECT_EQ((*first)->GetCampaign(99).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace blocktune
