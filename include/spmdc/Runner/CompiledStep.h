//===- CompiledStep.h - a module's step, JIT-compiled -----------*- C++ -*-===//
//
// Loads the program of an spmdc module (LLVM dialect) into MLIR's
// ExecutionEngine, or links its native code (spmdc --aot), and calls its
// step on host tensors: arguments in as memref descriptors of their dtype,
// results read back.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNNER_COMPILEDSTEP_H
#define SPMDC_RUNNER_COMPILEDSTEP_H

#include "spmdc/Interpreter/Kernels.h"
#include "spmdc/Module/ModuleFile.h"
#include "spmdc/Runtime/SafeTensors.h"

#include <memory>
#include <optional>
#include <utility>

namespace mlir {
class ExecutionEngine;
class MLIRContext;
} // namespace mlir
namespace llvm::orc {
class LLJIT;
} // namespace llvm::orc

namespace spmdc::runner {

class CudaRuntimeLibrary;

class CompiledStep {
public:
  struct Options {
    /// LLVM optimisation level of the host code.
    int optLevel = 1;
    /// Threads of each GEMM (CPU modules).
    int gemmThreads = 1;
    /// Threads of each loop nest spmdc's --parallel-nests made shareable.
    int nestThreads = 1;
    /// CPU modules: the step's heap in transparent huge pages
    /// (spmd_reserve_heap): fewer TLB misses in every step, but fresh 2 MiB
    /// pages were slower than 4 KiB ones by seconds on the development VM,
    /// so off unless asked for.
    bool hugePages = false;
    /// CUDA modules: this process's rank on its node (its GPU).
    int localRank = 0;
    /// CUDA modules: several ranks under MPI (NCCL carries collectives).
    bool multiRank = false;
  };

  /// Opens `file`'s program (a cpu or cuda module) without compiling it,
  /// so its arguments can be staged first; null with `error` set.
  static std::unique_ptr<CompiledStep> open(const ModuleFile &file,
                                            mlir::MLIRContext &context,
                                            const Options &options,
                                            std::string &error);
  ~CompiledStep();

  /// Writes argument `index` into the step's buffer of its dtype (the first
  /// call allocates it), so no copy of the input is kept beside it. An
  /// argument keeps its value from step to step until staged again.
  void stage(size_t index, const interp::Tensor &value);
  /// Argument `index`'s buffer of `elements` values, allocated on first
  /// use, where its dtype is f32 (null otherwise): an input built straight
  /// into it needs no stage().
  float *f32Buffer(size_t index, size_t elements);
  /// Sets argument `index`, of `elements` values, to zeros.
  void zeroArgument(size_t index, size_t elements);

  /// Links the module's native code (spmdc --aot, or an earlier run's from
  /// the cache) or JIT-compiles its program; false with `error` set.
  bool compile(std::string &error);

  /// Results that are the next step's arguments (result index, argument
  /// index: parameters, optimizer state) stay in the step's own buffers:
  /// they are neither converted nor staged again, and their tensors in
  /// `results` come back empty; read them with argument().
  void keepResident(
      const std::vector<std::pair<size_t, size_t>> &resultToArgument);

  /// The current value of argument `index` (after the last step).
  interp::Tensor argument(size_t index) const;

  /// Runs one step on the staged and resident arguments; false with `error`
  /// set on failure.
  bool run(std::vector<interp::Tensor> &results, std::string &error);

  /// Whether the module carries its loss alone (@eval, spmd-run
  /// --eval-dataset).
  bool hasEval() const { return !file.evalEntry.empty(); }

  /// Runs the loss alone (@eval) on the step's current arguments, except
  /// those `given` holds (argument index and value: a held-out batch's
  /// data inputs), which leave the step's own untouched; this rank's loss
  /// in `loss`. False with `error` set.
  bool evaluate(const std::vector<std::pair<size_t, interp::Tensor>> &given,
                interp::Tensor &loss, std::string &error);

  /// What runs the step, for logs: "cpu" or the GPU's name.
  std::string device() const;
  /// Bytes of the heap advised transparent huge pages (Options::hugePages;
  /// 0 where the step is small or the kernel has no THP).
  uint64_t heapInHugePages() const { return hugePageBytes; }

private:
  CompiledStep() = default;
  void *allocate(size_t bytes) const;
  /// Argument `index`'s buffer, allocated with `bytes` on first use.
  char *argumentBuffer(size_t index, size_t bytes);
  void release(void *buffer) const;

  ModuleFile file;
  mlir::MLIRContext *context = nullptr;
  Options options;
  /// Each argument's and result's dtype, resolved once.
  std::vector<rt::DType> argumentTypes, resultTypes;
  /// The step's argument buffers, kept from step to step.
  struct Buffer {
    char *allocated = nullptr; // what to free
    char *aligned = nullptr;   // where the data starts
  };
  std::vector<Buffer> arguments;
  /// The buffers of evaluate()'s given arguments, kept between calls.
  std::vector<Buffer> evalArguments;
  std::vector<std::optional<size_t>> residentFrom;
  uint64_t hugePageBytes = 0;
  /// Declared before the engine, so the engine (whose static destructors
  /// unload kernel modules) goes first.
  std::unique_ptr<CudaRuntimeLibrary> cuda;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  /// Or the module's native code (spmdc --aot), linked: its packed entry
  /// and its destructors.
  std::unique_ptr<llvm::orc::LLJIT> native;
  void (*nativeMain)(void **) = nullptr;
  void (*nativeEval)(void **) = nullptr;
  void (*nativeFini)() = nullptr;
  /// Where to keep the JIT's object after the first step (empty: nowhere;
  /// see nativeCachePath).
  std::string cacheFile;
};

} // namespace spmdc::runner

#endif // SPMDC_RUNNER_COMPILEDSTEP_H
