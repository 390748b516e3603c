//===- DataMovement.cpp - tg shape ops into tensor and linalg -------------===//
//
// reshape, transpose, broadcast, slice and concat: ops that move values
// without computing on them.
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

struct ReshapeLowering : OpRewritePattern<tg::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType out = op.getType();
    auto shapeType =
        RankedTensorType::get({out.getRank()}, rewriter.getIndexType());
    SmallVector<Attribute> sizes;
    for (int64_t s : out.getShape())
      sizes.push_back(rewriter.getIndexAttr(s));
    Value shape = arith::ConstantOp::create(
        rewriter, op.getLoc(), DenseElementsAttr::get(shapeType, sizes));
    rewriter.replaceOpWithNewOp<tensor::ReshapeOp>(op, out, op.getInput(),
                                                   shape);
    return success();
  }
};

struct TransposeLowering : OpRewritePattern<tg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType out = op.getType();
    Value init = tensor::EmptyOp::create(rewriter, op.getLoc(), out.getShape(),
                                         out.getElementType());
    auto transpose = linalg::TransposeOp::create(
        rewriter, op.getLoc(), op.getInput(), init, op.getPermutation());
    rewriter.replaceOp(op, transpose.getResult());
    return success();
  }
};

struct BroadcastLowering : OpRewritePattern<tg::BroadcastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::BroadcastOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, elementwise(rewriter, op.getLoc(), op.getType(),
                                       op.getInput(),
                                       [](OpBuilder &, Location, ValueRange a) {
                                         return a[0];
                                       }));
    return success();
  }
};

struct SliceLowering : OpRewritePattern<tg::SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::SliceOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType in = op.getInput().getType();
    int64_t dim = *tg::normalizeDim(op.getDim(), in.getRank());
    SmallVector<OpFoldResult> offsets(in.getRank(), rewriter.getIndexAttr(0)),
        sizes, strides(in.getRank(), rewriter.getIndexAttr(1));
    for (int64_t s : op.getType().getShape())
      sizes.push_back(rewriter.getIndexAttr(s));
    offsets[dim] = rewriter.getIndexAttr(op.getStart());
    strides[dim] = rewriter.getIndexAttr(op.getStep());
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, op.getType(), op.getInput(), offsets, sizes, strides);
    return success();
  }
};

/// concat: each input inserted into an empty tensor at its offset.
struct ConcatLowering : OpRewritePattern<tg::ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::ConcatOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType out = op.getType();
    int64_t dim = *tg::normalizeDim(op.getDim(), out.getRank());
    Value result = tensor::EmptyOp::create(rewriter, op.getLoc(),
                                           out.getShape(),
                                           out.getElementType());
    int64_t offset = 0;
    for (Value input : op.getInputs()) {
      RankedTensorType t = typeOf(input);
      SmallVector<OpFoldResult> offsets(t.getRank(), rewriter.getIndexAttr(0)),
          sizes, strides(t.getRank(), rewriter.getIndexAttr(1));
      for (int64_t s : t.getShape())
        sizes.push_back(rewriter.getIndexAttr(s));
      offsets[dim] = rewriter.getIndexAttr(offset);
      result = tensor::InsertSliceOp::create(rewriter, op.getLoc(), input,
                                             result, offsets, sizes, strides);
      offset += t.getDimSize(dim);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void spmdc::populateTgDataMovementToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, TransposeLowering, BroadcastLowering,
               SliceLowering, ConcatLowering>(patterns.getContext());
}
