//===- Interpreter.h - the reference interpreter of the tg dialect -*- C++ -*-===//
//
// Runs a graph function op by op (Kernels.h), at any stage of the pipeline:
// on logical tensors with one rank, or on local tensors with N simulated
// ranks of a device mesh, the dist dialect's collectives computed across
// each group. It shares no code with lowering or codegen: it is the oracle
// the compiled program is checked against.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_INTERPRETER_INTERPRETER_H
#define SPMDC_INTERPRETER_INTERPRETER_H

#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Interpreter/Kernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace spmdc::interp {

struct InterpreterOptions {
  /// Compute everything in f64 instead of rounding each op's result to its
  /// element type.
  bool f64 = false;
};

/// Rounds `value` to what `elementType` can hold (f32, f16, bf16, integers
/// truncate toward zero, i1 is `!= 0`).
double roundToElementType(double value, mlir::Type elementType);

/// Runs `fn` on `arguments` and returns its results; errors are emitted at
/// the failing op. One rank on a mesh of no axes: a dist op is an error.
mlir::FailureOr<std::vector<Tensor>>
runFunction(mlir::func::FuncOp fn, llvm::ArrayRef<Tensor> arguments,
            const InterpreterOptions &options);

/// Runs `fn` on every rank of `mesh` at once, `argsPerRank[r]` being rank
/// r's (local) arguments, and returns each rank's results (outer index: the
/// rank). The ranks run in lockstep: every rank runs op k, a func.call
/// included, before any runs op k+1, so a collective sees all members'
/// inputs. A collective's result is rounded to its element type like any
/// op's. Errors are emitted at the failing op.
mlir::FailureOr<std::vector<std::vector<Tensor>>>
runFunctionSPMD(mlir::func::FuncOp fn,
                std::vector<std::vector<Tensor>> argsPerRank,
                const dist::Mesh &mesh, const InterpreterOptions &options);

} // namespace spmdc::interp

#endif // SPMDC_INTERPRETER_INTERPRETER_H
