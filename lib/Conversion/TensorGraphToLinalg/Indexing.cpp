//===- Indexing.cpp - tg gathers and scatters into linalg and scf ---------===//
//
// embedding and gather read a table at indices from another tensor;
// their adjoints (scatter_add, embedding_backward) accumulate into zeros (or
// into the tensor their only reader adds them to) in scf.for loop nests,
// the form of a scatter, which linalg's affine outputs cannot state.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "spmdc/Conversion/TensorGraphToLinalg/TensorGraphToLinalg.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include <functional>

using namespace mlir;
using namespace spmdc;
using namespace spmdc::tg_to_linalg;
using tg::typeOf;

namespace {

/// embedding and gather read the table at an index from another tensor.
struct EmbeddingLowering : OpRewritePattern<tg::EmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::EmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType out = op.getType();
    Value weight = op.getWeight();
    MLIRContext *ctx = rewriter.getContext();
    int64_t rank = out.getRank();
    SmallVector<AffineExpr> idxExprs;
    for (int64_t i = 0; i + 1 < rank; ++i)
      idxExprs.push_back(getAffineDimExpr(i, ctx));
    SmallVector<AffineMap> maps{
        AffineMap::get(rank, 0, idxExprs, ctx),
        AffineMap::getMultiDimIdentityMap(rank, ctx)};
    Value init = tensor::EmptyOp::create(rewriter, op.getLoc(), out.getShape(),
                                         out.getElementType());
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, op.getLoc(), TypeRange{out}, ValueRange{op.getIndices()},
        ValueRange{init}, maps, iterators,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value row = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                                 args[0]);
          Value col = linalg::IndexOp::create(b, loc, rank - 1);
          Value v = tensor::ExtractOp::create(b, loc, weight,
                                              ValueRange{row, col});
          linalg::YieldOp::create(b, loc, v);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

struct GatherLowering : OpRewritePattern<tg::GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::GatherOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType out = op.getType();
    int64_t rank = out.getRank();
    int64_t dim = *tg::normalizeDim(op.getDim(), rank);
    Value input = op.getInput();
    Value result = elementwise(
        rewriter, op.getLoc(), out, ValueRange{op.getIndex()},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          SmallVector<Value> at;
          for (int64_t i = 0; i < rank; ++i)
            at.push_back(i == dim ? arith::IndexCastOp::create(
                                        b, loc, b.getIndexType(), args[0])
                                        .getResult()
                                  : linalg::IndexOp::create(b, loc, i)
                                        .getResult());
          return tensor::ExtractOp::create(b, loc, input, at);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Loops over every index of `shape`, threading `init` through `body`:
/// the form of a scatter, which linalg's affine outputs cannot state.
Value loopNest(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
               Value init,
               function_ref<Value(OpBuilder &, Location, ValueRange, Value)>
                   body) {
  SmallVector<Value> ivs;
  std::function<Value(OpBuilder &, size_t, Value)> nest =
      [&](OpBuilder &nb, size_t dim, Value acc) -> Value {
    if (dim == shape.size())
      return body(nb, loc, ivs, acc);
    Value lb = arith::ConstantIndexOp::create(nb, loc, 0);
    Value ub = arith::ConstantIndexOp::create(nb, loc, shape[dim]);
    Value step = arith::ConstantIndexOp::create(nb, loc, 1);
    auto loop = scf::ForOp::create(
        nb, loc, lb, ub, step, ValueRange{acc},
        [&](OpBuilder &lb2, Location, Value iv, ValueRange iter) {
          ivs.push_back(iv);
          Value next = nest(lb2, dim + 1, iter[0]);
          ivs.pop_back();
          scf::YieldOp::create(lb2, loc, next);
        });
    return loop.getResult(0);
  };
  return nest(b, 0, init);
}

Value zerosOf(OpBuilder &b, Location loc, RankedTensorType type) {
  return arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 0.0)));
}

