//===- LoweringOptions.h - what the lower stage targets ---------*- C++ -*-===//
//
// Plain C++ (no MLIR), so that the drivers' command lines, built with
// exceptions and RTTI for CLI11, can fill it in.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_PIPELINE_LOWERINGOPTIONS_H
#define SPMDC_PIPELINE_LOWERINGOPTIONS_H

#include <cstdint>

namespace spmdc {

/// Where the lowered step runs.
enum class Target {
  /// LLVM for the host, MPI, BLAS.
  Cpu,
  /// PTX kernels, NCCL, cuBLAS.
  Cuda
};

/// The precision of the step's matmuls.
enum class Precision {
  F32,
  /// Matmuls in bf16 (--tg-mixed-precision), all else f32.
  BF16
};

/// The GPU the PTX is for (cuda).
enum class CudaArch { Sm80, Sm90 };

/// "cpu" or "cuda", as spmdc's --target and the module file spell them.
const char *targetName(Target target);
/// "sm_80" or "sm_90": the chip nvvm-attach-target compiles for.
const char *cudaArchName(CudaArch arch);

/// What the lower stage targets.
struct LoweringOptions {
  Target target = Target::Cpu;
  CudaArch cudaArch = CudaArch::Sm90;
  /// cpu: form the loop nests the CUDA target makes kernels of, but run
  /// them on the host (to check them without a GPU).
  bool gpuKernelsOnCpu = false;
  Precision precision = Precision::F32;
  /// Collectives that overlap the compute (--dist-async-collectives: each
  /// started as early as its input exists, waited for at its first use).
  bool overlap = false;
  /// With overlap: how many parameter gathers may be under way ahead of the
  /// one waited for (each holds one more group's parameters).
  unsigned prefetchDepth = 1;
  /// cpu: large loop nests with independent outer iterations take their
  /// outer loop's bounds and are called through spmd_parallel_for, which
  /// shares them among a rank's threads (--parallelize-loop-nests).
  bool parallelNests = true;
  /// The operations (vector lanes counted) a nest executes at least to be
  /// shared among threads: below it, waking a thread costs more than the
  /// half of the nest it would take.
  int64_t parallelNestsMinWork = 262144;
};

} // namespace spmdc

#endif // SPMDC_PIPELINE_LOWERINGOPTIONS_H
