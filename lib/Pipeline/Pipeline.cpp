//===- Pipeline.cpp - the stages of spmdc as one pass pipeline ------------===//

#include "spmdc/Pipeline/Pipeline.h"
#include "spmdc/Conversion/Passes.h"
#include "spmdc/Dialect/Dist/Transforms/Passes.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"

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

const char *targetName(Target target) {
  return target == Target::Cuda ? "cuda" : "cpu";
}

const char *cudaArchName(CudaArch arch) {
  return arch == CudaArch::Sm80 ? "sm_80" : "sm_90";
}

// The lowering's pieces, shared by the targets.

/// The arguments the step may overwrite are marked (the parameters and
/// state it returns updated); the signature's attributes go (they have
/// been read); collectives and
/// f32/f64/bf16 matmuls become runtime calls on buffers
/// (MPI or NCCL, BLAS or cuBLAS; GEMMs read transposed operands in place);
/// then linalg on tensors, elementwise fusion, large splat constants as
/// fills (not globals of their size), elementwise results written over
/// inputs dead after them, and one-shot bufferization across the step's
/// functions, with identity layouts at their boundaries; donated
/// parameters and state updated in their own buffers, a private
/// function's results that are its arguments' buffers dropped, and the
/// constant globals named in a fixed order. Buffers keep malloc's
/// own alignment (16 bytes; the vectorized loops' loads and stores need 4),
/// which spares the pointer arithmetic 64-byte alignment puts around each
/// malloc (~1,900 of them in GPT-2 small's step).
static void addToBuffers(OpPassManager &pm, const LoweringOptions &options) {
  pm.addPass(createMarkDonatedArguments());
  pm.addPass(createStripGraphAttributes());
  // With --overlap, collectives start early and are waited for late.
  if (options.overlap)
    pm.addPass(dist::createDistAsyncCollectives({options.prefetchDepth}));
  // On the host, where each buffer is freed after its last use, @backward
  // goes into @main, so that the saved activations are freed after theirs
  // rather than when the backward returns. After the collectives are
  // started early: a backward's gathers stay after the forward's call.
  // Then each parameter is updated, and its gradient freed, as soon as
  // the gradient is final.
  if (options.target == Target::Cpu) {
    pm.addPass(createInlineSingleCalls());
    pm.addPass(createEarlyOptimizerUpdates());
  }
  pm.addPass(createConvertDistToRuntime());
  pm.addPass(createConvertTgMatmulToBlas());
  // One function at a time, the step's functions in parallel.
  OpPassManager &perFunction = pm.nest<func::FuncOp>();
  perFunction.addPass(createConvertTgToLinalg());
  perFunction.addPass(createFuseElementwise());
  pm.addPass(createSplatConstantsToFills());
  pm.addPass(createOverwriteDeadInputs());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.bufferAlignment = 0;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createOverwriteDonatedBuffers());
  // On the host, the step's results made in the buffers of the arguments
  // they come back as, where those are done with (ZeRO's gathered
  // parameters).
  if (options.target == Target::Cpu)
    pm.addPass(createResultsInDonatedBuffers());
  pm.addPass(createDropReturnedArguments());
  // On the host, concatenations and the slices out of them without copies
  // where nothing else touches a slice meanwhile (DDP's buckets).
  // Then each all-reduce whose input dies at it reduces in the input's
  // buffer.
  if (options.target == Target::Cpu) {
    pm.addNestedPass<func::FuncOp>(createElideSliceCopies());
    pm.addNestedPass<func::FuncOp>(createAllReduceInPlace());
  }
  pm.addPass(createNumberConstantGlobals());
}

/// Deallocations placed; those that free nothing dropped. Dropping them
/// removes the ownership flags placement threads through loops writing a
/// buffer in place (a scatter), which would otherwise keep such a loop on
/// the host (cuda) or out of a nest of its own (cpu). On the host, each
/// buffer is then freed after its last use rather than at its block's end.
/// A donated argument goes back as itself, not as a clone.
/// The most bytes the buffers then hold at once is recorded for the report.
static void addDeallocations(OpPassManager &pm, bool onHost) {
  pm.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addPass(createDropSelfRetainingDeallocs());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addPass(createReturnDonatedArguments());
  if (onHost)
    pm.addPass(createFreeAfterLastUse());
  pm.addPass(createRecordBufferPeak());
}

/// Every loop nest in the form of a GPU kernel: parallel loops over blocks
/// and threads (--form-gpu-kernels fuses row-wise neighbours first).
/// Deallocations are placed but not lowered yet, so their helper loops stay
/// host code.
static void addToKernelLoops(OpPassManager &pm, bool onHost) {
  pm.addPass(createPrepareLinalgForGpu());
  addDeallocations(pm, onHost);
  pm.addPass(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createFormGpuKernels());
}

/// The entry's arguments and results through memory, as spmd-run calls it.
static void addWideInterfaces(OpPassManager &pm) {
  WideInterfacesThroughMemoryOptions wide;
  wide.entries = {"main", "eval"};
  pm.addPass(createWideInterfacesThroughMemory(wide));
}