/// `init`, then, for every index `ivs` of `iterShape`, result[target(ivs)]
/// += source[ivs]: the adjoints of gather and embedding.
Value scatterAccumulate(
    OpBuilder &b, Location loc, Value init, ArrayRef<int64_t> iterShape,
    Value source,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>
        target) {
  return loopNest(
      b, loc, iterShape, init,
      [&](OpBuilder &nb, Location l, ValueRange ivs, Value acc) -> Value {
        SmallVector<Value> at = target(nb, l, ivs);
        Value old = tensor::ExtractOp::create(nb, l, acc, at);
        Value add = arith::AddFOp::create(
            nb, l, old, tensor::ExtractOp::create(nb, l, source, ivs));
        return tensor::InsertOp::create(nb, l, add, acc, at);
      });
}

/// Lowers `scatter`, an adjoint that accumulates into zeros, with `build`
/// (given the tensor to accumulate into). Where its only reader adds it to
/// a tensor of its type (a tied embedding's two gradients; cross-entropy's
/// one-hot term and its softmax term), it accumulates into that tensor
/// instead and replaces the add: no zeros, no pass over both.
LogicalResult lowerScatter(
    Operation *scatter, PatternRewriter &rewriter,
    function_ref<Value(OpBuilder &, Value init)> build) {
  auto type = cast<RankedTensorType>(scatter->getResult(0).getType());
  auto add = scatter->hasOneUse()
                 ? dyn_cast<tg::AddOp>(*scatter->getUsers().begin())
                 : tg::AddOp();
  if (add && add.getLhs() != add.getRhs() && add.getType() == type &&
      add.getLhs().getType() == add.getRhs().getType()) {
    Value addend = add.getLhs() == scatter->getResult(0) ? add.getRhs()
                                                         : add.getLhs();
    rewriter.setInsertionPoint(add);
    rewriter.replaceOp(add, build(rewriter, addend));
    rewriter.eraseOp(scatter);
    return success();
  }
  rewriter.replaceOp(scatter,
                     build(rewriter, zerosOf(rewriter, scatter->getLoc(), type)));
  return success();
}

Value toIndex(OpBuilder &b, Location loc, Value i) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), i);
}

/// scatter_add: result[.., index[i], ..] += source[i] along `dim`.
struct ScatterAddLowering : OpRewritePattern<tg::ScatterAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::ScatterAddOp op,
                                PatternRewriter &rewriter) const override {
    int64_t dim = *tg::normalizeDim(op.getDim(), op.getType().getRank());
    Value index = op.getIndex();
    return lowerScatter(op, rewriter, [&](OpBuilder &b, Value init) {
      return scatterAccumulate(
          b, op.getLoc(), init, op.getSource().getType().getShape(),
          op.getSource(), [&](OpBuilder &nb, Location l, ValueRange ivs) {
            SmallVector<Value> at(ivs);
            at[dim] = toIndex(nb, l,
                              tensor::ExtractOp::create(nb, l, index, ivs));
            return at;
          });
    });
  }
};

/// embedding_backward: row indices[p] of a [V, D] table += grad[p].
struct EmbeddingBackwardLowering : OpRewritePattern<tg::EmbeddingBackwardOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::EmbeddingBackwardOp op,
                                PatternRewriter &rewriter) const override {
    Value indices = op.getIndices();
    return lowerScatter(op, rewriter, [&](OpBuilder &b, Value init) {
      return scatterAccumulate(
          b, op.getLoc(), init, op.getGrad().getType().getShape(),
          op.getGrad(), [&](OpBuilder &nb, Location l, ValueRange ivs) {
            Value row = tensor::ExtractOp::create(nb, l, indices,
                                                  ivs.drop_back());
            return SmallVector<Value>{toIndex(nb, l, row), ivs.back()};
          });
    });
  }
};

} // namespace

void spmdc::populateTgIndexingToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<EmbeddingLowering, GatherLowering, ScatterAddLowering,
               EmbeddingBackwardLowering>(patterns.getContext());
}
