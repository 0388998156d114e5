// ask ADDRESS: one GEMM query and its kernel, through the installed
// blocktune package. Exit 0 when both come back.
#include <blocktune/client.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ask ADDRESS\n");
    return 2;
  }
  blocktune::Client client(argv[1]);
  const blocktune::GemmProblem problem{4096, 16, 4096, false, true};
  auto answer = client.Query(problem);
  if (!answer) {
    std::fprintf(stderr, "query: %s: %s\n", blocktune::ToString(answer.error().code),
                 answer.error().message.c_str());
    return 1;
  }
  std::printf("answer %s match=%s predicted_us=%.1f device=%s\n",
              answer->block.ToString().c_str(), blocktune::ToString(answer->match),
              answer->predicted_seconds * 1e6, answer->provenance.device.c_str());
  auto kernel = client.GetKernel(problem);
  if (!kernel) {
    std::fprintf(stderr, "kernel: %s\n", kernel.error().message.c_str());
    return 1;
  }
  std::printf("kernel %s %s grid %ux%ux%u block %u ptx_bytes %zu same_block %d\n",
              kernel->entry.c_str(), kernel->arch.c_str(), kernel->grid[0],
              kernel->grid[1], kernel->grid[2], kernel->block[0],
              kernel->ptx.size(), kernel->config == answer->block ? 1 : 0);
  return 0;
}
