#include "server/daemon.h"

#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/health_check_service_interface.h>
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "kernels/cuda_driver.h"
#include "kernels/validate.h"
#include "proto/dataset_stream.h"
#include "server/auth.h"
#include "server/campaigns.h"
#include "server/log.h"
#include "server/parse_errors.h"
#include "server/pg_store.h"
#include "server/service.h"
#include "server/tuning_store.h"
#include "tuner/worker.h"

namespace blocktune {
namespace {

// This machine's name, for a campaign's per-daemon shares.
std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0')
    return "blocktuned";
  return name;
}
int g_signal_pipe[2] = {-1, -1};
}  // namespace
namespace {

constexpr auto kShutdownGrace = std::chrono::seconds(3);
// The memory gRPC's transport may hold for all connections together. The
// message limit alone does not bound it: gRPC 1.51 buffers a whole message
// before its size is checked, so a caller allowed past the token (or any
// caller of a daemon without one) could send many oversized messages at
// once. Past this quota gRPC cancels the largest streams (RESOURCE_EXHAUSTED)
// instead of growing. It is 32 times the largest request, far more than
// imports (one at a time, in 1 MiB chunks) and queries need.
constexpr int kTransportMemoryBytes = 32 * kMaxRequestMessageBytes;

StatusOr<std::string> ReadFile(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return FailedPrecondition(std::string(flag) + ": cannot read " + path);
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const DaemonOptions& options, const TokenAuth& auth) {
  std::optional<TlsKeyPair> tls;
  if (!options.tls_cert.empty()) {
    tls.emplace();
    BT_ASSIGN_OR_RETURN(tls->private_key, ReadFile(options.tls_key, "--tls-key"));
    BT_ASSIGN_OR_RETURN(tls->cert_chain,
                        ReadFile(options.tls_cert, "--tls-cert"));
  }
  return ServerCredentialsFor(auth, tls);
}

void WarnIfReadableByOthers(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    BT_LOG(kWarning) << "--token-file " << path
                     << " is readable by group or others; chmod 600 it";
  }
}

// The GPUs --gpus selects among those the driver sees, and a line for
// Health saying what was found.
std::pair<std::vector<DeviceFingerprint>, std::string> FindGpus(
    const GpuSelection& selection, std::vector<int>* ordinals) {
  std::vector<DeviceFingerprint> gpus;
  if (!selection.all && selection.indices.empty())
    return {gpus, "no GPUs: started with --gpus none"};
  auto driver = cuda::Driver::Get();
  if (!driver.ok()) return {gpus, driver.status().message()};
  std::string status = "CUDA driver " + (*driver)->VersionString() + ", " +
                       std::to_string((*driver)->device_count()) +
                       " device(s) seen";
  for (int i = 0; i < (*driver)->device_count(); ++i) {
    bool wanted = selection.all;
    for (int index : selection.indices) wanted |= (index == i);
    if (!wanted) continue;
    auto fp = (*driver)->Fingerprint(i);
    if (fp.ok()) {
      gpus.push_back(*fp);
      ordinals->push_back(i);
    }
    else status += "; GPU " + std::to_string(i) + ": " + fp.status().message();
  }
  for (int index : selection.indices) {
    if (index >= (*driver)->device_count())
      status += "; --gpus names GPU " + std::to_string(index) + ", which does not exist";
  }
  return {gpus, status};
}

}  // namespace

std::string DefaultDatabasePath() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/blocktune/blocktune.db";
  }
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") +
         "/.local/share/blocktune/blocktune.db";
}

std::string DefaultWorkerPath() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "blocktune-worker";
  std::string path(self, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + "blocktune-worker";
}

bool IsLoopback(const std::string& listen) {
  // A unix socket file is made 0600 (umask 077): only this user can connect.
  // An abstract socket has no file and no permissions: any local user can
  // connect, so it is not counted as loopback and needs the token.
  if (listen.rfind("unix:", 0) == 0) return true;
  if (listen.rfind("unix-abstract:", 0) == 0) return false;
  std::string host = listen;
  if (!host.empty() && host[0] == '[') {  // [v6]:port
    size_t close = host.find(']');
    host = close == std::string::npos ? "" : host.substr(1, close - 1);
  } else {
    size_t colon = host.rfind(':');
    if (colon != std::string::npos) host = host.substr(0, colon);
  }
  if (host == "localhost" || host == "::1") return true;
  return host.rfind("127.", 0) == 0;
}

