//===- Reductions.cpp - tg reductions into linalg -------------------------===//
//
// sum and max over dims, with keepdim.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "spmdc/Conversion/TensorGraphToLinalg/TensorGraphToLinalg.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace spmdc;
using namespace spmdc::tg_to_linalg;
using tg::typeOf;

namespace {

/// sum and max over dims, with keepdim: one linalg.generic whose output map
/// drops (or pins to 0) the reduced dims.
template <typename OpT>
struct ReductionLowering : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType in = op.getInput().getType(), out = op.getType();
    SmallVector<int64_t> dims = tg::normalizedDims(op.getDims(), in.getRank());
    SmallVector<AffineExpr> outExprs;
    SmallVector<utils::IteratorType> iterators;
    for (int64_t i = 0; i < in.getRank(); ++i) {
      bool reduced = llvm::is_contained(dims, i);
      iterators.push_back(reduced ? utils::IteratorType::reduction
                                  : utils::IteratorType::parallel);
      if (!reduced)
        outExprs.push_back(getAffineDimExpr(i, ctx));
      else if (op.getKeepdim())
        outExprs.push_back(getAffineConstantExpr(0, ctx));
    }
    bool isMax = std::is_same_v<OpT, tg::MaxOp>;
    Type el = out.getElementType();
    Value identity =
        isMax ? (isFloat(el) ? constantLike(rewriter, loc, el, -INFINITY)
                             : arith::ConstantOp::create(
                                   rewriter, loc,
                                   rewriter.getIntegerAttr(
                                       el, APInt::getSignedMinValue(
                                               el.getIntOrFloatBitWidth()))))
              : constantLike(rewriter, loc, el, 0.0);
    Value empty = tensor::EmptyOp::create(rewriter, loc, out.getShape(), el);
    Value init = linalg::FillOp::create(rewriter, loc, identity, empty)
                     .getResult(0);
    SmallVector<AffineMap> maps{
        AffineMap::getMultiDimIdentityMap(in.getRank(), ctx),
        AffineMap::get(in.getRank(), 0, outExprs, ctx)};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{out}, ValueRange{op.getInput()},
        ValueRange{init}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value v;
          if (isMax)
            v = isFloat(el) ? arith::MaximumFOp::create(b, l, args[0], args[1])
                                  .getResult()
                            : arith::MaxSIOp::create(b, l, args[0], args[1])
                                  .getResult();
          else
            v = isFloat(el)
                    ? arith::AddFOp::create(b, l, args[0], args[1]).getResult()
                    : arith::AddIOp::create(b, l, args[0], args[1]).getResult();
          linalg::YieldOp::create(b, l, v);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void spmdc::populateTgReductionToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<ReductionLowering<tg::SumOp>,
               ReductionLowering<tg::MaxOp>>(patterns.getContext());
}
