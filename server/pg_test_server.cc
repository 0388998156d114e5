#include "server/pg_test_server.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>

namespace blocktune::testing {
namespace {

// Runs `command` through the shell; its output goes to `log`.
bool Run(const std::string& command, const std::string& log) {
  return std::system((command + " >>" + log + " 2>&1").c_str()) == 0;
}

std::string Tail(const std::string& path) {
  std::string out;
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
    std::fclose(f);
  }
  return out.size() > 2000 ? out.substr(out.size() - 2000) : out;
}

}  // namespace

PgTestServer* PgTestServer::Shared(std::string* why) {
  static std::unique_ptr<PgTestServer> server;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    std::unique_ptr<PgTestServer> s(new PgTestServer());
    if (s->Start(&failure)) {
      server = std::move(s);
    }  // else s's destructor stops whatever half started
  });
  if (!server && why) *why = failure;
  return server.get();
}

bool PgTestServer::Start(std::string* why) {
  const char* env_bin = std::getenv("BLOCKTUNE_PG_BIN");
  bin_ = env_bin ? env_bin : "/usr/lib/postgresql/15/bin";
  if (access((bin_ + "/initdb").c_str(), X_OK) != 0 ||
      access((bin_ + "/pg_ctl").c_str(), X_OK) != 0) {
    *why = "no PostgreSQL server binaries in " + bin_ +
           " (scripts/setup.sh installs postgresql-15; or set "
           "BLOCKTUNE_PG_BIN)";
    return false;
  }
  char tmpl[] = "/tmp/blocktune-pg-XXXXXX";
  if (!mkdtemp(tmpl)) {
    *why = "cannot create a temporary folder";
    return false;
  }
  dir_ = tmpl;
  const std::string log = dir_ + "/setup.log";
  if (geteuid() == 0) {
    const passwd* nobody = getpwnam("nobody");
    if (!nobody) {
      *why = "running as root and there is no user `nobody` to run postgres";
      return false;
    }
    if (chown(dir_.c_str(), nobody->pw_uid, nobody->pw_gid) != 0) {
      *why = "cannot hand " + dir_ + " to nobody";
      return false;
    }
    runas_ = "setpriv --reuid=" + std::to_string(nobody->pw_uid) +
             " --regid=" + std::to_string(nobody->pw_gid) +
             " --clear-groups env HOME=" + dir_ + " ";
  }
  chmod(dir_.c_str(), 0755);
  // The log is root's; the server's own log goes to data/ via -l.
  if (!Run(runas_ + bin_ + "/initdb -D " + dir_ +
               "/data -U blocktune --auth=trust -E UTF8 --no-sync "
               "--no-instructions",
           log)) {
    *why = "initdb failed: " + Tail(log);
    return false;
  }
  // fsync off and no TCP: a test server, fast and reachable only here.
  if (!Run(runas_ + bin_ + "/pg_ctl -D " + dir_ + "/data -l " + dir_ +
               "/data/server.log -w -t 60 -o \"-k " + dir_ +
               " -c listen_addresses='' -F\" start",
           log)) {
    *why =
        "pg_ctl start failed: " + Tail(log) + Tail(dir_ + "/data/server.log");
    Run(runas_ + bin_ + "/pg_ctl -D " + dir_ + "/data -m immediate stop", log);
    return false;
  }
  running_ = true;
  return true;
}

PgTestServer::~PgTestServer() {
  if (dir_.empty()) return;
  if (running_) {
    Run(runas_ + bin_ + "/pg_ctl -D " + dir_ + "/data -m immediate -w stop",
        "/dev/null");
  }
  Run("rm -rf " + dir_, "/dev/null");
}

std::string PgTestServer::ConnInfo(const std::string& dbname) const {
  return "host=" + dir_ + " user=blocktune dbname=" + dbname;
}

std::string PgTestServer::NewDatabase() {
  static std::mutex mu;
  std::lock_guard lock(mu);
  const std::string name =
      "t" + std::to_string(getpid()) + "_" + std::to_string(++databases_);
  pqxx::connection c(ConnInfo("postgres"));
  pqxx::nontransaction w(c);
  w.exec("CREATE DATABASE " + name);
  return ConnInfo(name);
}

}  // namespace blocktune::testing
