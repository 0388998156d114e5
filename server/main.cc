// blocktuned: the blocktune daemon. See `blocktuned --help`.
#include <CLI/CLI.hpp>

#include <iostream>

#include "server/daemon.h"
#include "server/store_migrate.h"

int main(int argc, char** argv) {
  blocktune::DaemonOptions options;
  CLI::App app{"blocktuned: the blocktune tuning daemon. It owns the GPUs of "
               "this box, keeps every measurement in its store, and answers "
               "block-shape queries over gRPC."};
  app.add_option("--listen", options.listen,
                 "host:port, unix:PATH or unix-abstract:NAME; anything but "
                 "a loopback address or a unix socket file needs "
                 "--token-file (TLS or not)")
      ->capture_default_str();
  app.add_option("--db", options.db,
                 "the store: a SQLite file (default: " +
                     blocktune::DefaultDatabasePath() +
                     "), or a PostgreSQL database shared by several daemons: "
                     "postgresql://user@host/dbname or a libpq keyword "
                     "string; the password from ~/.pgpass, PGPASSWORD or a "
                     "service file, never here");
  app.add_option("--gpus", options.gpus, "'all', 'none' or indices like 0,1")
      ->capture_default_str();
  app.add_option("--token-file", options.token_file,
                 "require this bearer token (first line of the file) on "
                 "every call");
  app.add_option("--tls-cert", options.tls_cert,
                 "PEM certificate chain: serve over TLS (privacy; the "
                 "token still says who may call)");
  app.add_option("--tls-key", options.tls_key, "PEM private key");
  app.add_option("--worker", options.worker,
                 "the GPU worker program (default: blocktune-worker beside "
                 "blocktuned)");
  app.add_option("--kernel-timeout", options.kernel_timeout_s,
                 "seconds one sample may run before its worker is killed")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app.add_flag("--verify-queries", options.verify_queries,
               "re-benchmark the top answers of every new query on a free GPU");
  app.add_option("--verify-top", options.verify_top,
                 "block shapes a verified query re-benchmarks")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--ensemble-risk", options.ensemble_risk,
                 "standard deviations of an ensemble's members' disagreement "
                 "(in ln flop/s) that count against a configuration when "
                 "queries rank them; 0 ranks by the ensemble's mean")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  app.add_option("--score-device", options.score_device,
                 "where the surrogate scores block shapes")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  app.add_option("--search-threads", options.search_threads,
                 "surrogate searches (uncached queries) run at once, at a "
                 "lower priority than cached queries; 0: enough to keep "
                 "every core busy")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  app.add_option("--search-queue", options.search_queue,
                 "uncached queries that may wait for a search thread; more "
                 "are refused with RESOURCE_EXHAUSTED")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app.add_option("--fake-gpus", options.fake_gpus,
                 "for tests: this many fake GPUs instead of real ones")
      ->check(CLI::Range(0, 8));
  app.add_option("--fake-worker", options.fake_worker,
                 "for tests: the fake GPUs' behaviour, key=N,... "
                 "(tuner/worker.h)");
  app.add_option("--max-import-mib", options.max_import_mib,
                 "the most one import may send, in MiB (held in memory "
                 "until it is stored)")
      ->check(CLI::Range(1, blocktune::kMaxImportMib))
      ->capture_default_str();
  app.add_option("--name", options.name,
                 "this daemon's name in a campaign's per-daemon shares, when "
                 "several daemons share one PostgreSQL store (default: the "
                 "host name)");
  app.add_option("--lease-s", options.lease_s,
                 "seconds a campaign work item stays this daemon's without "
                 "a renewal; a daemon that dies loses its items after this")
      ->check(CLI::Range(2, 3600))
      ->capture_default_str();
  app.add_option("--contexts-per-kernel", options.contexts_per_kernel,
                 "a new campaign measures each sampled kernel in this many "
                 "contexts (the same PTX, compiled once); 1: every sample "
                 "its own draw; 0: 4 per GPU in use")
      ->check(CLI::Range(0, blocktune::kMaxContextsPerKernel))
      ->capture_default_str();
  app.add_option("--log-level", options.log_level,
                 "debug, info, warning or error")
      ->capture_default_str();
  // blocktuned migrate: copy a store, then exit (it serves nothing).
  std::string migrate_from, migrate_to;
  auto* migrate = app.add_subcommand(
      "migrate",
      "copy a SQLite store, with its provenance, into a new, empty store "
      "(a PostgreSQL database shared by a fleet, issue 22) and exit");
  migrate->add_option("--from", migrate_from, "the SQLite store file")
      ->required();
  migrate->add_option("--to", migrate_to,
                      "postgresql://user@host/dbname, a libpq keyword "
                      "string, or a SQLite path; the password from "
                      "~/.pgpass, PGPASSWORD or a service file")
      ->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (*migrate) {
    auto done = blocktune::MigrateDatabases(migrate_from, migrate_to);
    if (!done.ok()) {
      std::cerr << "blocktuned migrate: " << done.status().ToString() << "\n";
      return 1;
    }
    std::cout << *done << "\n";
    return 0;
  }
  return blocktune::RunDaemon(options);
}
