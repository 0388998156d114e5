#include "tuner/kernel_launch.h"

#include <algorithm>
#include <cstring>

#include "kernels/tensor_map.h"

namespace blocktune {

// What each named entry parameter (kernels/gemm_ptx.h EntryParams and
// ReduceParams: gemm.ffma, conv.ffma and gemm.mma share them; gemm.wgmma
// takes a subset and two tensor maps) takes.
enum class LoadedKernel::Slot {
  kA, kB, kC, kW, kM, kN, kK, kLda, kLdb, kLdc, kAlpha, kBeta, kSplitK,
  kH, kWIn, kCIn, kP, kQ, kS, kPadH, kPadW, kStrideH, kStrideW,
  kDilationH, kDilationW, kTensorMap,
};

StatusOr<std::vector<LoadedKernel::Arg>> LoadedKernel::Resolve(
    const std::vector<KernelParam>& params,
    const std::vector<TensorMapParam>& tensor_maps, const std::string& entry) {
  using S = Slot;
  struct Named {
    const char* name;
    Slot slot;
    int size;  // bytes
  };
  static const Named kNames[] = {
      {"A", S::kA, 8},           {"B", S::kB, 8},
      {"C", S::kC, 8},           {"W", S::kW, 8},
      {"M", S::kM, 4},           {"N", S::kN, 4},
      {"K", S::kK, 4},           {"lda", S::kLda, 4},
      {"ldb", S::kLdb, 4},       {"ldc", S::kLdc, 4},
      {"alpha", S::kAlpha, 4},   {"beta", S::kBeta, 4},
      {"K_G", S::kSplitK, 4},    {"H", S::kH, 4},
      {"W_in", S::kWIn, 4},      {"C_in", S::kCIn, 4},
      {"P", S::kP, 4},           {"Q", S::kQ, 4},
      {"S", S::kS, 4},           {"pad_h", S::kPadH, 4},
      {"pad_w", S::kPadW, 4},    {"stride_h", S::kStrideH, 4},
      {"stride_w", S::kStrideW, 4}, {"dilation_h", S::kDilationH, 4},
      {"dilation_w", S::kDilationW, 4},
  };
  std::vector<Arg> args;
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelParam& p = params[i];
    int map = -1;
    for (size_t j = 0; j < tensor_maps.size(); ++j)
      if (tensor_maps[j].param_index == static_cast<int>(i)) map = static_cast<int>(j);
    if (map >= 0) {
      const char operand = tensor_maps[map].operand;
      if (p.size != static_cast<int>(sizeof(EncodedTensorMap)) ||
          p.offset < 0 || p.offset % 64 != 0 ||
          (operand != 'A' && operand != 'B' && operand != 'C' &&
           operand != 'W')) {
        return Internal("entry " + entry + ": tensor map parameter " +
                        std::string(p.name) + " must be 128 bytes at a " +
                        "64-byte aligned offset of operand A, B, C or W");
      }
      args.push_back({S::kTensorMap, p.offset, p.size, map});
      continue;
    }
    const Named* found = nullptr;
    for (const Named& n : kNames)
      if (std::strcmp(n.name, p.name) == 0) found = &n;
    if (found == nullptr || found->size != p.size || p.offset < 0) {
      return Internal("entry " + entry + ": the worker cannot pass parameter " +
                      std::string(p.name) + " (" + p.type + ", " +
                      std::to_string(p.size) + " bytes)");
    }
    args.push_back({found->slot, p.offset, p.size, -1});
  }
  return args;
}

