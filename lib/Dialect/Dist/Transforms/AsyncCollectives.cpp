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
// the same (new) order, as MPI and NCCL require. A collective of a value that
// is there from the block's start (a parameter ZeRO-3 gathers) is a
// prefetch: it starts no earlier than the wait of the prefetch `depth`
// before it (prefetch-depth, 1 by default: one group ahead, as FSDP
// prefetches one layer ahead), rather than every parameter gathered at
// once. Only prefetches count: a gradient's reduce-scatter, waited for at
// the update, must not hold back the backward's next gather.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/Dist/Transforms/Passes.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Support/BlockOrder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>

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
    after = laterInBlock(after, def);
  }
  if (after && !after->isBeforeInBlock(op))
    return op->getPrevNode();
  if (after)
    op->moveAfter(after);
  else
    op->moveBefore(&block.front());
  return after;
}

/// Whether `value` is there from `block`'s start: an argument, a value from
/// outside, or one assembled of such values by ops that only move values
/// (a ZeRO-3 group's flat buffer of its parameters).
bool fromBlockStart(Value value, Block &block) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != &block)
    return true;
  return def->hasTrait<tg::OpTrait::MovesValues>() &&
         llvm::all_of(def->getOperands(), [&](Value operand) {
           return fromBlockStart(operand, block);
         });
}

/// Rewrites the collectives of one block, in program order. A prefetch (a
/// collective of a value there from the start) starts after the wait of the
/// prefetch `prefetchDepth` before it, and after the start of the one just
/// before it, so they are issued in the order they are needed; with depth 0
/// it starts where it was. A reduction starts as soon as its input exists;
/// at most max(prefetchDepth, 1) of them are under way at once, since each
/// holds its (full-size) input until its wait.
void overlapBlock(Block &block, unsigned prefetchDepth) {
  SmallVector<Operation *> collectives;
  for (Operation &op : block)
    if (isBlockingCollective(&op))
      collectives.push_back(&op);
  // Where each prefetch so far is waited for (or runs, if left blocking),
  // and where the last one was issued.
  SmallVector<Operation *> prefetchWaits;
  Operation *lastPrefetchIssue = nullptr;
  // The waits of the started reductions (collectives of computed values, a
  // gradient bucket's all-reduce or a group's reduce-scatter), in order.
  SmallVector<Operation *> reductionWaits;
  unsigned reductionsUnderWay = std::max(prefetchDepth, 1u);
  for (Operation *op : collectives) {
    Value result = op->getResult(0);
    Value input = op->getOperand(0);
    bool prefetch = fromBlockStart(input, block);
    // The earliest point a prefetch may start after (null: the block's
    // start); the op before it for depth 0, so that it stays in place.
    Operation *floor = nullptr;
    if (prefetch && prefetchDepth == 0)
      floor = op->getPrevNode();
    else if (prefetch)
      floor = laterInBlock(prefetchWaits.size() >= prefetchDepth
                        ? prefetchWaits[prefetchWaits.size() - prefetchDepth]
                        : nullptr,
                    lastPrefetchIssue);
    Operation *waitPoint = op;
    llvm::SmallPtrSet<Operation *, 16> sunk;
    sinkMovingUsers(result, block, sunk);
    Operation *use = firstUser(result, &block);
    if (!use) {
      if (prefetch) {
        prefetchWaits.push_back(op);
        lastPrefetchIssue = op;
      }
      continue;
    }
    // As early as the input exists.
    Operation *after = nullptr;
    Operation *def = input.getDefiningOp();
    if (def && def->getBlock() == &block &&
        def->hasTrait<tg::OpTrait::MovesValues>()) {
      // A buffer assembled of values: made as early as they exist, and a
      // prefetch's not above its floor.
      hoistMoving(def, block, floor);
      after = def;
    } else if (def && def->getBlock() == &block) {
      after = def;
    } else {
      after = floor;
    }
    // Never later than where the collective was.
    if (after && after != op && !after->isBeforeInBlock(op))
      after = op->getPrevNode();
    Operation *startPoint = after ? after->getNextNode() : &block.front();
    // Nothing would run between the start and the wait: leave it blocking.
    Operation *issue = op;
    if (!(startPoint == op && op->getNextNode() == use)) {
      OpBuilder b(op->getContext());
      b.setInsertionPoint(startPoint);
      Value pending = createStart(b, op);
      issue = pending.getDefiningOp();
      b.setInsertionPoint(use);
      auto wait = WaitOp::create(b, op->getLoc(), result.getType(), pending);
      result.replaceAllUsesWith(wait.getResult());
      op->erase();
      waitPoint = wait;
      // A started reduction holds its input and its result until its wait:
      // the one `reductionsUnderWay` before is waited for by this start.
      if (!prefetch) {
        if (reductionWaits.size() >= reductionsUnderWay) {
          Operation *earlier =
              reductionWaits[reductionWaits.size() - reductionsUnderWay];
          Operation *earlierStart = earlier->getOperand(0).getDefiningOp();
          if (issue->isBeforeInBlock(earlier) &&
              earlierStart->isBeforeInBlock(issue))
            earlier->moveBefore(issue);
        }
        reductionWaits.push_back(wait);
      }
    }
    if (prefetch) {
      prefetchWaits.push_back(waitPoint);
      lastPrefetchIssue = issue;
    }
  }
}

struct DistAsyncCollectivesPass
    : spmdc::dist::impl::DistAsyncCollectivesBase<DistAsyncCollectivesPass> {
  using DistAsyncCollectivesBase::DistAsyncCollectivesBase;
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp fn) {
      for (Block &block : fn.getBody())
        overlapBlock(block, prefetchDepth);
    });
  }
};

} // namespace
