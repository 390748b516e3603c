//===- FuseElementwise.cpp - elementwise fusion without costly recompute --===//
//
// --fuse-elementwise: MLIR's elementwise fusion patterns with a control
// function that keeps a broadcast producer out of its consumer when the
// producer calls math functions or divides: fused, it would run once per
// element of the consumer instead of once per element of its own.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
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

struct FuseElementwisePass
    : spmdc::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
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
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      signalPassFailure();
  }
};

} // namespace
