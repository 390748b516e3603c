//===- FuseElementwise.cpp - elementwise fusion without costly recompute --===//
//
// --fuse-elementwise: MLIR's elementwise fusion patterns with a control
// function that keeps a broadcast producer out of its consumer when the
// producer calls math functions or divides: fused, it would run once per
// element of the consumer instead of once per element of its own. A
// producer that other ops read too is fused as well, where the consumer
// reads it point for point: the fused loop keeps its result for them.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace spmdc {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

/// The number of iterations of `op`'s loops (static shapes; 1 for rank 0).
std::optional<int64_t> iterations(linalg::LinalgOp op) {
  int64_t count = 1;
  for (int64_t range : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(range))
      return std::nullopt;
    count *= range;
  }
  return count;
}

bool isCostly(linalg::GenericOp op) {
  return op.getBody()
      ->walk([](Operation *inner) {
        bool costly = isa<math::MathDialect>(inner->getDialect()) ||
                      isa<arith::DivFOp, arith::RemFOp>(inner);
        return costly ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

bool worthFusing(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  auto generic = dyn_cast<linalg::GenericOp>(producer);
  auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  if (!generic || !consumer)
    return true;
  std::optional<int64_t> produced = iterations(generic);
  std::optional<int64_t> consumed = iterations(consumer);
  bool recomputed = !produced || !consumed || *produced < *consumed;
  return !(recomputed && isCostly(generic));
}

/// The order of a block's ops, kept by hand while fusing: a fused op takes
/// the place of the op it replaces, so the order of the others holds.
/// (Block::isBeforeInBlock renumbers the whole block after insertions,
/// which in GPT-2 small's backward pass cost a third of a second.)
class BlockOrder {
public:
  explicit BlockOrder(Block &block) : block(block) {
    int64_t next = 0;
    for (Operation &op : block)
      positions[&op] = next++;
  }

  /// The position of the op of this block that is or holds `op`, if any.
  std::optional<int64_t> of(Operation *op) const {
    Operation *ancestor = block.findAncestorOpInBlock(*op);
    auto found = ancestor ? positions.find(ancestor) : positions.end();
    if (found == positions.end())
      return std::nullopt;
    return found->second;
  }

  /// Whether `value` exists before `op` of this block.
  bool precedes(Value value, Operation *op) const {
    Operation *def = value.getDefiningOp();
    if (!def)
      return value.getParentRegion()->isAncestor(block.getParent());
    std::optional<int64_t> at = of(def), before = of(op);
    return at && before && *at < *before;
  }

  void place(Operation *fused, Operation *at) {
    positions[fused] = positions.lookup(at);
  }

private:
  Block &block;
  DenseMap<Operation *, int64_t> positions;
};

/// Fuses into `consumer` one producer whose results other ops read too,
/// where the consumer reads it point for point (a permutation, so nothing
/// is recomputed): the fused op also yields the producer's results and the
/// other ops read those. It goes where the consumer was, if every other use
/// follows it, or else where the producer was, if everything the consumer
/// reads exists by then. Returns the fused op, or null; `fusedOps` holds
/// the fused ops that exist, and `fusedAway` the producers fused.
linalg::GenericOp fuseSharedProducer(linalg::GenericOp consumer,
                                     BlockOrder &order, RewriterBase &rewriter,
                                     llvm::SetVector<Operation *> &fusedOps,
                                     DenseSet<Operation *> &fusedAway) {
  if (consumer.getNumParallelLoops() != consumer.getNumLoops())
    return nullptr;
  std::optional<int64_t> consumerAt = order.of(consumer);
  if (!consumerAt)
    return nullptr;
  for (OpOperand *operand : consumer.getDpsInputOperands()) {
    auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
    if (!producer || producer->hasOneUse() ||
        !linalg::areElementwiseOpsFusable(operand) ||
        !consumer.getMatchingIndexingMap(operand).isPermutation())
      continue;
    // Read through one operand only: another would be left reading the
    // fused op's own result.
    if (llvm::count_if(consumer->getOperands(), [&](Value value) {
          return value.getDefiningOp() == producer;
        }) != 1)
      continue;
    bool otherUsesFollow =
        llvm::all_of(producer->getUsers(), [&](Operation *user) {
          std::optional<int64_t> at = order.of(user);
          return user == consumer || (at && *at > *consumerAt);
        });
    Operation *place = consumer;
    if (!otherUsesFollow) {
      if (!llvm::all_of(consumer->getOperands(), [&](Value value) {
            return value.getDefiningOp() == producer ||
                   order.precedes(value, producer);
          }))
        continue;
      place = producer;
    }
    rewriter.setInsertionPoint(place);
    FailureOr<linalg::ElementwiseOpFusionResult> fused =
        linalg::fuseElementwiseOps(rewriter, operand);
    if (failed(fused))
      continue;
    auto fusedOp = cast<linalg::GenericOp>(fused->fusedOp);
    order.place(fusedOp, place);
    for (auto [original, replacement] : fused->replacements)
      rewriter.replaceAllUsesWith(original, replacement);
    fusedOps.remove(consumer);
    fusedOps.remove(producer);
    fusedOps.insert(fusedOp);
    fusedAway.insert(producer);
    rewriter.eraseOp(consumer);
    rewriter.eraseOp(producer);
    return fusedOp;
  }
  return nullptr;
}

/// Producers that other ops read too, fused in one walk over each block
/// from its end: each consumer takes in its producers, and theirs through
/// the fused op, before they are visited as consumers themselves. AdamW's
/// moments are the case: m and v are returned and read by the parameter's
/// update, three loops over each parameter (40 bytes of traffic an
/// element) that become one (28). MLIR's own pattern fuses a producer of
/// one use only: fused otherwise, the producer stays for its other uses
/// and the consumer recomputes it. Returns the fused ops.
llvm::SetVector<Operation *> fuseSharedProducers(Operation *root) {
  llvm::SetVector<Operation *> fusedOps;
  IRRewriter rewriter(root->getContext());
  SmallVector<Block *> blocks;
  root->walk([&](Block *block) { blocks.push_back(block); });
  for (Block *block : blocks) {
    BlockOrder order(*block);
    SmallVector<linalg::GenericOp> generics(block->getOps<linalg::GenericOp>());
    DenseSet<Operation *> fusedAway;
    for (linalg::GenericOp consumer : llvm::reverse(generics)) {
      if (fusedAway.contains(consumer))
        continue;
      linalg::GenericOp current = consumer;
      while (linalg::GenericOp fused = fuseSharedProducer(
                 current, order, rewriter, fusedOps, fusedAway))
        current = fused;
    }
  }
  return fusedOps;
}

struct FuseElementwisePass
    : spmdc::impl::FuseElementwiseBase<FuseElementwisePass> {
  /// The patterns, made once for every function the pass runs on.
  LogicalResult initialize(MLIRContext *context) override {
    RewritePatternSet patterns(context);
    linalg::populateElementwiseOpsFusionPatterns(patterns, worthFusing);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, worthFusing);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()
        ->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, worthFusing);
    frozen = FrozenRewritePatternSet(std::move(patterns));
    return success();
  }

  void runOnOperation() override {
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), frozen, config)))
      return signalPassFailure();
    // Then producers of several uses, and MLIR's patterns again on the
    // fused ops and their readers alone: a producer of a fused op may have
    // one use now (AdamW's gradient), and so may the fused op.
    llvm::SetVector<Operation *> again = fuseSharedProducers(getOperation());
    if (again.empty())
      return;
    for (Operation *op : again.takeVector()) {
      again.insert(op);
      again.insert(op->user_begin(), op->user_end());
    }
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    (void)applyOpPatternsGreedily(again.takeVector(), frozen, config);
  }

private:
  FrozenRewritePatternSet frozen;
};

} // namespace