StatusOr<std::unique_ptr<LoadedKernel>> LoadedKernel::Load(
    const Problem& problem, GeneratedKernel kernel, const std::string& image,
    int64_t split_k) {
  std::unique_ptr<LoadedKernel> k(new LoadedKernel);
  k->problem_ = problem;
  k->kernel_ = std::move(kernel);
  k->split_k_ = split_k;
  const GeneratedKernel& g = k->kernel_;
  BT_ASSIGN_OR_RETURN(k->main_args_,
                      Resolve(g.entry_params, g.tensor_maps, g.entry));
  BT_ASSIGN_OR_RETURN(k->module_, cuda::Module::Load(image));
  BT_ASSIGN_OR_RETURN(k->main_, k->module_->GetFunction(g.entry));
  if (g.dynamic_shared_bytes > 48 * 1024) {
    BT_RETURN_IF_ERROR(cuda::SetMaxDynamicShared(
        k->main_, static_cast<int>(g.dynamic_shared_bytes)));
  }
  BT_RETURN_IF_ERROR(cuda::PreferSharedCarveout(k->main_, 100));
  if (g.persistent) {
    BT_ASSIGN_OR_RETURN(
        k->persistent_programs_,
        cuda::PersistentPrograms(k->main_, g.block[0] * g.block[1] * g.block[2],
                                 g.dynamic_shared_bytes));
  }
  if (!g.pack_entry.empty()) {
    BT_ASSIGN_OR_RETURN(k->pack_, k->module_->GetFunction(g.pack_entry));
  }
  if (!g.reduce_entry.empty()) {
    BT_ASSIGN_OR_RETURN(k->reduce_args_,
                        Resolve(g.reduce_params, {}, g.reduce_entry));
    BT_ASSIGN_OR_RETURN(k->reduce_, k->module_->GetFunction(g.reduce_entry));
  }
  return k;
}

Status LoadedKernel::Enqueue(const cuda::Function& fn,
                             const std::vector<Arg>& args,
                             const std::array<unsigned, 3>& grid,
                             const std::array<unsigned, 3>& block,
                             unsigned shared_bytes,
                             const KernelOperands& ops, bool dependent) const {
  const GemmShape g = ImplicitGemm(problem_.ctx);
  const auto ld = LeadingDims(problem_);
  const ConvContext* cv = std::get_if<ConvContext>(&problem_.ctx);
  // A convolution's implicit GEMM: A rows of C channels, B (the filter)
  // rows of C*R*S, C rows of K output channels.
  const int64_t lda = cv ? cv->c : ld[0];
  const int64_t ldb = cv ? g.k : ld[1];
  const int64_t ldc = cv ? g.n : ld[2];
  const uint64_t workspace = kernel_.workspace_bytes > 0 ? ops.workspace : 0;
  int size = 0;
  for (const Arg& a : args) size = std::max(size, a.offset + a.size);
  std::vector<unsigned char> block_bytes(static_cast<size_t>(size));
  // Encoded maps live apart, 128-byte aligned as cuda.h declares
  // CUtensorMap; the argument pointers point at them.
  std::vector<EncodedTensorMap> maps;
  maps.reserve(kernel_.tensor_maps.size());
  std::vector<void*> pointers;
  for (const Arg& a : args) {
    if (a.slot == Slot::kTensorMap) {
      const TensorMapParam& t = kernel_.tensor_maps[a.tensor_map];
      BT_ASSIGN_OR_RETURN(
          EncodedTensorMap m,
          EncodeTensorMap(t.map, t.operand == 'A'   ? ops.a
                                 : t.operand == 'B' ? ops.b
                                 : t.operand == 'W'
                                     ? workspace + static_cast<uint64_t>(t.offset)
                                     : ops.c));
      maps.push_back(m);
      pointers.push_back(maps.back().bytes);
      continue;
    }
    unsigned char* at = block_bytes.data() + a.offset;
    uint64_t u = 0;
    bool is_float = false;
    float f = 0;
    using S = Slot;
    switch (a.slot) {
      case S::kA: u = ops.a; break;
      case S::kB: u = ops.b; break;
      case S::kC: u = ops.c; break;
      case S::kW: u = workspace; break;
      case S::kM: u = g.m; break;
      case S::kN: u = g.n; break;
      case S::kK: u = g.k; break;
      case S::kLda: u = lda; break;
      case S::kLdb: u = ldb; break;
      case S::kLdc: u = ldc; break;
      case S::kAlpha: is_float = true; f = ops.alpha; break;
      case S::kBeta: is_float = true; f = ops.beta; break;
      case S::kSplitK: u = split_k_; break;
      case S::kH: u = cv ? cv->h : 0; break;
      case S::kWIn: u = cv ? cv->w : 0; break;
      case S::kCIn: u = cv ? cv->c : 0; break;
      case S::kP: u = cv ? cv->P() : 0; break;
      case S::kQ: u = cv ? cv->Q() : 0; break;
      case S::kS: u = cv ? cv->s : 0; break;
      case S::kPadH: u = cv ? cv->pad_h : 0; break;
      case S::kPadW: u = cv ? cv->pad_w : 0; break;
      case S::kStrideH: u = cv ? cv->stride_h : 0; break;
      case S::kStrideW: u = cv ? cv->stride_w : 0; break;
      case S::kDilationH: u = cv ? cv->dilation_h : 0; break;
      case S::kDilationW: u = cv ? cv->dilation_w : 0; break;
      case S::kTensorMap: break;  // handled above
    }
    if (is_float) {
      std::memcpy(at, &f, 4);
    } else if (a.size == 8) {
      std::memcpy(at, &u, 8);
    } else {
      const uint32_t v = static_cast<uint32_t>(u);
      std::memcpy(at, &v, 4);
    }
    pointers.push_back(at);
  }
  // Generators leave unused dimensions 0 (a 1-D reduce grid).
  auto dim = [](unsigned v) { return v == 0 ? 1u : v; };
  const cuda::Dim3 g3{dim(grid[0]), dim(grid[1]), dim(grid[2])},
      b3{dim(block[0]), dim(block[1]), dim(block[2])};
  if (dependent)
    return cuda::LaunchDependent(fn, g3, b3, shared_bytes, std::move(pointers));
  return cuda::Launch(fn, g3, b3, shared_bytes, std::move(pointers));
}

