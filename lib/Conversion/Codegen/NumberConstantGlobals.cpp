//===- NumberConstantGlobals.cpp - constant globals in a fixed order ------===//
//
// --number-constant-globals: one-shot bufferization turns each constant
// tensor into a memref.global named after its type and numbered in the
// order it meets them, and it visits functions in an order that depends on
// pointer values (a DenseMap), so two compilations of one step could name
// and place the same globals differently. Renaming them in the order of
// their first use, functions in module order, and placing them in that
// order makes spmdc's output the same on every run.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

namespace spmdc {
#define GEN_PASS_DEF_NUMBERCONSTANTGLOBALS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

struct NumberConstantGlobalsPass
    : spmdc::impl::NumberConstantGlobalsBase<NumberConstantGlobalsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // The constant globals in the order of their first use.
    SmallVector<memref::GlobalOp> ordered;
    llvm::SmallPtrSet<Operation *, 16> seen;
    module.walk([&](memref::GetGlobalOp use) {
      auto global = symbols.lookup<memref::GlobalOp>(use.getName());
      if (global && global.getConstant() && seen.insert(global).second)
        ordered.push_back(global);
    });
    // Rename in two rounds, so that a new name never meets an old one.
    MLIRContext *context = module.getContext();
    for (auto [round, prefix] :
         {std::pair{0, "__spmdc_renaming_"}, std::pair{1, "__constant_"}}) {
      for (auto [index, global] : llvm::enumerate(ordered)) {
        auto name = StringAttr::get(context, prefix + std::to_string(index));
        if (failed(symbols.replaceAllSymbolUses(global, name, module)))
          return signalPassFailure();
        symbols.setSymbolName(global, name);
      }
    }
    // Placed at the top of the module in that order.
    Block *body = module.getBody();
    for (memref::GlobalOp global : llvm::reverse(ordered))
      global->moveBefore(body, body->begin());
  }
};

} // namespace