StatusOr<GpuSelection> ParseGpus(const std::string& text) {
  GpuSelection selection;
  if (text == "all") {
    selection.all = true;
    return selection;
  }
  if (text == "none" || text.empty()) return selection;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    long index = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || index < 0 || index > 63) {
      return InvalidArgument(
          "--gpus must be 'all', 'none' or a comma-separated list of GPU "
          "indices in [0, 63], got '" + text + "'");
    }
    selection.indices.push_back(static_cast<int>(index));
  }
  return selection;
}

Status CheckOptions(const DaemonOptions& options) {
  BT_RETURN_IF_ERROR(LogLevelFromString(options.log_level).status());
  BT_RETURN_IF_ERROR(ParseGpus(options.gpus).status());
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return InvalidArgument("--tls-cert and --tls-key go together; give both");
  }
  // Written so that NaN, which every comparison refuses, is out of range
  // too (CLI11's Range let "nan" through).
  auto in = [](double v, double lo, double hi) { return v >= lo && v <= hi; };
  if (!in(options.kernel_timeout_s, 0.1, 3600)) {
    return InvalidArgument("--kernel-timeout must be in [0.1, 3600] seconds, got " +
                           std::to_string(options.kernel_timeout_s));
  }
  if (!in(options.ensemble_risk, 0, 10)) {
    return InvalidArgument("--ensemble-risk must be in [0, 10], got " +
                           std::to_string(options.ensemble_risk));
  }
  if (options.max_import_mib < 1 || options.max_import_mib > kMaxImportMib) {
    return InvalidArgument("--max-import-mib must be in [1, " +
                           std::to_string(kMaxImportMib) + "], got " +
                           std::to_string(options.max_import_mib));
  }
  if (!IsLoopback(options.listen) && options.token_file.empty()) {
    const bool tls = !options.tls_cert.empty();
    const bool abstract = options.listen.rfind("unix-abstract:", 0) == 0;
    return FailedPrecondition(
        "refusing to listen on " + options.listen + ": " +
        (abstract ? "an abstract unix socket has no file permissions, so "
                    "any local user could connect and use this daemon"
                  : "it is not a loopback address, so anyone who can reach "
                    "it could use this daemon") +
        (tls ? ". TLS encrypts the connection but does not say who the "
               "client is; the token does"
             : "") +
        ". Give --token-file FILE (clients then send the token), or listen "
        "on 127.0.0.1:PORT or unix:PATH");
  }
  return OkStatus();
}


namespace {

// One daemon per database: the store answers cached queries from memory
// and only its own commits invalidate that, so a second blocktuned on the
// same file would serve stale answers. The lock is an flock on the database
// file itself, so it follows the file's identity (device and inode), not
// its path: a symlink or a hard link to a database in use is refused too.
// SQLite's own locks are POSIX record locks, which Linux keeps apart from
// flock. The kernel releases the lock when the process dies, even by
// kill -9; the descriptor stays open for the daemon's life.
std::string LockHolderPid(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return "";
  // /proc/locks: "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF".
  char id[64];
  std::snprintf(id, sizeof(id), ":%lu ", static_cast<unsigned long>(st.st_ino));
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    if (line.find("FLOCK") == std::string::npos ||
        line.find(id) == std::string::npos)
      continue;
    std::istringstream fields(line);
    std::string n, kind, advisory, mode, pid;
    fields >> n >> kind >> advisory >> mode >> pid;
    return pid;
  }
  return "";
}

StatusOr<int> LockDatabase(const std::string& db) {
  int fd = open(db.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) fd = open(db.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return FailedPrecondition("cannot open " + db + " to lock it: " +
                              std::strerror(errno));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const std::string holder = LockHolderPid(fd);
    close(fd);
    return FailedPrecondition(
        "the database " + db + " is in use by another blocktuned" +
        (holder.empty() ? std::string() : " (pid " + holder + ")") +
        " (the same file, whatever path or link names it); stop it, or "
        "give this one its own --db");
  }
  return fd;
}

