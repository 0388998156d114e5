// A throwaway PostgreSQL server for tests (issue 22): initdb and pg_ctl from
// /usr/lib/postgresql/15/bin (or $BLOCKTUNE_PG_BIN), listening only on a
// unix socket in a temporary folder, trust authentication, torn down (and
// the folder removed) when the process exits.
//
// initdb and postgres refuse to run as root, and tests run as root in CI:
// then the server runs as the unprivileged user `nobody` (setpriv), and the
// folder is handed to that user. No password exists anywhere.
#ifndef BLOCKTUNE_SERVER_PG_TEST_SERVER_H_
#define BLOCKTUNE_SERVER_PG_TEST_SERVER_H_

#include <string>

namespace blocktune::testing {

class PgTestServer {
 public:
  // The process's one server, started on the first call. Null when it
  // cannot start; then *why says why (for GTEST_SKIP).
  static PgTestServer* Shared(std::string* why);

  // A libpq connection string for a new, empty database of its own.
  std::string NewDatabase();
  // The connection string of database `dbname`.
  std::string ConnInfo(const std::string& dbname) const;

  ~PgTestServer();

 private:
  PgTestServer() = default;
  bool Start(std::string* why);

  std::string bin_;
  std::string dir_;    // socket folder; data in dir_/data
  std::string runas_;  // "" or the setpriv prefix
  int databases_ = 0;
  bool running_ = false;
};

}  // namespace blocktune::testing

#endif  // BLOCKTUNE_SERVER_PG_TEST_SERVER_H_
