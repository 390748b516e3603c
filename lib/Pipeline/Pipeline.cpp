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
      .Case("propagate", Stage::Propagate)
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
  case Stage::Propagate:
    return "propagate";
  case Stage::Shard:
    return "shard";
  case Stage::Lower:
    return "lower";
  case Stage::Module:
    return "module";
  }
  return "module";
}

// The lowering's pieces, shared by the targets.

/// The signature's attributes go (they have been read); collectives and
/// f32/f64/bf16 matmuls become runtime calls on buffers
/// (MPI or NCCL, BLAS or cuBLAS; GEMMs read transposed operands in place);
/// then linalg on tensors, elementwise fusion and one-shot bufferization
/// across the step's functions, with identity layouts at their boundaries,
/// its constant globals then named in a fixed order. Buffers keep malloc's
/// own alignment (16 bytes; the vectorized loops' loads and stores need 4),
/// which spares the pointer arithmetic 64-byte alignment puts around each
/// malloc (~1,900 of them in GPT-2 small's step).
static constexpr const char *kToBuffers =
    "strip-graph-attributes,convert-dist-to-runtime,convert-tg-matmul-to-blas,"
    "convert-tg-to-linalg,fuse-elementwise,"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map "
    "buffer-alignment=0},"
    "number-constant-globals,";

/// Every loop nest in the form of a GPU kernel: parallel loops over blocks
/// and threads (--form-gpu-kernels fuses row-wise neighbours first).
/// Deallocations are placed but not lowered yet, so their helper loops stay
/// host code. Dropping the deallocations that free nothing removes the
/// ownership flags placement threads through loops writing a buffer in
/// place (a scatter), which would otherwise keep such a loop on the host.
static constexpr const char *kToKernelLoops =
    "prepare-linalg-for-gpu,"
    "ownership-based-buffer-deallocation,canonicalize,"
    "drop-self-retaining-deallocs,canonicalize,"
    "convert-linalg-to-parallel-loops,canonicalize,form-gpu-kernels,";

/// Host code to the LLVM dialect: f32 math as inline polynomials, each
/// buffer freed after its last use (without that a step leaks its
/// intermediates), and basic blocks cut short for the JIT.
static constexpr const char *kHostToLLVM =
    "approximate-math,"
    "bufferization-lower-deallocations,cse,canonicalize,"
    "convert-bufferization-to-memref,lower-affine,convert-vector-to-scf,"
    "convert-scf-to-cf,expand-strided-metadata,lower-affine,"
    "finalize-memref-to-llvm,func.func(convert-vector-to-llvm),"
    "convert-math-to-llvm,"
    "convert-to-llvm,reconcile-unrealized-casts,branchless-conditional-frees,"
    "wide-interfaces-through-memory{entry=main},split-long-blocks";

LogicalResult buildLoweringPipeline(OpPassManager &pm,
                                    const LoweringOptions &options) {
  std::string pipeline;
  if (options.precision == "bf16")
    pipeline += "tg-mixed-precision,";
  pipeline += kToBuffers;
  // bf16 conversions as integer arithmetic: x86 has no instruction for
  // them and the JIT no libgcc helper.
  if (options.precision == "bf16")
    pipeline += "arith-expand{include-bf16},";
  if (options.target == "cuda") {
    // Kernels through MLIR's NVVM path to PTX (kept in gpu.binary ops);
    // host code allocates through the runtime's _mlir_memref_to_llvm_alloc
    // (CUDA managed memory), so kernels, cuBLAS and NCCL reach every
    // buffer.
    pipeline += kToKernelLoops;
    pipeline += "convert-parallel-loops-to-gpu,gpu-kernel-outlining,"
                "unique-kernel-names,"
                "bufferization-lower-deallocations,cse,canonicalize,"
                "convert-bufferization-to-memref,convert-scf-to-cf,"
                "convert-func-to-llvm,expand-strided-metadata,"
                "nvvm-attach-target{chip=" +
                options.cudaArch +
                " features=+ptx80},"
                "lower-affine,convert-arith-to-llvm,convert-index-to-llvm,"
                "canonicalize,cse,"
                "gpu.module(strip-debuginfo,convert-gpu-to-nvvm,canonicalize,"
                "cse,reconcile-unrealized-casts),"
                "finalize-memref-to-llvm{use-generic-functions},"
                "convert-math-to-llvm,gpu-to-llvm,"
                "gpu-module-to-binary{format=isa},strip-gpu-object-timings,"
                "convert-to-llvm,canonicalize,cse,reconcile-unrealized-casts,"
                "wide-interfaces-through-memory{entry=main}";
  } else if (options.gpuKernelsOnCpu) {
    // The CUDA target's kernel loops, run by the host: checks them on
    // machines without a GPU.
    pipeline += kToKernelLoops;
    pipeline += kHostToLLVM;
  } else {
    // Loops in 8-wide SIMD where the innermost loop reads and writes
    // contiguously (MLIR's affine super-vectorizer; its strided transfers
    // mis-lowered here), then one function per loop nest.
    // Without the ownership flags threaded through scatter loops, those
    // loops are nests of their own, and the glue between nests has none.
    pipeline += "ownership-based-buffer-deallocation,canonicalize,"
                "drop-self-retaining-deallocs,canonicalize,"
                "convert-linalg-to-affine-loops,"
                "func.func(vectorize-affine-loops{vector-size=8}),"
                "canonicalize,outline-loop-nests,";
    pipeline += kHostToLLVM;
  }
  return parsePassPipeline(pipeline, pm, llvm::errs());
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
  if (options.emit >= Stage::Propagate && options.spec)
    dist::addShardPasses(pm, *options.spec,
                         /*partition=*/options.emit >= Stage::Shard);
  if (options.emit >= Stage::Lower)
    return buildLoweringPipeline(pm, options.lowering);
  return success();
}

} // namespace spmdc
