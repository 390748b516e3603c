//===- NumberConstantGlobals.cpp - constant globals in a fixed order ------===//
//
// --number-constant-globals: one-shot bufferization turns each constant
// tensor into a memref.global named after its type and numbered in the
// order it meets them, and it visits functions in an order that depends on
// pointer values (a DenseMap), so two compilations of one step could name
// and place the same globals differently. Renaming them in the order of
// their first use, functions in module order, and placing them in that
// order makes spmdc's output the same on every run. A global made for
// several constants carries the location of whichever it met first, so it
// takes its first use's instead: the bytecode writes locations.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AttrTypeSubElements.h"
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
      if (global && global.getConstant() && seen.insert(global).second) {
        ordered.push_back(global);
        global->setLoc(use->getLoc());
      }
    });
    // Every use renamed in one walk of the module (a walk per global was
    // quadratic), then the globals themselves.
    MLIRContext *context = module.getContext();
    llvm::DenseMap<StringAttr, StringAttr> renamed;
    for (auto [index, global] : llvm::enumerate(ordered))
      renamed[global.getSymNameAttr()] =
          StringAttr::get(context, "__constant_" + std::to_string(index));
    AttrTypeReplacer replacer;
    replacer.addReplacement(
        [&](FlatSymbolRefAttr ref) -> std::optional<Attribute> {
          auto it = renamed.find(ref.getAttr());
          if (it == renamed.end())
            return std::nullopt;
          return FlatSymbolRefAttr::get(it->second);
        });
    for (Operation &op : module.getBody()->getOperations())
      if (!isa<memref::GlobalOp>(op))
        replacer.recursivelyReplaceElementsIn(&op, /*replaceAttrs=*/true,
                                              /*replaceLocs=*/false,
                                              /*replaceTypes=*/false);
    for (memref::GlobalOp global : ordered)
      global.setSymNameAttr(renamed.lookup(global.getSymNameAttr()));
    // Placed at the top of the module in that order.
    Block *body = module.getBody();
    for (memref::GlobalOp global : llvm::reverse(ordered))
      global->moveBefore(body, body->begin());
  }
};

} // namespace
