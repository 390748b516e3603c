//===- AsyncCollectives.cpp - overlap (--dist-async-collectives) ----------===//
//
// Collectives that overlap the compute around them: each blocking
// collective whose result is not needed at once becomes a dist.start_* as
// early as its input exists and a dist.wait just before its result's first
// use, so what runs between the two hides the communication (a gradient
// bucket's all-reduce behind the rest of the backward, a ZeRO-3 layer's
// all-gather behind the layer before it).
//
// Every rank runs the same program, so every rank issues the collectives in
// the same (new) order, as MPI and NCCL require. A collective of a value that is
// there from the block's start (a parameter ZeRO-3 gathers) starts no
// earlier than the wait of the collective before it: one collective ahead,
// as FSDP prefetches one layer ahead, rather than every parameter gathered
// at once.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/Dist/Transforms/Passes.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace spmdc::dist {
#define GEN_PASS_DEF_DISTASYNCCOLLECTIVES
#include "spmdc/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace spmdc::dist

using namespace mlir;
using namespace spmdc;
using namespace spmdc::dist;

namespace {

/// Collectives with a start and wait form (a local slice moves nothing).
bool isBlockingCollective(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp>(op);
}

/// The start op of `op`, built at `b`'s point.
Value createStart(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  auto pending = PendingType::get(
      op->getContext(), cast<RankedTensorType>(op->getResult(0).getType()));
  Operation *start = nullptr;
  if (auto o = dyn_cast<AllReduceOp>(op))
    start = StartAllReduceOp::create(b, loc, pending, o.getInput(), o.getAxes(),
                                     o.getPhaseAttr(), o.getOriginAttr(),
                                     o.getReductionAttr());
  else if (auto o = dyn_cast<AllGatherOp>(op))
    start = StartAllGatherOp::create(b, loc, pending, o.getInput(),
                                     o.getAxes(), o.getDimAttr(),
                                     o.getPhaseAttr(), o.getOriginAttr());
  else if (auto o = dyn_cast<ReduceScatterOp>(op))
    start = StartReduceScatterOp::create(b, loc, pending, o.getInput(),
                                         o.getAxes(), o.getDimAttr(),
                                         o.getPhaseAttr(), o.getOriginAttr());
  else if (auto o = dyn_cast<AllToAllOp>(op))
    start = StartAllToAllOp::create(
        b, loc, pending, o.getInput(), o.getAxes(), o.getSplitDimAttr(),
        o.getConcatDimAttr(), o.getPhaseAttr(), o.getOriginAttr());
  // Attributes the passes before added (a bucket's `tensors`) go along.
  for (NamedAttribute attr : op->getAttrs())
    if (!start->hasAttr(attr.getName()))
      start->setAttr(attr.getName(), attr.getValue());
  return start->getResult(0);
}

/// The first op of `block` that uses `value` (itself or through an op
/// nested in it), or null.
Operation *firstUser(Value value, Block *block) {
  Operation *first = nullptr;
  for (Operation *user : value.getUsers()) {
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (inBlock && (!first || inBlock->isBeforeInBlock(first)))
      first = inBlock;
  }
  return first;
}

/// Moves each op of `block` that only moves values (tg.slice, tg.reshape,
/// ...) and reads `value` (and, first, those that read its results) down
/// to just before its first use: the slices and reshapes a bucket takes
/// its tensors out with would otherwise be the result's first use, right
/// after the collective. Ops that compute stay where they are, so the
/// compute the wait may overlap does not shrink.
void sinkMovingUsers(Value value, Block &block,
                     llvm::SmallPtrSetImpl<Operation *> &sunk) {
  SmallVector<Operation *> users;
  for (Operation *user : value.getUsers())
    if (user->getBlock() == &block &&
        user->hasTrait<tg::OpTrait::MovesValues>() && sunk.insert(user).second)
      users.push_back(user);
  for (Operation *user : users) {
    Operation *first = nullptr;
    for (Value result : user->getResults()) {
      sinkMovingUsers(result, block, sunk);
      Operation *use = firstUser(result, &block);
      if (use && (!first || use->isBeforeInBlock(first)))
        first = use;
    }
    if (first && first != user->getNextNode())
      user->moveBefore(first);
  }
}

/// The later of two ops of a block (null: the block's start).
Operation *later(Operation *a, Operation *b) {
  if (!a)
    return b;
  if (!b)
    return a;
  return a->isBeforeInBlock(b) ? b : a;
}

/// Moves `op` (an op of `block` that only moves values: the concat and
/// reshapes that make a ZeRO-3 group's flat buffer of its parameters) and
/// first the like ops it reads, up to just after the last of its operands'
/// definitions, and not above `floor` (null: the block's start). Returns
/// the op it now follows (null: at the block's start).
Operation *hoistMoving(Operation *op, Block &block, Operation *floor) {
  Operation *after = floor;
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    if (!def || def->getBlock() != &block)
      continue;
    if (def->hasTrait<tg::OpTrait::MovesValues>())
      hoistMoving(def, block, floor);
    after = later(after, def);
  }
  if (after && !after->isBeforeInBlock(op))
    return op->getPrevNode();
  if (after)
    op->moveAfter(after);
  else
    op->moveBefore(&block.front());
  return after;
}

/// Rewrites the collectives of one block, in program order.
void overlapBlock(Block &block) {
  SmallVector<Operation *> collectives;
  for (Operation &op : block)
    if (isBlockingCollective(&op))
      collectives.push_back(&op);
  // The wait of the collective before (null at the block's start): where a
  // collective of a value the block has from its start may start.
  Operation *previousWait = nullptr;
  for (Operation *op : collectives) {
    Value result = op->getResult(0);
    llvm::SmallPtrSet<Operation *, 16> sunk;
    sinkMovingUsers(result, block, sunk);
    Operation *use = firstUser(result, &block);
    if (!use)
      continue;
    // As early as the input exists.
    Operation *after = nullptr;
    Value input = op->getOperand(0);
    Operation *def = input.getDefiningOp();
    if (def && def->getBlock() == &block &&
        def->hasTrait<tg::OpTrait::MovesValues>()) {
      // A buffer assembled of values (a ZeRO-3 group's parameters): made
      // as early as they exist, but not above the collective before.
      hoistMoving(def, block, previousWait);
      after = def;
    } else if (def && def->getBlock() == &block) {
      after = def;
    } else {
      after = previousWait;
    }
    // Never later than where the collective was.
    if (after && after != op && !after->isBeforeInBlock(op))
      after = op->getPrevNode();
    Operation *startPoint = after ? after->getNextNode() : &block.front();
    // Nothing would run between the start and the wait: leave it blocking.
    if (startPoint == op && op->getNextNode() == use) {
      previousWait = op;
      continue;
    }
    OpBuilder b(op->getContext());
    b.setInsertionPoint(startPoint);
    Value pending = createStart(b, op);
    b.setInsertionPoint(use);
    auto wait =
        WaitOp::create(b, op->getLoc(), result.getType(), pending);
    result.replaceAllUsesWith(wait.getResult());
    op->erase();
    previousWait = wait;
  }
}

struct DistAsyncCollectivesPass
    : spmdc::dist::impl::DistAsyncCollectivesBase<DistAsyncCollectivesPass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp fn) {
      for (Block &block : fn.getBody())
        overlapBlock(block);
    });
  }
};

} // namespace
