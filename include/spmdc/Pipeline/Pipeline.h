//===- Pipeline.h - the stages of spmdc as one pass pipeline ----*- C++ -*-===//
//
// What `spmdc --emit=STAGE` runs: the passes of every stage up to STAGE, in
// order. The driver stays thin; this is the one place the order lives.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_PIPELINE_PIPELINE_H
#define SPMDC_PIPELINE_PIPELINE_H

#include "spmdc/Sharding/ShardSpec.h"

#include "mlir/Pass/PassManager.h"

#include <optional>
#include <string>

namespace spmdc {

enum class Stage {
  Import,
  Decompose,
  Autodiff,
  Partition,
  Propagate,
  Shard,
  Lower,
  Module
};

/// Parses a stage name (import, decompose, ...).
std::optional<Stage> parseStage(llvm::StringRef name);
llvm::StringRef stageName(Stage stage);

struct OptimizerOptions {
  std::string name = "adamw";
  std::optional<double> lr, momentum, weightDecay, beta1, beta2, eps;
};

/// What the lower stage targets.
struct LoweringOptions {
  /// cpu (LLVM for the host, MPI, BLAS) or cuda (PTX kernels, NCCL,
  /// cuBLAS).
  std::string target = "cpu";
  /// The GPU the PTX is for (cuda): sm_80 or sm_90.
  std::string cudaArch = "sm_90";
  /// cpu: form the loop nests the CUDA target makes kernels of, but run
  /// them on the host (to check them without a GPU).
  bool gpuKernelsOnCpu = false;
  /// f32, or bf16: matmuls in bf16 (--tg-mixed-precision), all else f32.
  std::string precision = "f32";
};

struct PipelineOptions {
  Stage emit = Stage::Module;
  OptimizerOptions optimizer;
  /// save-all or min-cut.
  std::string partition = "min-cut";
  /// The shard spec; absent: one rank, no sharding.
  std::optional<ShardSpec> spec;
  LoweringOptions lowering;
};

/// The lower stage alone: primitive tg ops on tensors down to the LLVM
/// dialect (host code; for cuda also gpu.binary ops holding the PTX).
mlir::LogicalResult buildLoweringPipeline(mlir::OpPassManager &pm,
                                          const LoweringOptions &options);

/// Adds the passes of the stages up to `options.emit` to `pm` (module: the
/// same as lower; the driver packs the result); failure (with an error) for
/// what this build does not implement yet.
mlir::LogicalResult buildPipeline(mlir::OpPassManager &pm,
                                  const PipelineOptions &options);

} // namespace spmdc

#endif // SPMDC_PIPELINE_PIPELINE_H
