//===- InlineSingleCalls.cpp - a function called once, in its caller -------===//
//
// --inline-single-calls: a function owns neither its arguments nor their
// buffers, so what the caller passes it lives until the call returns. The
// min-cut partition hands @backward the forward's saved activations: called
// as a function, it held every one of them to its end (GPT-2 small: 0.33 GB
// beside the gradients at the step's peak). A private function with one
// single-block body and one call is inlined there, where deallocation frees
// each passed value after its last use; no code is duplicated. @forward,
// which @eval calls too, stays a function.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Support/InlineCall.h"

#include "mlir/IR/SymbolTable.h"

namespace spmdc {
#define GEN_PASS_DEF_INLINESINGLECALLS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

/// The one use of `fn`'s symbol in `module`, if it is a call from another
/// function; else null.
func::CallOp singleCall(func::FuncOp fn, ModuleOp module) {
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(fn, module);
  if (!uses || !llvm::hasSingleElement(*uses))
    return nullptr;
  auto call = dyn_cast<func::CallOp>(uses->begin()->getUser());
  return call && !fn->isAncestor(call) ? call : nullptr;
}

struct InlineSingleCallsPass
    : spmdc::impl::InlineSingleCallsBase<InlineSingleCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Uses are looked up afresh for each function: inlining one moves the
    // calls in its body to its caller.
    for (auto fn :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (!fn.isPrivate() || fn.isExternal() || !fn.getBody().hasOneBlock())
        continue;
      if (func::CallOp call = singleCall(fn, module)) {
        spmdc::inlineCall(call, fn);
        fn.erase();
      }
    }
  }
};

} // namespace
