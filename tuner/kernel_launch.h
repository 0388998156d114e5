// A generated kernel of any family (kernels/family.h GeneratedKernel)
// loaded into the current CUDA context and launched as one operation: its
// main entry and, where it has one, the entry that adds the K_G partial
// sums after it on the same stream, and the entry that packs the operands
// before it (gemm.mma_pk). The argument blocks are built from the
// entries' named parameters (GeneratedKernel::entry_params), so the worker
// launches every family the same way. A tensor-map parameter
// (GeneratedKernel::tensor_maps, gemm.wgmma's TMA operands) is encoded for
// the operand's device address at each launch (kernels/tensor_map.h) and
// passed by value.
#ifndef BLOCKTUNE_TUNER_KERNEL_LAUNCH_H_
#define BLOCKTUNE_TUNER_KERNEL_LAUNCH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda_driver.h"
#include "kernels/family.h"

namespace blocktune {

// Device addresses and scalars of one C = alpha * op(A) * op(B) + beta * C
// (for a convolution: the NHWC input, the KRSC filter, the NPQK output).
// The sizes and leading dimensions are the problem's.
struct KernelOperands {
  uint64_t a = 0, b = 0, c = 0;
  uint64_t workspace = 0;  // GeneratedKernel::workspace_bytes of memory
  float alpha = 1, beta = 0;
};

class LoadedKernel {
 public:
  // Loads `kernel`, generated for `problem`, from `image` (its PTX, or a
  // cubin compiled from it); raises the dynamic shared-memory limit where
  // the kernel needs more than 48 KiB. `split_k` is K_G (the reduce
  // entry's argument). INTERNAL where an entry has a parameter this
  // launcher does not know. Needs a current context. An image of PTX is
  // JIT-compiled by the driver for the PTX's own `.target` (sm_90a for
  // gemm.wgmma); a cubin must have been compiled for TargetOf(kernel).
  static StatusOr<std::unique_ptr<LoadedKernel>> Load(const Problem& problem,
                                                      GeneratedKernel kernel,
                                                      const std::string& image,
                                                      int64_t split_k);

  const GeneratedKernel& kernel() const { return kernel_; }
  const Problem& problem() const { return problem_; }
  // Enqueues the operation. INVALID_ARGUMENT where A or B is not aligned
  // as the kernel reads it (GeneratedKernel::align_*), or a workspace is
  // needed and missing. A kernel with counters in its workspace
  // (counter_offset >= 0) needs them zero before its first launch; every
  // launch leaves them zero. A kernel with tensor maps: UNAVAILABLE
  // without a driver that encodes them (12.0 or later), INTERNAL where the
  // driver refuses one. A persistent kernel (GeneratedKernel::persistent)
  // launches the programs its device holds at once (counted at Load), or
  // as many as there are work units if fewer. `programs` > 0 launches
  // min(grid, programs) programs of the main entry instead (rounded down to
  // whole clusters): only for kernels whose programs walk their work units
  // grid-stride (gemm.wgmma and conv.wgmma and their variants), which the
  // caller must know; the benchmarks measure other grids with it.
  // A reduce entry that waits for the main entry in griddepcontrol.wait
  // (GeneratedKernel::reduce_dependent) goes as a programmatic dependent
  // launch, unless set_dependent_reduce(false) asked for an ordinary one
  // (the same result; the benchmarks time both).
  Status Launch(const KernelOperands& ops, unsigned programs = 0) const;
  void set_dependent_reduce(bool on) { dependent_reduce_ = on; }

 private:
  LoadedKernel() = default;
  enum class Slot;
  struct Arg {
    Slot slot;
    int offset, size;
    int tensor_map = -1;  // kTensorMap: the index into kernel_.tensor_maps
  };
  static StatusOr<std::vector<Arg>> Resolve(
      const std::vector<KernelParam>& params,
      const std::vector<TensorMapParam>& tensor_maps,
      const std::string& entry);
  Status Enqueue(const cuda::Function& fn, const std::vector<Arg>& args,
                 const std::array<unsigned, 3>& grid,
                 const std::array<unsigned, 3>& block, unsigned shared_bytes,
                 const KernelOperands& ops, bool dependent = false) const;

  Problem problem_;
  GeneratedKernel kernel_;
  int64_t split_k_ = 1;
  std::unique_ptr<cuda::Module> module_;
  cuda::Function main_, reduce_, pack_;
  unsigned persistent_programs_ = 0;  // kernel_.persistent: SMs x resident
  bool dependent_reduce_ = true;
  std::vector<Arg> main_args_, reduce_args_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_KERNEL_LAUNCH_H_
