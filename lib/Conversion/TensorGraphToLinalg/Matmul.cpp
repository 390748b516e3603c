//===- Matmul.cpp - tg.matmul into linalg ---------------------------------===//
//
// Batched matmul with broadcast batch dims as one contraction (the matmuls
// --convert-tg-matmul-to-blas leaves: integer ones, and those of the
// CUDA target's kernels).
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

using namespace mlir;
using namespace spmdc;
using namespace spmdc::tg_to_linalg;
using tg::typeOf;

namespace {

/// Batched matmul with broadcast batch dims as one contraction.
struct MatmulLowering : OpRewritePattern<tg::MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::MatmulOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType out = op.getType();
    int64_t batch = out.getRank() - 2, loops = out.getRank() + 1;
    AffineExpr m = getAffineDimExpr(batch, ctx),
               n = getAffineDimExpr(batch + 1, ctx),
               k = getAffineDimExpr(batch + 2, ctx);
    auto operandMap = [&](RankedTensorType t, AffineExpr a, AffineExpr c) {
      SmallVector<AffineExpr> exprs;
      int64_t rank = t.getRank(), lead = batch - (rank - 2);
      for (int64_t i = 0; i < rank - 2; ++i)
        exprs.push_back(t.getDimSize(i) == 1 && out.getDimSize(lead + i) != 1
                            ? getAffineConstantExpr(0, ctx)
                            : getAffineDimExpr(lead + i, ctx));
      exprs.push_back(a);
      exprs.push_back(c);
      return AffineMap::get(loops, 0, exprs, ctx);
    };
    SmallVector<AffineExpr> outExprs;
    for (int64_t i = 0; i < batch; ++i)
      outExprs.push_back(getAffineDimExpr(i, ctx));
    outExprs.push_back(m);
    outExprs.push_back(n);
    SmallVector<AffineMap> maps{operandMap(op.getLhs().getType(), m, k),
                                operandMap(op.getRhs().getType(), k, n),
                                AffineMap::get(loops, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(loops - 1,
                                               utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    Type el = out.getElementType();
    Value empty = tensor::EmptyOp::create(rewriter, loc, out.getShape(), el);
    Value init = linalg::FillOp::create(rewriter, loc,
                                        constantLike(rewriter, loc, el, 0.0),
                                        empty)
                     .getResult(0);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{out}, ValueRange{op.getLhs(), op.getRhs()},
        ValueRange{init}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value product = arith::MulFOp::create(b, l, args[0], args[1]);
          linalg::YieldOp::create(b, l,
                                  Value(arith::AddFOp::create(b, l, args[2],
                                                              product)));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void spmdc::populateTgMatmulToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulLowering>(patterns.getContext());
}