Status LoadedKernel::Launch(const KernelOperands& ops,
                            unsigned programs) const {
  const GeneratedKernel& k = kernel_;
  const auto ld = LeadingDims(problem_);
  const bool gemm = std::holds_alternative<GemmContext>(problem_.ctx);
  // A convolution's B rows are C*R*S long.
  const int64_t lda = gemm ? ld[0] : 1;
  const int64_t ldb = gemm ? ld[1] : ImplicitGemm(problem_.ctx).k;
  auto aligned = [&](const char* name, uint64_t address, int64_t ld,
                     int64_t align) -> Status {
    const uint64_t bytes = static_cast<uint64_t>(std::max<int64_t>(k.align_bytes, 1));
    if (address % bytes != 0 || ld % std::max<int64_t>(align, 1) != 0) {
      return InvalidArgument(
          std::string(name) + ": this kernel reads it in chunks that need a " +
          std::to_string(bytes) + "-byte aligned address and a leading " +
          "dimension that is a multiple of " + std::to_string(align) +
          "; got ld " + std::to_string(ld));
    }
    return OkStatus();
  };
  // A convolution's input rows are C channels long.
  const int64_t row_a = gemm ? lda : std::get<ConvContext>(problem_.ctx).c;
  BT_RETURN_IF_ERROR(aligned(gemm ? "a" : "input", ops.a, row_a, k.align_a));
  BT_RETURN_IF_ERROR(aligned(gemm ? "b" : "filter", ops.b, ldb, k.align_b));
  if (k.align_c > 1) {
    BT_RETURN_IF_ERROR(aligned(gemm ? "c" : "output", ops.c,
                               gemm ? ld[2] : ImplicitGemm(problem_.ctx).n,
                               k.align_c));
  }
  if (k.workspace_bytes > 0 && ops.workspace == 0) {
    return InvalidArgument("this kernel needs a workspace of " +
                           std::to_string(k.workspace_bytes) + " bytes");
  }
  // The pack entry takes the main entry's arguments.
  if (!k.pack_entry.empty()) {
    BT_RETURN_IF_ERROR(
        Enqueue(pack_, main_args_, k.pack_grid, k.pack_block, 0, ops));
  }
  std::array<unsigned, 3> grid = k.grid;
  if (programs == 0) programs = persistent_programs_;
  if (programs > 0) grid[0] = ClampedPrograms(grid[0], programs, k.cluster);
  BT_RETURN_IF_ERROR(Enqueue(main_, main_args_, grid, k.block,
                             k.dynamic_shared_bytes, ops));
  if (k.reduce_entry.empty()) return OkStatus();
  return Enqueue(reduce_, reduce_args_, k.reduce_grid, k.reduce_block, 0, ops,
                 k.reduce_dependent && dependent_reduce_);
}

}  // namespace blocktune
