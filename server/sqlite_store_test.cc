// What only the SQLite store has: a file, its mode, its schema version, and
// what is left of it after the writing process is killed.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <random>
#include <thread>

#include "server/schema.h"
#include "server/store_test_util.h"
#include "server/tuning_store.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using namespace ::blocktune::testing;  // NOLINT

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

TEST(SqliteStoreTest, CreatesPrivateFilesAndFolders) {
  TempDir dir;
  const std::string db = dir.path() + "/nested/deeper/blocktune.db";
  mode_t old_umask = umask(0);  // the store must not rely on the umask
  auto store = OpenSqliteStore(db);
  umask(old_umask);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  WriteBatch batch;
  batch.samples.push_back(TestSample(1, 0));
  ASSERT_TRUE((*store)->Commit(batch).ok());
  EXPECT_EQ(ModeOf(db), 0600u);
  EXPECT_EQ(ModeOf(db + "-wal"), 0600u);
  EXPECT_EQ(ModeOf(dir.path() + "/nested"), 0700u);
  EXPECT_EQ((*store)->Describe(), db);
}

TEST(SqliteStoreTest, IsInWalModeAtTheCurrentSchema) {
  TempDir dir;
  const std::string db = dir.path() + "/s.db";
  {
    auto store = OpenSqliteStore(db);
    ASSERT_TRUE(store.ok());
    EXPECT_EQ((*store)->SchemaVersion(), CurrentSchemaVersion());
    WriteBatch batch;
    batch.samples.push_back(TestSample(1, 0));
    ASSERT_TRUE((*store)->Commit(batch).ok());
  }
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA journal_mode").getString(), "wal");
  EXPECT_EQ(raw.execAndGet("PRAGMA user_version").getInt(),
            CurrentSchemaVersion());
  // Reopening migrates nothing and keeps the data.
  auto again = OpenSqliteStore(db);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*(*again)->CountSamples({}), 1);
}

TEST(SqliteStoreTest, RefusesASchemaNewerThanItKnows) {
  TempDir dir;
  const std::string db = dir.path() + "/future.db";
  {
    SQLite::Database raw(db, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    raw.exec("PRAGMA user_version = 99");
  }
  auto store = OpenSqliteStore(db);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(),
              HasSubstr("has schema version 99, newer than this blocktuned"));
}

TEST(SqliteStoreTest, MigratesAnEmptyFileFromVersionZero) {
  TempDir dir;
  const std::string db = dir.path() + "/old.db";
  { SQLite::Database raw(db, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE); }
  auto store = OpenSqliteStore(db);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->SchemaVersion(), CurrentSchemaVersion());
}

TEST(SqliteStoreTest, ReportsAFileThatIsNotADatabase) {
  TempDir dir;
  const std::string db = dir.path() + "/junk.db";
  std::ofstream(db) << std::string(8192, 'x');
  auto store = OpenSqliteStore(db);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(store.status().message(), HasSubstr(db));
}

// A writer process is killed with SIGKILL in the middle of committing
// batches, three times over. The file must pass integrity_check and hold
// only whole batches.
// FindTuned's answers are kept in memory until a commit writes tuned
// answers or models; commits of samples and campaign state (a running
// campaign's, every 250 ms) keep them. A row changed behind the store's back
// shows which: only a kept answer still has the old value.
TEST(SqliteStoreTest, OnlyCommitsOfAnswersOrModelsRenewFindTuned) {
  TempDir dir;
  const std::string db = dir.path() + "/c.db";
  auto store = OpenSqliteStore(db);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const Context ctx = TestGemm(1024, 1024, 1024);
  WriteBatch answers;
  answers.tuned.push_back(TestTuned(ctx, TestShape(64, 64), 1e-3));
  ASSERT_TRUE((*store)->Commit(answers).ok());
  auto measured = [&]() {
    auto found = (*store)->FindTuned(ctx, "", 1);
    EXPECT_TRUE(found.ok() && found->size() == 1);
    return found.ok() && !found->empty() ? found->front().measured_s : -1.0;
  };
  EXPECT_EQ(measured(), 1e-3);
  {
    SQLite::Database raw(db, SQLite::OPEN_READWRITE);
    raw.exec("UPDATE tuned SET measured_s = 2e-3");
  }
  EXPECT_EQ(measured(), 1e-3);  // kept
  WriteBatch samples;
  samples.samples.push_back(TestSample(1, 0));
  ASSERT_TRUE((*store)->Commit(samples).ok());
  EXPECT_EQ(measured(), 1e-3);  // still kept: no answer was written
  WriteBatch other;
  other.tuned.push_back(TestTuned(TestGemm(64, 64, 64), TestShape(16, 16), 1e-5));
  ASSERT_TRUE((*store)->Commit(other).ok());
  EXPECT_EQ(measured(), 2e-3);  // read again
}

TEST(SqliteStoreCrashTest, KilledWriterLeavesOnlyWholeBatches) {
  constexpr int kBatchSize = 25;
  TempDir dir;
  const std::string db = dir.path() + "/crash.db";
  auto watcher = OpenSqliteStore(db);
  ASSERT_TRUE(watcher.ok());
  std::mt19937 rng(12345);
  int64_t before = 0;
  for (int run = 1; run <= 3; ++run) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      execl(STORE_CRASH_WRITER, STORE_CRASH_WRITER, db.c_str(),
            std::to_string(run).c_str(), std::to_string(kBatchSize).c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    // Let it commit a few batches, then kill it at a random moment.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    int64_t count = before;
    while (count < before + 5 * kBatchSize &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      auto c = (*watcher)->CountSamples({});
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      count = *c;
    }
    ASSERT_GE(count, before + 5 * kBatchSize) << "writer made no progress";
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::uniform_int_distribution<>(0, 20000)(rng)));
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "writer exited on its own: "
                                      << WEXITSTATUS(wstatus);
    before = *(*watcher)->CountSamples({});
  }
  watcher->reset();

  {
    SQLite::Database raw(db, SQLite::OPEN_READWRITE);
    EXPECT_EQ(raw.execAndGet("PRAGMA integrity_check").getString(), "ok");
    SQLite::Statement partial(raw,
        "SELECT measured_unix, COUNT(*) FROM samples GROUP BY measured_unix "
        "HAVING COUNT(*) != ?");
    partial.bind(1, kBatchSize);
    EXPECT_FALSE(partial.executeStep())
        << "batch " << partial.getColumn(0).getInt64() << " has "
        << partial.getColumn(1).getInt() << " samples";
  }
  auto reopened = OpenSqliteStore(db);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  auto total = (*reopened)->CountSamples({});
  ASSERT_TRUE(total.ok());
  EXPECT_GE(*total, 15 * kBatchSize);
  EXPECT_EQ(*total % kBatchSize, 0);
}

}  // namespace
}  // namespace blocktune
