//===- ApproximateMath.cpp - f32 math as inline polynomials ---------------===//
//
// --approximate-math: MLIR's polynomial approximations of f32 math
// functions, so a loop calls no libm function per element.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace spmdc {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

struct ApproximateMathPass
    : spmdc::impl::ApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    // The patterns add no blocks: a pass over the regions after each round
    // would find nothing to simplify.
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      signalPassFailure();
  }
};

} // namespace
