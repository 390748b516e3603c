//===- RuntimeCall.h - a call of the runtime on buffers ---------*- C++ -*-===//
//
// What the conversions into runtime calls share: the tensors an op reads
// become read-only buffers, its result a fresh buffer, all passed to a C
// function as unranked memrefs after some scalar constants; the result
// buffer becomes a tensor again, so one-shot bufferization treats these
// buffers like any others.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_LIB_CONVERSION_TORUNTIME_RUNTIMECALL_H
#define SPMDC_LIB_CONVERSION_TORUNTIME_RUNTIMECALL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace spmdc {

/// The private declaration `name(scalars..., memref<*xT> per buffer)` in
/// `module`, created on first use.
mlir::func::FuncOp getOrDeclareRuntimeFunction(
    mlir::ModuleOp module, llvm::StringRef name,
    llvm::ArrayRef<mlir::Type> scalarTypes, mlir::Type element,
    unsigned numBuffers);

/// Emits, at the builder's point, `callee(scalars..., inputs' buffers...,
/// result buffer)` and returns the result buffer as a tensor of
/// `resultType`.
mlir::Value emitRuntimeCall(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::func::FuncOp callee,
                            mlir::ValueRange scalars, mlir::ValueRange inputs,
                            mlir::RankedTensorType resultType);

} // namespace spmdc

#endif // SPMDC_LIB_CONVERSION_TORUNTIME_RUNTIMECALL_H
