// The blocktuned process: options, the checks made before listening, and
// the serve-until-signalled loop.
#ifndef BLOCKTUNE_SERVER_DAEMON_H_
#define BLOCKTUNE_SERVER_DAEMON_H_

#include <string>
#include <vector>

#include "kernels/status.h"
#include "models/search.h"
#include "server/search_pool.h"

namespace blocktune {

struct DaemonOptions {
  std::string listen = "127.0.0.1:50051";  // host:port or unix:PATH
  std::string db;                          // empty: DefaultDatabasePath()
  std::string gpus = "all";                // "all", "none" or "0,2,3"
  std::string token_file;
  std::string tls_cert;
  std::string tls_key;
  std::string log_level = "info";
  std::string worker;             // blocktune-worker; empty: beside blocktuned
  double kernel_timeout_s = 30;   // the watchdog's limit for one sample
  // Tests: this many fake GPUs, their workers run with --fake fake_worker.
  // Queries: re-benchmark every new answer's top verify_top on a free GPU
  // (as if each query said --verify); score on the GPU when libtorch can.
  bool verify_queries = false;
  int verify_top = 10;
  std::string score_device = "cpu";  // "cpu", "cuda" or "auto"
  // The members' spread an ensemble's ranking charges (models/search.h
  // kEnsembleRisk; 0 ranks by the mean).
  double ensemble_risk = kEnsembleRisk;
  int search_threads = 0;  // QueryPolicy: 0 is SearchPool::DefaultThreads
  int search_queue = kDefaultSearchQueue;  // QueryPolicy::search_queue
  int fake_gpus = 0;
  std::string fake_worker;
  // The most one Import may send, in MiB; its records are held in memory
  // until they are committed.
  int max_import_mib = 1024;
  // Several daemons on one PostgreSQL store: this daemon's name in
  // campaign shares (empty: the host name), and how long an item it holds
  // stays its own without a renewal (a daemon that died loses it then).
  std::string name;
  int lease_s = 60;
  // CampaignOptions::contexts_per_kernel; 0: kContextsPerKernelPerGpu per
  // GPU in use (at least that many), so that N GPUs ask the CPU for as many
  // compiles per second as one does.
  int contexts_per_kernel = 0;
};

inline constexpr int kMaxImportMib = 16384;
inline constexpr int kContextsPerKernelPerGpu = 4;
inline constexpr int kMaxContextsPerKernel = 64;

// $XDG_DATA_HOME/blocktune/blocktune.db, else
// ~/.local/share/blocktune/blocktune.db.
std::string DefaultDatabasePath();

// True for unix socket files and loopback hosts (127.0.0.0/8, ::1,
// localhost); false for abstract unix sockets, which any local user can
// reach.
bool IsLoopback(const std::string& listen);

// The GPU indices --gpus names; "all" is empty with all = true.
struct GpuSelection {
  bool all = false;
  std::vector<int> indices;
};
StatusOr<GpuSelection> ParseGpus(const std::string& text);

// Everything about the options that can be checked before opening anything:
// a non-loopback address needs --token-file, with or without TLS (TLS gives
// privacy, not the client's identity); TLS needs both files.
Status CheckOptions(const DaemonOptions& options);

// Serves until SIGINT or SIGTERM, then lets in-flight calls finish. Returns
// the process exit code: 0 after a clean shutdown, 1 when it could not
// start (the reason is logged).
int RunDaemon(const DaemonOptions& options);

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_DAEMON_H_
