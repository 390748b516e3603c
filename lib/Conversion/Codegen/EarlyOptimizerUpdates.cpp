//===- EarlyOptimizerUpdates.cpp - each update where its gradient is ready ===//
//
// --early-optimizer-updates: the optimizer's update (the ops
// --tg-optimizer marks `tg.update`) followed the whole backward, so at the
// step's end every gradient was alive at once (GPT-2 small: 0.5 GB) beside
// what the backward still held. Once @backward is in @main
// (--inline-single-calls), each update op moves up to just after the last
// of its operands and of the other readers of the arguments it reads (the
// parameter's last use in the backward: the update then still overwrites
// the parameter in place), so a parameter is updated, and its gradient
// freed, as soon as the gradient is final, as PyTorch's
// optimizer-in-backward hooks do. Update ops that read only arguments and
// constants (beta1 * m, the step count) move down instead, to just before
// their first reader, so that they do not hold a buffer from the step's
// start.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Support/BlockOrder.h"

#include "llvm/ADT/DenseSet.h"

namespace spmdc {
#define GEN_PASS_DEF_EARLYOPTIMIZERUPDATES
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

bool isUpdate(Operation *op) { return op->hasAttr(spmdc::tg::kUpdateAttr); }

void scheduleUpdates(Block &block) {
  SmallVector<Operation *> updates;
  for (Operation &op : block)
    if (isUpdate(&op) && op.getNumRegions() == 0)
      updates.push_back(&op);
  // Floating: computed from arguments and other floating updates alone
  // (constants among them).
  llvm::DenseSet<Operation *> floating;
  for (Operation *u : updates)
    if (llvm::all_of(u->getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return !def || floating.contains(def);
        }))
      floating.insert(u);
  for (Operation *u : updates) {
    if (floating.contains(u))
      continue;
    Operation *after = nullptr;
    for (Value v : u->getOperands()) {
      if (Operation *def = v.getDefiningOp()) {
        if (!floating.contains(def))
          after = spmdc::laterInBlock(after, block.findAncestorOpInBlock(*def));
        continue;
      }
      // The argument's other readers first: the update then overwrites it.
      for (Operation *user : v.getUsers())
        if (Operation *reader = block.findAncestorOpInBlock(*user);
            reader && reader != u && !isUpdate(reader))
          after = spmdc::laterInBlock(after, reader);
    }
    if (after && after->isBeforeInBlock(u))
      u->moveAfter(after);
  }
  // The floating ones just before their first reader (which may now lie
  // before them), the last first, so that a chain of them moves together.
  for (Operation *u : llvm::reverse(updates)) {
    if (!floating.contains(u))
      continue;
    Operation *first = nullptr;
    for (Operation *user : u->getUsers())
      if (Operation *reader = block.findAncestorOpInBlock(*user);
          reader && (!first || reader->isBeforeInBlock(first)))
        first = reader;
    if (first && first != u)
      u->moveBefore(first);
  }
}

struct EarlyOptimizerUpdatesPass
    : spmdc::impl::EarlyOptimizerUpdatesBase<EarlyOptimizerUpdatesPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.getBody().hasOneBlock())
        scheduleUpdates(fn.getBody().front());
  }
};

} // namespace
