//===- DropReturnedArguments.cpp - results that are the callee's arguments ===//
//
// --drop-returned-arguments: a private function that updated an argument's
// buffer in place (--overwrite-dead-inputs) returns that buffer once
// bufferized. Ownership-based deallocation would return a clone of it
// instead (what a function returns is its caller's to free): a copy of
// every parameter in every step. Such a result goes, and each call uses
// the operand it passed. This is MLIR's drop-equivalent-buffer-results,
// kept off public functions, whose results are the step's signature.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"

namespace spmdc {
#define GEN_PASS_DEF_DROPRETURNEDARGUMENTS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

/// The argument `value` is, through casts, or null.
BlockArgument returnedArgument(func::FuncOp fn, Value value) {
  while (auto cast = value.getDefiningOp<memref::CastOp>())
    value = cast.getSource();
  auto arg = dyn_cast<BlockArgument>(value);
  return arg && arg.getOwner() == &fn.getBody().front() ? arg : BlockArgument();
}

struct DropReturnedArgumentsPass
    : spmdc::impl::DropReturnedArgumentsBase<DropReturnedArgumentsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    DenseMap<func::FuncOp, SmallVector<func::CallOp>> callers;
    module.walk([&](func::CallOp call) {
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        callers[callee].push_back(call);
    });
    IRRewriter rewriter(&getContext());
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (!fn.isPrivate() || fn.isExternal() || !fn.getBody().hasOneBlock())
        continue;
      Operation *ret = fn.getBody().front().getTerminator();
      llvm::BitVector dropped(fn.getNumResults());
      DenseMap<unsigned, unsigned> argumentOf;
      SmallVector<Value> kept;
      for (auto [i, value] : llvm::enumerate(ret->getOperands())) {
        if (BlockArgument arg = returnedArgument(fn, value)) {
          dropped.set(i);
          argumentOf[i] = arg.getArgNumber();
        } else {
          kept.push_back(value);
        }
      }
      if (dropped.none())
        continue;
      if (failed(fn.eraseResults(dropped)))
        return signalPassFailure();
      ret->setOperands(kept);
      for (func::CallOp call : callers.lookup(fn)) {
        rewriter.setInsertionPoint(call);
        auto shorter = func::CallOp::create(rewriter, call.getLoc(), fn,
                                            call.getOperands());
        SmallVector<Value> results;
        unsigned next = 0;
        for (OpResult result : call->getResults()) {
          unsigned i = result.getResultNumber();
          if (!dropped.test(i)) {
            results.push_back(shorter.getResult(next++));
            continue;
          }
          Value passed = call.getOperand(argumentOf[i]);
          if (passed.getType() != result.getType())
            passed = memref::CastOp::create(rewriter, call.getLoc(),
                                            result.getType(), passed);
          results.push_back(passed);
        }
        rewriter.replaceOp(call, results);
      }
    }
  }
};

} // namespace
