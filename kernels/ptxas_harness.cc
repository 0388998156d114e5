#include "kernels/ptxas_harness.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <thread>
#include <vector>

namespace blocktune {

const PtxasFunction* PtxasReport::Find(const std::string& name) const {
  for (const PtxasFunction& f : functions)
    if (f.name == name) return &f;
  return nullptr;
}

bool PtxasReport::ok(const std::vector<std::string>& entries) const {
  if (!exited_ok) return false;
  for (const std::string& e : entries) {
    const PtxasFunction* f = Find(e);
    if (f == nullptr || f->registers < 0) return false;
  }
  return true;
}

int PtxasReport::max_registers() const {
  int most = -1;
  for (const PtxasFunction& f : functions) most = std::max(most, f.registers);
  return most;
}

int PtxasReport::spill_bytes() const {
  int bytes = 0;
  for (const PtxasFunction& f : functions) bytes += f.spill_bytes();
  return bytes;
}

PtxasReport RunPtxas(const std::string& ptxas, const std::string& ptx,
                     const std::string& arch, const std::string& scratch) {
  PtxasReport out;
  const std::string path = scratch + ".ptx";
  {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << ptx;
    if (!file) {
      out.log = "cannot write " + path;
      return out;
    }
  }
  const std::string cmd = ptxas + " -arch=" + arch + " -v " + path +
                          " -o " + scratch + ".cubin 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    out.log = "cannot run " + cmd;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.log.append(buf, n);
  out.exited_ok = pclose(pipe) == 0;
  // ptxas -v, per function:
  //   ptxas info    : Function properties for blocktune_gemm_mma
  //       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 168 registers, ...
  static const std::regex report(
      "Function properties for (\\S+)\\n[^\\n]*?(\\d+) bytes spill "
      "stores, (\\d+) bytes spill loads\\n[^\\n]*?Used (\\d+) registers");
  for (std::sregex_iterator it(out.log.begin(), out.log.end(), report), end;
       it != end; ++it) {
    PtxasFunction f;
    f.name = (*it)[1];
    f.spill_store_bytes = std::stoi((*it)[2]);
    f.spill_load_bytes = std::stoi((*it)[3]);
    f.registers = std::stoi((*it)[4]);
    out.functions.push_back(std::move(f));
  }
  return out;
}

void ParallelFor(size_t n, int threads,
                 const std::function<void(size_t, int)>& fn) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) {
    pool.emplace_back([&, t] {
      for (size_t i = next++; i < n; i = next++) fn(i, t);
    });
  }
  for (std::thread& t : pool) t.join();
}

}  // namespace blocktune
