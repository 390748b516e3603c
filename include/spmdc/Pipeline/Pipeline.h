//===- Pipeline.h - the stages of spmdc as one pass pipeline ----*- C++ -*-===//
//
// What `spmdc --emit=STAGE` runs: the passes of every stage up to STAGE, in
// order. The driver stays thin; this is the one place the order lives.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_PIPELINE_PIPELINE_H
#define SPMDC_PIPELINE_PIPELINE_H

#include "spmdc/Dialect/Dist/Transforms/PassOptions.h"
#include "spmdc/Dialect/TensorGraph/Transforms/PassOptions.h"
#include "spmdc/Pipeline/LoweringOptions.h"
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
  tg::OptimizerKind kind = tg::OptimizerKind::AdamW;
  std::optional<double> lr, momentum, weightDecay, beta1, beta2, eps;
  /// The gradients' global-norm bound (torch's clip_grad_norm_), or unset.
  std::optional<double> clipGradNorm;
};

struct PipelineOptions {
  Stage emit = Stage::Module;
  OptimizerOptions optimizer;
  tg::PartitionPolicy partition = tg::PartitionPolicy::MinCut;
  /// Micro-batches an optimizer step (spmdc --grad-accum); 1: none.
  int64_t gradAccum = 1;
  dist::FsdpGroup fsdpGroup = dist::FsdpGroup::layer();
  /// The gradient collectives' bucket size in MiB (DDP's, ZeRO-1/2's); 0:
  /// one collective per tensor.
  double bucketMiB = dist::kDefaultBucketMiB;
  /// The shard spec; absent: one rank, no sharding.
  std::optional<ShardSpec> spec;
  LoweringOptions lowering;
};

/// The lower stage alone: primitive tg ops on tensors down to the LLVM
/// dialect (host code; for cuda also gpu.binary ops holding the PTX).
void buildLoweringPipeline(mlir::OpPassManager &pm,
                           const LoweringOptions &options);

/// Registers the lower stage as the pass pipelines spmdc-lower-cpu and
/// spmdc-lower-cuda (options: precision; gpu-kernels-on-cpu for cpu,
/// cuda-arch for cuda), so that spmdc-opt runs what spmdc --emit=lower
/// runs.
void registerLoweringPipelines();

/// Adds the passes of the stages up to `options.emit` to `pm` (module: the
/// same as lower; the driver packs the result); failure (with an error) for
/// what this build does not implement yet.
mlir::LogicalResult buildPipeline(mlir::OpPassManager &pm,
                                  const PipelineOptions &options);

} // namespace spmdc

#endif // SPMDC_PIPELINE_PIPELINE_H
