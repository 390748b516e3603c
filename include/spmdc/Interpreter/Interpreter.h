//===- Interpreter.h - the reference interpreter of the tg dialect -*- C++ -*-===//
//
// Runs a graph function op by op on logical tensors (Kernels.h), at any stage
// of the pipeline. It shares no code with lowering or codegen: it is the
// oracle the compiled program is checked against.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_INTERPRETER_INTERPRETER_H
#define SPMDC_INTERPRETER_INTERPRETER_H

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
/// the failing op.
mlir::FailureOr<std::vector<Tensor>>
runFunction(mlir::func::FuncOp fn, llvm::ArrayRef<Tensor> arguments,
            const InterpreterOptions &options);

} // namespace spmdc::interp

#endif // SPMDC_INTERPRETER_INTERPRETER_H