/// The placed deallocations as memref.dealloc, both targets' host code.
static void addLowerDeallocations(OpPassManager &pm) {
  pm.addPass(bufferization::createLowerDeallocationsPass());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createConvertBufferizationToMemRefPass());
}

/// Host code to the LLVM dialect: f32 math as inline polynomials, each
/// buffer freed after its last use (without that a step leaks its
/// intermediates), and basic blocks cut short for the JIT.
static void addHostToLLVM(OpPassManager &pm) {
  pm.addPass(createApproximateMath());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  // The passes that see one function at a time run on the functions in
  // parallel (MLIR's threads): once the loop nests are outlined, the step is
  // many functions.
  OpPassManager &perFunction = pm.nest<func::FuncOp>();
  perFunction.addPass(createCSEPass());
  perFunction.addPass(createCanonicalizerPass());
  perFunction.addPass(createConvertBufferizationToMemRefPass());
  perFunction.addPass(createLowerAffinePass());
  perFunction.addPass(createConvertVectorToSCFPass());
  perFunction.addPass(createSCFToControlFlowPass());
  perFunction.addPass(memref::createExpandStridedMetadataPass());
  perFunction.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  OpPassManager &perFunctionLLVM = pm.nest<func::FuncOp>();
  perFunctionLLVM.addPass(createConvertVectorToLLVMPass());
  perFunctionLLVM.addPass(createConvertMathToLLVMPass());
  // Arithmetic too, leaving the module-wide conversion the functions,
  // calls and branches.
  perFunctionLLVM.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCallParallelNests());
  pm.addPass(createBranchlessConditionalFrees());
  addWideInterfaces(pm);
  pm.addPass(createSplitLongBlocks());
}

/// Kernels through MLIR's NVVM path to PTX (kept in gpu.binary ops); host
/// code allocates through the runtime's _mlir_memref_to_llvm_alloc (CUDA
/// managed memory), so kernels, cuBLAS and NCCL reach every buffer.
static void addCudaToLLVM(OpPassManager &pm, CudaArch arch) {
  pm.addPass(createConvertParallelLoopToGpuPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createUniqueKernelNames());
  addLowerDeallocations(pm);
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions nvvm;
  nvvm.chip = cudaArchName(arch);
  nvvm.features = "+ptx80";
  pm.addPass(createGpuNVVMAttachTarget(nvvm));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createStripDebugInfoPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createStripGpuObjectTimings());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  addWideInterfaces(pm);
}

void buildLoweringPipeline(OpPassManager &pm, const LoweringOptions &options) {
  bool bf16 = options.precision == Precision::BF16;
  // Products rearranged first, so that bf16 operands are converted where the
  // GEMM reads them, beneath the transposes it reads in place.
  pm.addPass(tg::createTgRearrangeProducts());
  if (bf16)
    pm.addPass(tg::createTgMixedPrecision());
  addToBuffers(pm, options);
  // bf16 conversions as integer arithmetic: x86 has no instruction for
  // them and the JIT no libgcc helper.
  if (bf16) {
    arith::ArithExpandOpsPassOptions expand;
    expand.includeBf16 = true;
    pm.addPass(arith::createArithExpandOpsPass(expand));
  }
  if (options.target == Target::Cuda) {
    addToKernelLoops(pm, /*onHost=*/false);
    addCudaToLLVM(pm, options.cudaArch);
  } else if (options.gpuKernelsOnCpu) {
    // The CUDA target's kernel loops, run by the host: checks them on
    // machines without a GPU.
    addToKernelLoops(pm, /*onHost=*/true);
    addHostToLLVM(pm);
  } else {
    // One function per loop nest (each linalg op, each loop), equal nests
    // shared, before the deallocations: their placement and canonicalizers
    // then see each distinct nest once, and no ownership flag is threaded
    // through a scatter loop, a call like any other. Then the nests' loops
    // in 8-wide SIMD where the innermost loop reads and writes contiguously
    // (MLIR's affine super-vectorizer; its strided transfers mis-lowered
    // here).
    pm.addPass(createOutlineLoopNests());
    addDeallocations(pm, /*onHost=*/true);
    OpPassManager &perFunction = pm.nest<func::FuncOp>();
    perFunction.addPass(createConvertLinalgToAffineLoopsPass());
    VectorizeAffineLoopsOptions vectorize;
    vectorize.vectorSize = 8;
    perFunction.addPass(createVectorizeAffineLoops(vectorize));
    perFunction.addPass(createCanonicalizerPass());
    if (options.parallelNests) {
      ParallelizeLoopNestsOptions parallelize;
      parallelize.minWork = options.parallelNestsMinWork;
      pm.addPass(createParallelizeLoopNests(parallelize));
    }
    addHostToLLVM(pm);
  }
}

