//===- OutlineLoopNests.cpp - one function per top-level loop nest --------===//
//
// --outline-loop-nests: keeps every function the later conversions and the
// JIT see small, since their cost grows faster than a function's size.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

namespace spmdc {
#define GEN_PASS_DEF_OUTLINELOOPNESTS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

bool isLoopNest(Operation &op) {
  return op.getNumResults() == 0 &&
         isa<affine::AffineForOp, scf::ForOp, scf::ParallelOp>(op);
}

/// Replaces `nest` with a call of a new private function `name` holding it.
void outline(Operation *nest, StringRef name, SymbolTable &symbols) {
  // What the nest uses from outside: its own operands (bounds) and values
  // its regions capture.
  SetVector<Value> used(nest->getOperands().begin(),
                        nest->getOperands().end());
  getUsedValuesDefinedAbove(nest->getRegions(), used);
  SmallVector<Value> arguments;
  SmallVector<Operation *> constants;
  for (Value value : used) {
    Operation *def = value.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>())
      constants.push_back(def);
    else
      arguments.push_back(value);
  }

  auto module = nest->getParentOfType<ModuleOp>();
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto function = func::FuncOp::create(
      b, nest->getLoc(), name,
      b.getFunctionType(ValueRange(arguments).getTypes(), {}));
  function.setPrivate();
  symbols.insert(function);
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping mapping;
  mapping.map(arguments, entry->getArguments());
  for (Operation *constant : constants)
    b.clone(*constant, mapping);
  b.clone(*nest, mapping);
  func::ReturnOp::create(b, nest->getLoc());

  b.setInsertionPoint(nest);
  func::CallOp::create(b, nest->getLoc(), function, arguments);
  nest->erase();
}

struct OutlineLoopNestsPass
    : spmdc::impl::OutlineLoopNestsBase<OutlineLoopNestsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp function : functions) {
      if (function.isExternal())
        continue;
      SmallVector<Operation *> nests;
      for (Block &block : function.getBody())
        for (Operation &op : block)
          if (isLoopNest(op))
            nests.push_back(&op);
      for (auto [index, nest] : llvm::enumerate(nests))
        outline(nest,
                (function.getSymName() + "_nest" + Twine(index)).str(),
                symbols);
    }
  }
};

} // namespace