// A unix socket that another process still serves is refused: gRPC would
// unlink it and bind its own, leaving the first daemon running but
// unreachable (and without a socket file once the second one exits). A
// socket file that nobody serves (a daemon killed with SIGKILL leaves one)
// is replaced, as before.
Status CheckUnixSocketFree(const std::string& listen) {
  if (listen.rfind("unix:", 0) != 0) return OkStatus();
  std::string path = listen.substr(5);
  if (path.rfind("//", 0) == 0) path = path.substr(2);  // unix:///abs/path
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return OkStatus();  // nothing there
  if (!S_ISSOCK(st.st_mode)) {
    return FailedPrecondition("cannot listen on " + listen + ": " + path +
                              " exists and is not a socket; remove it or "
                              "give another --listen");
  }
  sockaddr_un addr {};
  if (path.size() >= sizeof(addr.sun_path)) return OkStatus();  // gRPC says
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return OkStatus();
  const bool served =
      connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  if (served) {
    return FailedPrecondition(
        "cannot listen on " + listen + ": another process (a blocktuned?) "
        "serves " + path + "; stop it, or give this one another --listen");
  }
  return OkStatus();
}

}  // namespace

int RunDaemon(const DaemonOptions& options) {
  Status checked = CheckOptions(options);
  if (!checked.ok()) {
    BT_LOG(kError) << checked.message();
    return 1;
  }
  SetLogLevel(*LogLevelFromString(options.log_level));
  umask(077);  // the database, its WAL and a unix socket are ours alone

  // SIGINT and SIGTERM go through a self-pipe to one thread. A handler,
  // not sigwait with a blocked mask: threads that libraries start before
  // main (OpenBLAS's pool) never see that mask, and a signal delivered to
  // one of them would kill the process.
  if (pipe(g_signal_pipe) != 0) {
    BT_LOG(kError) << "cannot create the signal pipe";
    return 1;
  }
  struct sigaction action {};
  action.sa_handler = [](int signal) {
    const unsigned char byte = static_cast<unsigned char>(signal);
    (void)!write(g_signal_pipe[1], &byte, 1);
  };
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  TokenAuth auth;
  if (!options.token_file.empty()) {
    auto loaded = TokenAuth::FromFile(options.token_file);
    if (!loaded.ok()) {
      BT_LOG(kError) << loaded.status().message();
      return 1;
    }
    WarnIfReadableByOthers(options.token_file);
    auth = *loaded;
  }
  auto credentials = Credentials(options, auth);
  if (!credentials.ok()) {
    BT_LOG(kError) << credentials.status().message();
    return 1;
  }

  // Before the store: a refused daemon changes nothing.
  if (Status free = CheckUnixSocketFree(options.listen); !free.ok()) {
    BT_LOG(kError) << free.message();
    return 1;
  }
  const std::string db = options.db.empty() ? DefaultDatabasePath() : options.db;
  StatusOr<std::unique_ptr<TuningStore>> store =
      Internal("no store");  // replaced below
  std::optional<int> lock_fd;
  if (IsPostgresUri(db)) {
    // A shared database server: other daemons may use it too (issue 22),
    // so there is no file to prepare or lock. Never log `db` itself: it may
    // hold a password; Describe() does not.
    store = OpenPostgresStore(db);
  } else {
    // The folders and the file exist (0700, 0600) before anything opens
    // them.
    auto prepared = PrepareDatabaseFile(db);
    if (!prepared.ok()) {
      BT_LOG(kError) << prepared.status().message();
      return 1;
    }
    for (const std::string& warning : *prepared) BT_LOG(kWarning) << warning;
    auto lock = LockDatabase(db);
    if (!lock.ok()) {
      BT_LOG(kError) << lock.status().message();
      return 1;
    }
    lock_fd = *lock;
    store = OpenSqliteStore(db);
  }
  if (!store.ok()) {
    BT_LOG(kError) << "cannot open the store: " << store.status().ToString();
    return 1;
  }
  BT_LOG(kInfo) << "store " << (*store)->Describe() << " (schema v"
                << (*store)->SchemaVersion() << ")";
  if (lock_fd) {
    // This daemon owns the file alone: campaign items still leased are an
    // earlier daemon's that died, and are free now, not when their
    // leases run out.
    if (Status s = (*store)->ExpireLeases(); !s.ok()) {
      BT_LOG(kWarning) << "cannot free the items of an earlier daemon: "
                       << s.message();
    }
  }

  BlocktuneService service(store->get(), &auth);
  service.SetMaxImportBytes(int64_t{options.max_import_mib} << 20);
  CampaignOptions campaign_options;
  campaign_options.worker_path =
      options.worker.empty() ? DefaultWorkerPath() : options.worker;
  campaign_options.kernel_timeout_s = options.kernel_timeout_s;
  campaign_options.daemon_name = options.name.empty() ? HostName() : options.name;
  campaign_options.holder =
      campaign_options.daemon_name + "/" + std::to_string(getpid());
  campaign_options.lease_s = options.lease_s;
  std::vector<DeviceFingerprint> gpus;
  std::string gpu_status;
  if (options.fake_gpus > 0) {
    for (int i = 0; i < options.fake_gpus; ++i) {
      gpus.push_back(FakeFingerprint());
      campaign_options.gpus.push_back(i);
    }
    gpu_status = std::to_string(options.fake_gpus) +
                 " fake GPU(s) (--fake-gpus, for tests)";
    campaign_options.fake = true;
    campaign_options.worker_args = {"--fake", options.fake_worker};
  } else {
    std::tie(gpus, gpu_status) =
        FindGpus(*ParseGpus(options.gpus), &campaign_options.gpus);
  }
  if (!gpus.empty() && access(campaign_options.worker_path.c_str(), X_OK) != 0) {
    BT_LOG(kError) << "the GPU worker " << campaign_options.worker_path
                   << " is missing or not executable; campaigns will fail "
                      "(give --worker PATH)";
  }
  // Each worker compiles what its GPU measures; with k contexts per kernel,
  // a compile serves k samples. A GPU measures a bf16 GEMM sample in about
  // 2.4 ms and a compile takes one CPU core about 0.23 s, so on a 32-core
  // H100 host two GPUs at 4 contexts per kernel waited a third of their
  // time for compiles (bench/results/h100/campaigns/scaling/runs.txt run9):
  // by default, k grows with the GPUs.
  campaign_options.contexts_per_kernel =
      options.contexts_per_kernel > 0
          ? options.contexts_per_kernel
          : std::min<int>(kMaxContextsPerKernel,
                          kContextsPerKernelPerGpu *
                              std::max<int>(1, static_cast<int>(gpus.size())));
  BT_LOG(kInfo) << gpus.size() << " GPU(s) in use: " << gpu_status;
  for (const DeviceFingerprint& gpu : gpus) BT_LOG(kInfo) << "  " << ToString(gpu);
  BT_LOG(kInfo) << "new campaigns measure each kernel in "
                << campaign_options.contexts_per_kernel << " contexts";
  service.SetAttachedGpus(std::move(gpus), std::move(gpu_status));

  // The surrogates, loaded before the first query can arrive.
  ConfigureCpuInference(0);
  const bool score_cuda = options.score_device != "cpu" && LibtorchHasCuda();
  if (options.score_device == "cuda" && !score_cuda) {
    BT_LOG(kWarning) << "--score-device cuda: this libtorch ("
                     << LibtorchVersion() << ") has no GPU; scoring on the CPU";
  }
  SurrogateRegistry surrogates(store->get(), score_cuda, options.ensemble_risk);
  if (Status loaded = surrogates.LoadAll(); !loaded.ok()) {
    BT_LOG(kError) << "cannot read models: " << loaded.message();
  }
  QueryPolicy policy;
  policy.verify_always = options.verify_queries;
  policy.verify_top = options.verify_top;
  policy.search_threads = options.search_threads;
  policy.search_queue = options.search_queue;
  service.SetSurrogates(&surrogates, policy);
  // Guided campaigns ask the models the queries use, models imported or
  // trained since the start included.
  campaign_options.guide =
      [&surrogates](const KernelFamily& family, DType dtype,
                    const std::string& device) -> StatusOr<GuideModel> {
    if (Status s = surrogates.Refresh(); !s.ok()) return s;
    auto found = surrogates.Find(family.op(), dtype, device, family.name());
    if (found.empty()) {
      return NotFound("no current " + std::string(family.name()) + " " +
                      std::string(ToString(dtype)) + " model of '" + device +
                      "'");
    }
    GuideModel guide;
    guide.id = found.front().id;
    guide.top = [search = found.front().search](const Context& ctx, int k) {
      std::vector<Params> out;
      for (ScoredConfig& c : search->Top(ctx, k))
        out.push_back(std::move(c.params));
      return out;
    };
    return guide;
  };
  campaign_options.guide_threads =
      std::max(1u, std::thread::hardware_concurrency() / 2);
  // The campaign manager exists before the server accepts a call, so that no
  // request sees a service without one.
  CampaignManager campaigns(store->get(), campaign_options);
  service.SetCampaigns(&campaigns);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.listen, *credentials, &port);
  builder.SetMaxReceiveMessageSize(kMaxRequestMessageBytes);
  builder.SetMaxSendMessageSize(kMaxResponseMessageBytes);
  // gRPC sets SO_REUSEPORT by default, and then a second daemon binds the
  // same port and takes half the connections. One port, one daemon.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  grpc::ResourceQuota transport_memory("blocktuned transport");
  transport_memory.Resize(kTransportMemoryBytes);
  builder.SetResourceQuota(transport_memory);
  builder.RegisterService(&service);
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(NewParseErrorInterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    BT_LOG(kError) << "cannot listen on " << options.listen
                   << ": the address is in use (is another blocktuned "
                      "running there?) or is not an address this host has";
    return 1;
  }
  std::string bound = options.listen;
  if (bound.rfind("unix", 0) != 0 && port > 0) {
    bound = bound.substr(0, bound.rfind(':')) + ":" + std::to_string(port);
  }
  // Stored campaigns are queued, and said so, before "listening on": a client
  // that waits for that line sees them.
  if (Status resumed = campaigns.ResumeStored(); !resumed.ok()) {
    BT_LOG(kError) << "cannot resume campaigns: " << resumed.message();
  }
  BT_LOG(kInfo) << "listening on " << bound
                << (auth.enabled() ? " (token required)" : "")
                << (options.tls_cert.empty() ? "" : " (TLS)");

  // Models trained or imported through another daemon of the store load
  // here within a second (the store's generation counter says when).
  std::mutex refresh_mu;
  std::condition_variable refresh_cv;
  bool refresh_stop = false;
  std::thread refresher([&] {
    std::unique_lock lock(refresh_mu);
    while (!refresh_cv.wait_for(lock, std::chrono::seconds(1),
                                [&] { return refresh_stop; })) {
      lock.unlock();
      if (Status s = surrogates.Refresh(); !s.ok()) {
        BT_LOG(kWarning) << "cannot look for new models: " << s.message();
      }
      lock.lock();
    }
  });

  std::thread stopper([&] {
    unsigned char byte = 0;
    while (read(g_signal_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    const int signal = byte;
    BT_LOG(kInfo) << "got " << (signal == SIGINT ? "SIGINT" : "SIGTERM")
                  << ", finishing in-flight calls";
    // Long calls first: a training stops at its next mini-batch and watch
    // streams within 100 ms, each answering UNAVAILABLE and storing
    // nothing partial; then the campaign, whose workers are killed and
    // whose progress is already committed.
    service.BeginShutdown();
    campaigns.Shutdown();  // the running campaign resumes at the next start
    server->GetHealthCheckService()->SetServingStatus(false);
    // Short calls finish within the grace; what is left is then cancelled.
    // The server cannot end a handler that ignores that, so every long one
    // checks for it (service.h), and the grace stays a few seconds: a
    // supervisor's SIGKILL (systemd waits 90 s, docker 10 s) would come
    // long after.
    server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  });
  server->Wait();
  stopper.join();
  {
    std::lock_guard lock(refresh_mu);
    refresh_stop = true;
  }
  refresh_cv.notify_all();
  refresher.join();
  server.reset();
  store->reset();  // closes the database after the last write
  BT_LOG(kInfo) << "stopped";
  return 0;
}

}  // namespace blocktune