LogicalResult buildPipeline(OpPassManager &pm, const PipelineOptions &options) {
  if (options.emit >= Stage::Decompose)
    pm.addPass(tg::createTgDecompose());
  if (options.emit >= Stage::Autodiff) {
    pm.addPass(tg::createTgAutodiff());
    // Unset hyperparameters keep the pass's defaults (PyTorch's).
    const OptimizerOptions &o = options.optimizer;
    tg::TgOptimizerOptions opt;
    opt.optimizer = o.kind;
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
    if (o.clipGradNorm)
      opt.clipGradNorm = *o.clipGradNorm;
    pm.addPass(tg::createTgOptimizer(opt));
  }
  if (options.emit >= Stage::Partition) {
    tg::TgPartitionOptions partition;
    partition.policy = options.partition;
    pm.addPass(tg::createTgPartition(partition));
    if (options.gradAccum > 1) {
      tg::TgAccumulateGradientsOptions accumulate;
      accumulate.microBatches = options.gradAccum;
      pm.addPass(tg::createTgAccumulateGradients(accumulate));
    }
  }
  // A GPU copies a bucket in and out at its memory's speed, far below a
  // message's latency: there every size shares buckets and groups.
  if (options.emit >= Stage::Propagate && options.spec)
    dist::addShardPasses(
        pm, *options.spec, /*partition=*/options.emit >= Stage::Shard,
        options.fsdpGroup, options.bucketMiB,
        options.lowering.target == Target::Cuda ? 0 : dist::kDefaultAloneMiB);
  if (options.emit >= Stage::Lower)
    buildLoweringPipeline(pm, options.lowering);
  return success();
}

namespace {

/// spmdc-lower-cpu's options: spmdc's --precision and --gpu-kernels-on-cpu.
struct LowerCpuOptions : PassPipelineOptions<LowerCpuOptions> {
  Option<Precision> precision{
      *this, "precision", llvm::cl::desc("the precision of the matmuls"),
      llvm::cl::init(Precision::F32),
      llvm::cl::values(
          clEnumValN(Precision::F32, "f32", "f32 throughout"),
          clEnumValN(Precision::BF16, "bf16",
                     "matmuls in bf16 (--tg-mixed-precision), all else f32"))};
  Option<bool> gpuKernelsOnCpu{
      *this, "gpu-kernels-on-cpu",
      llvm::cl::desc("form the loop nests the CUDA target makes kernels of "
                     "and run them on the host"),
      llvm::cl::init(false)};
  Option<bool> overlap{
      *this, "overlap",
      llvm::cl::desc("start collectives early, wait at first use "
                     "(--dist-async-collectives)"),
      llvm::cl::init(false)};
  Option<unsigned> prefetchDepth{
      *this, "prefetch-depth",
      llvm::cl::desc("with overlap: parameter gathers under way ahead of "
                     "the one waited for"),
      llvm::cl::init(1)};
};

/// spmdc-lower-cuda's options: spmdc's --precision and --cuda-arch.
struct LowerCudaOptions : PassPipelineOptions<LowerCudaOptions> {
  Option<Precision> precision{
      *this, "precision", llvm::cl::desc("the precision of the matmuls"),
      llvm::cl::init(Precision::F32),
      llvm::cl::values(
          clEnumValN(Precision::F32, "f32", "f32 throughout"),
          clEnumValN(Precision::BF16, "bf16",
                     "matmuls in bf16 (--tg-mixed-precision), all else f32"))};
  Option<CudaArch> cudaArch{
      *this, "cuda-arch", llvm::cl::desc("the GPU the PTX is for"),
      llvm::cl::init(CudaArch::Sm90),
      llvm::cl::values(clEnumValN(CudaArch::Sm80, "sm_80", "A100"),
                       clEnumValN(CudaArch::Sm90, "sm_90", "H100, H200"))};
};

} // namespace

void registerLoweringPipelines() {
  PassPipelineRegistration<LowerCpuOptions>(
      "spmdc-lower-cpu",
      "spmdc's lower stage for --target=cpu: primitive tg ops on tensors "
      "down to the LLVM dialect (MPI, BLAS)",
      [](OpPassManager &pm, const LowerCpuOptions &cpu) {
        LoweringOptions options;
        options.precision = cpu.precision;
        options.gpuKernelsOnCpu = cpu.gpuKernelsOnCpu;
        options.overlap = cpu.overlap;
        options.prefetchDepth = cpu.prefetchDepth;
        buildLoweringPipeline(pm, options);
      });
  PassPipelineRegistration<LowerCudaOptions>(
      "spmdc-lower-cuda",
      "spmdc's lower stage for --target=cuda: primitive tg ops on tensors "
      "down to the LLVM dialect, kernels as PTX in gpu.binary ops (NCCL, "
      "cuBLAS)",
      [](OpPassManager &pm, const LowerCudaOptions &cuda) {
        LoweringOptions options;
        options.target = Target::Cuda;
        options.precision = cuda.precision;
        options.cudaArch = cuda.cudaArch;
        buildLoweringPipeline(pm, options);
      });
}

} // namespace spmdc
