//===- Pipeline.cpp - the stages of spmdc as one pass pipeline ------------===//

#include "spmdc/Pipeline/Pipeline.h"
#include "spmdc/Dialect/Dist/Transforms/Passes.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace spmdc {

std::optional<Stage> parseStage(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Stage>>(name)
      .Case("import", Stage::Import)
      .Case("decompose", Stage::Decompose)
      .Case("autodiff", Stage::Autodiff)
      .Case("partition", Stage::Partition)
      .Case("shard", Stage::Shard)
      .Case("lower", Stage::Lower)
      .Case("module", Stage::Module)
      .Default(std::nullopt);
}

llvm::StringRef stageName(Stage stage) {
  switch (stage) {
  case Stage::Import:
    return "import";
  case Stage::Decompose:
    return "decompose";
  case Stage::Autodiff:
    return "autodiff";
  case Stage::Partition:
    return "partition";
  case Stage::Shard:
    return "shard";
  case Stage::Lower:
    return "lower";
  case Stage::Module:
    return "module";
  }
  return "module";
}

LogicalResult buildLoweringPipeline(OpPassManager &pm,
                                    const LoweringOptions &options) {
  if (options.target == "cuda")
    return buildCudaLoweringPipeline(pm, options);
  // Collectives and f32/f64 matmuls become runtime calls on buffers (MPI,
  // BLAS); then MLIR's own path from linalg on tensors to the LLVM dialect:
  // elementwise fusion, one-shot bufferization across the step's functions,
  // deallocation of every buffer once its last user is done (without it a
  // step leaks its intermediates), loops, LLVM.
  return parsePassPipeline(
      "convert-dist-to-runtime,convert-tg-matmul-to-blas,"
      "convert-tg-to-linalg,linalg-fuse-elementwise-ops,"
      "one-shot-bufferize{bufferize-function-boundaries},"
      "ownership-based-buffer-deallocation,canonicalize,"
      "bufferization-lower-deallocations,cse,canonicalize,"
      "convert-bufferization-to-memref,"
      "convert-linalg-to-loops,convert-scf-to-cf,"
      "expand-strided-metadata,lower-affine,finalize-memref-to-llvm,"
      "convert-math-to-llvm,convert-to-llvm,reconcile-unrealized-casts",
      pm, llvm::errs());
}

LogicalResult buildCudaLoweringPipeline(OpPassManager &pm,
                                        const LoweringOptions &options) {
  // The CPU path up to bufferized linalg (collectives: NCCL, matmuls:
  // cuBLAS, behind the same runtime calls). Then every loop nest becomes a
  // kernel (--form-gpu-kernels fuses row-wise neighbours first; the
  // deallocations are lowered after it, so their helper loops stay host
  // code), MLIR's
  // NVVM path compiles the kernels to PTX, and the host code allocates
  // through the runtime's _mlir_memref_to_llvm_alloc (managed memory) so
  // kernels, cuBLAS and NCCL can reach every buffer.
  std::string arch = options.cudaArch;
  return parsePassPipeline(
      "convert-dist-to-runtime,convert-tg-matmul-to-blas,"
      "convert-tg-to-linalg,linalg-fuse-elementwise-ops,"
      "one-shot-bufferize{bufferize-function-boundaries},"
      "prepare-linalg-for-gpu,"
      "ownership-based-buffer-deallocation,canonicalize,"
      "convert-linalg-to-parallel-loops,canonicalize,"
      "form-gpu-kernels,convert-parallel-loops-to-gpu,"
      "gpu-kernel-outlining,"
      "bufferization-lower-deallocations,cse,canonicalize,"
      "convert-bufferization-to-memref,convert-scf-to-cf,"
      "convert-func-to-llvm,expand-strided-metadata,"
      "nvvm-attach-target{chip=" + arch + " features=+ptx80},"
      "lower-affine,convert-arith-to-llvm,convert-index-to-llvm,"
      "canonicalize,cse,"
      "gpu.module(strip-debuginfo,convert-gpu-to-nvvm,canonicalize,cse,"
      "reconcile-unrealized-casts),"
      "finalize-memref-to-llvm{use-generic-functions},"
      "convert-math-to-llvm,gpu-to-llvm,"
      "gpu-module-to-binary{format=isa},"
      "convert-to-llvm,canonicalize,cse,reconcile-unrealized-casts",
      pm, llvm::errs());
}

LogicalResult buildPipeline(OpPassManager &pm, const PipelineOptions &options) {
  if (options.emit >= Stage::Decompose)
    pm.addPass(tg::createTgDecompose());
  if (options.emit >= Stage::Autodiff) {
    pm.addPass(tg::createTgAutodiff());
    // Unset hyperparameters keep the pass's defaults (PyTorch's).
    const OptimizerOptions &o = options.optimizer;
    tg::TgOptimizerOptions opt;
    opt.optimizer = o.name;
    if (o.lr)
      opt.lr = *o.lr;
    if (o.momentum)
      opt.momentum = *o.momentum;
    if (o.weightDecay)
      opt.weightDecay = *o.weightDecay;
    if (o.beta1)
      opt.beta1 = *o.beta1;
    if (o.beta2)
      opt.beta2 = *o.beta2;
    if (o.eps)
      opt.eps = *o.eps;
    pm.addPass(tg::createTgOptimizer(opt));
  }
  if (options.emit >= Stage::Partition) {
    tg::TgPartitionOptions partition;
    partition.policy = options.partition;
    pm.addPass(tg::createTgPartition(partition));
  }
  if (options.emit >= Stage::Shard && options.spec)
    pm.addPass(dist::createDistShardPass(*options.spec));
  if (options.emit >= Stage::Lower)
    return buildLoweringPipeline(pm, options.lowering);
  return success();
}

} // namespace spmdc
