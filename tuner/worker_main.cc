// blocktune-worker: one GPU's worker process. blocktuned starts it with
// its stdin and stdout as the pipe of tuner/worker_protocol.h; run by hand
// it waits for framed messages, so it is of little use outside the daemon.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "tuner/worker.h"

int main(int argc, char** argv) {
  // Die with the daemon, even after kill -9: a worker left behind would
  // hold its GPU.
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 1;
  signal(SIGPIPE, SIG_IGN);  // a closed pipe is a write error, not a death
  CLI::App app{"blocktune-worker: benchmarks kernels on one GPU for blocktuned"};
  int gpu = 0;
  std::string fake;
  int threads = 0;
  blocktune::GpuBackendOptions gpu_options;
  app.add_option("--gpu", gpu, "GPU ordinal")->check(CLI::Range(0, 63));
  app.add_option("--fake", fake,
                 "use a fake GPU (tests): key=N,... as in tuner/worker.h");
  app.add_option("--compile-threads", threads,
                 "compile threads; 0: the cores less one")
      ->check(CLI::Range(0, 32));
  app.add_option("--verify-fraction", gpu_options.verify_fraction,
                 "share of samples of already verified kernels checked again")
      ->check(CLI::Range(0.0, 1.0));
  CLI11_PARSE(app, argc, argv);

  std::unique_ptr<blocktune::WorkerBackend> backend;
  if (!fake.empty()) {
    auto made = blocktune::NewFakeBackend(fake);
    if (!made.ok()) {
      std::cerr << "blocktune-worker: " << made.status().message() << "\n";
      return 2;
    }
    backend = std::move(*made);
  } else {
    backend = blocktune::NewGpuBackend(gpu, gpu_options);
  }
  blocktune::WorkerOptions options;
  options.compile_threads = threads;
  const int code = blocktune::RunWorker(*backend, STDIN_FILENO, STDOUT_FILENO,
                                        options);
  // Threads may still be blocked on the pipe or the GPU; end here.
  _exit(code);
}
