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
#include "mlir/IR/Dominance.h"
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

/// A producer whose results other ops read too, fused into a consumer that
/// reads one of them point for point (a permutation, so nothing is
/// recomputed): the fused loop also yields the producer's results and the
/// other ops read those. Each value is then computed and stored once, and
/// the consumer's loop no longer loads it back. AdamW's moments are the
/// case: m and v are returned and read by the parameter's update, which
/// was three loops over each parameter (40 bytes of traffic an element)
/// and becomes one (28). MLIR's own pattern keeps the producer for its
/// other uses and recomputes it inside the consumer. The fused loop goes
/// where the consumer was, if every other use follows it, or else where
/// the producer was, if every operand of the consumer precedes that.
struct FuseSharedProducer : OpRewritePattern<linalg::GenericOp> {
  FuseSharedProducer(MLIRContext *context, DominanceInfo &dominance)
      : OpRewritePattern(context), dominance(dominance) {}

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    if (consumer.getNumParallelLoops() != consumer.getNumLoops())
      return failure();
    for (OpOperand *operand : consumer.getDpsInputOperands()) {
      auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
      if (!producer || producer->hasOneUse() ||
          !linalg::areElementwiseOpsFusable(operand) ||
          !consumer.getMatchingIndexingMap(operand).isPermutation())
        continue;
      // Read through one operand only: another would be left reading the
      // fused loop's own result.
      if (llvm::count_if(consumer->getOperands(), [&](Value value) {
            return value.getDefiningOp() == producer;
          }) != 1)
        continue;
      bool otherUsesFollow =
          llvm::all_of(producer->getUsers(), [&](Operation *user) {
            return user == consumer ||
                   dominance.properlyDominates(consumer, user);
          });
      bool operandsPrecede =
          llvm::all_of(consumer->getOperands(), [&](Value value) {
            return value.getDefiningOp() == producer ||
                   dominance.properlyDominates(value, producer);
          });
      if (otherUsesFollow)
        rewriter.setInsertionPoint(consumer);
      else if (operandsPrecede)
        rewriter.setInsertionPoint(producer);
      else
        continue;
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, operand);
      if (failed(fused))
        return failure();
      for (auto [original, replacement] : fused->replacements)
        rewriter.replaceAllUsesWith(original, replacement);
      rewriter.eraseOp(consumer);
      rewriter.eraseOp(producer);
      return success();
    }
    return failure();
  }

  DominanceInfo &dominance;
};

struct FuseElementwisePass
    : spmdc::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    linalg::populateElementwiseOpsFusionPatterns(patterns, worthFusing);
    DominanceInfo dominance(getOperation());
    patterns.add<FuseSharedProducer>(context, dominance);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, worthFusing);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()
        ->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, worthFusing);
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      signalPassFailure();
  }
};

} // namespace
