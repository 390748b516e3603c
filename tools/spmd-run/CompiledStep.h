//===- CompiledStep.h - a module's step, JIT-compiled -----------*- C++ -*-===//
//
// Loads the program of an spmdc module (LLVM dialect) into MLIR's
// ExecutionEngine and calls its step on host tensors: arguments in as
// memref descriptors of their dtype, results read back.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_TOOLS_SPMD_RUN_COMPILEDSTEP_H
#define SPMDC_TOOLS_SPMD_RUN_COMPILEDSTEP_H

#include "spmdc/Interpreter/Kernels.h"
#include "spmdc/Module/ModuleFile.h"

#include "mlir/IR/MLIRContext.h"

#include <memory>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace spmdc {

class CompiledStep {
public:
  /// JIT-compiles `file`'s program at LLVM optimisation level `optLevel`;
  /// null with `error` set on failure.
  static std::unique_ptr<CompiledStep> load(const ModuleFile &file,
                                            mlir::MLIRContext &context,
                                            int optLevel, std::string &error);
  ~CompiledStep();

  /// Runs one step; false with `error` set on failure.
  bool run(const std::vector<interp::Tensor> &args,
           std::vector<interp::Tensor> &results, std::string &error);

private:
  CompiledStep() = default;
  ModuleFile file;
  std::unique_ptr<mlir::ExecutionEngine> engine;
};

} // namespace spmdc

#endif // SPMDC_TOOLS_SPMD_RUN_COMPILEDSTEP_H
