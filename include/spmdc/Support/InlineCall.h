//===- InlineCall.h - a call replaced by its callee's body ------*- C++ -*-===//

#ifndef SPMDC_SUPPORT_INLINECALL_H
#define SPMDC_SUPPORT_INLINECALL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

namespace spmdc {

/// Replaces `call` by a copy of `callee`'s body, which has one block; the
/// callee itself stays.
inline void inlineCall(mlir::func::CallOp call, mlir::func::FuncOp callee) {
  mlir::Block &body = callee.getBody().front();
  mlir::IRMapping mapping;
  mapping.map(body.getArguments(), call.getOperands());
  mlir::OpBuilder b(call);
  for (mlir::Operation &op : body.without_terminator())
    b.clone(op, mapping);
  for (auto [result, returned] :
       llvm::zip(call.getResults(), body.getTerminator()->getOperands()))
    result.replaceAllUsesWith(mapping.lookupOrDefault(returned));
  call.erase();
}

} // namespace spmdc

#endif // SPMDC_SUPPORT_INLINECALL_H
