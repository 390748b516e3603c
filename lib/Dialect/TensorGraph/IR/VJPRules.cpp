//===- VJPRules.cpp - the derivative of each primitive tg op --------------===//
//
// One `buildVJP` per differentiable primitive: given dL/dresult, build
// dL/doperand, reduced to the operand's shape where the op broadcast it.
// Composites have no rule: --tg-decompose runs before --tg-autodiff.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include <cmath>

using namespace mlir;

namespace spmdc::tg {
namespace {

/// Arithmetic at the location of the op being differentiated, plus the
/// shapes gradients need.
struct Emitter : GraphMath {
  Value cmp(ComparePredicate predicate, Value x, Value y) {
    return compare(predicate, x, y);
  }
  /// The gradient `g` where `mask` holds, zero elsewhere, shaped like `g`.
  Value where(Value mask, Value g) {
    return sumToShape(b, loc, select(mask, g, scalar(g, 0.0)),
                      broadcastType(mask, g));
  }
  Value toShapeOf(Value g, Value operand) {
    return sumToShape(b, loc, g, typeOf(operand));
  }
  RankedTensorType broadcastType(Value x, Value y) {
    auto shape = broadcastShapes(typeOf(x).getShape(), typeOf(y).getShape());
    return RankedTensorType::get(*shape, typeOf(y).getElementType());
  }
  Value transposeLast2(Value x) { return transposeLastTwo(b, loc, x); }
};

Emitter emitter(OpBuilder &b, Operation *op) {
  return {{b, op->getLoc()}};
}

} // namespace

//===--- Elementwise unary ------------------------------------------------===//

LogicalResult NegOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  grads.push_back(emitter(b, *this).neg(g));
  return success();
}

LogicalResult AbsOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  // g * sign(x); sign(0) = 0 as in PyTorch.
  Emitter e = emitter(b, *this);
  Value zero = e.scalar(getInput(), 0.0);
  Value positive = e.cmp(ComparePredicate::gt, getInput(), zero);
  Value negative = e.cmp(ComparePredicate::lt, getInput(), zero);
  grads.push_back(e.select(positive, g,
                           e.select(negative, e.neg(g), e.scalar(g, 0.0))));
  return success();
}

LogicalResult ExpOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  grads.push_back(emitter(b, *this).mul(g, getResult()));
  return success();
}

LogicalResult LogOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  grads.push_back(emitter(b, *this).div(g, getInput()));
  return success();
}

LogicalResult SqrtOp::buildVJP(OpBuilder &b, Value g,
                               SmallVectorImpl<Value> &grads) {
  // d sqrt(x) = 1 / (2 sqrt(x)).
  Emitter e = emitter(b, *this);
  grads.push_back(e.div(e.mul(g, e.scalar(g, 0.5)), getResult()));
  return success();
}

LogicalResult RsqrtOp::buildVJP(OpBuilder &b, Value g,
                                SmallVectorImpl<Value> &grads) {
  // d x^-1/2 = -1/2 x^-3/2 = -1/2 y^3.
  Emitter e = emitter(b, *this);
  Value y = getResult();
  Value y3 = e.mul(e.mul(y, y), y);
  grads.push_back(e.mul(e.mul(g, e.scalar(g, -0.5)), y3));
  return success();
}

LogicalResult ReciprocalOp::buildVJP(OpBuilder &b, Value g,
                                     SmallVectorImpl<Value> &grads) {
  Emitter e = emitter(b, *this);
  Value y = getResult();
  grads.push_back(e.neg(e.mul(g, e.mul(y, y))));
  return success();
}

LogicalResult TanhOp::buildVJP(OpBuilder &b, Value g,
                               SmallVectorImpl<Value> &grads) {
  Emitter e = emitter(b, *this);
  Value y = getResult();
  grads.push_back(e.mul(g, e.sub(e.scalar(y, 1.0), e.mul(y, y))));
  return success();
}

LogicalResult ErfOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  // d erf(x) = 2/sqrt(pi) exp(-x^2).
  Emitter e = emitter(b, *this);
  Value x = getInput();
  Value gauss = ExpOp::create(b, getLoc(), e.neg(e.mul(x, x)));
  grads.push_back(e.mul(e.mul(g, e.scalar(g, 2.0 / std::sqrt(M_PI))), gauss));
  return success();
}

LogicalResult SigmoidOp::buildVJP(OpBuilder &b, Value g,
                                  SmallVectorImpl<Value> &grads) {
  Emitter e = emitter(b, *this);
  Value y = getResult();
  grads.push_back(e.mul(g, e.mul(y, e.sub(e.scalar(y, 1.0), y))));
  return success();
}

LogicalResult SinOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  grads.push_back(
      emitter(b, *this).mul(g, CosOp::create(b, getLoc(), getInput())));
  return success();
}

LogicalResult CosOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  Emitter e = emitter(b, *this);
  grads.push_back(e.neg(e.mul(g, SinOp::create(b, getLoc(), getInput()))));
  return success();
}

LogicalResult ReluOp::buildVJP(OpBuilder &b, Value g,
                               SmallVectorImpl<Value> &grads) {
  Emitter e = emitter(b, *this);
  grads.push_back(
      e.where(e.cmp(ComparePredicate::gt, getInput(), e.scalar(getInput(), 0.0)), g));
  return success();
}

//===--- Elementwise binary -----------------------------------------------===//

LogicalResult AddOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  Emitter e = emitter(b, *this);
  grads.push_back(e.toShapeOf(g, getLhs()));
  grads.push_back(e.toShapeOf(g, getRhs()));
  return success();
}

LogicalResult SubOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  Emitter e = emitter(b, *this);
  grads.push_back(e.toShapeOf(g, getLhs()));
  // Negated after the broadcast sum: fewer elements to negate.
  grads.push_back(e.neg(e.toShapeOf(g, getRhs())));
  return success();
}

LogicalResult MulOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  Emitter e = emitter(b, *this);
  grads.push_back(e.toShapeOf(e.mul(g, getRhs()), getLhs()));
  grads.push_back(e.toShapeOf(e.mul(g, getLhs()), getRhs()));
  return success();
}

LogicalResult DivOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  // d(a/b)/da = 1/b; d(a/b)/db = -a/b^2 = -y/b.
  Emitter e = emitter(b, *this);
  Value gOverB = e.div(g, getRhs());
  grads.push_back(e.toShapeOf(gOverB, getLhs()));
  grads.push_back(e.toShapeOf(e.neg(e.mul(gOverB, getResult())), getRhs()));
  return success();
}

LogicalResult RemOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  // rem(a, b) = a - b * trunc(a / b), the quotient piecewise constant:
  // d/da = 1; d/db = -trunc(a / b).
  Emitter e = emitter(b, *this);
  grads.push_back(e.toShapeOf(g, getLhs()));
  Value quotient =
      TruncOp::create(b, getLoc(), e.div(getLhs(), getRhs())).getResult();
  grads.push_back(e.toShapeOf(e.neg(e.mul(g, quotient)), getRhs()));
  return success();
}

LogicalResult PowOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  // d a^b / da = b a^(b-1); d a^b / db = a^b ln a.
  Emitter e = emitter(b, *this);
  Value a = getLhs(), p = getRhs();
  Value aPowBm1 = PowOp::create(b, getLoc(), a, e.sub(p, e.scalar(p, 1.0)));
  grads.push_back(e.toShapeOf(e.mul(g, e.mul(p, aPowBm1)), a));
  Value logA = LogOp::create(b, getLoc(), a);
  grads.push_back(e.toShapeOf(e.mul(g, e.mul(getResult(), logA)), p));
  return success();
}

/// maximum / minimum: the gradient goes to the chosen operand; ties split
/// it evenly, as in PyTorch.
static void buildMinMaxVJP(Emitter &e, Value lhs, Value rhs, Value g,
                           ComparePredicate lhsWins,
                           SmallVectorImpl<Value> &grads) {
  Value half = e.mul(g, e.scalar(g, 0.5));
  Value tie = e.cmp(ComparePredicate::eq, lhs, rhs);
  Value lhsStrict = e.cmp(lhsWins, lhs, rhs);
  Value zero = e.scalar(g, 0.0);
  Value toLhs = e.select(tie, half, e.select(lhsStrict, g, zero));
  Value toRhs = e.select(tie, half, e.select(lhsStrict, zero, g));
  grads.push_back(e.toShapeOf(toLhs, lhs));
  grads.push_back(e.toShapeOf(toRhs, rhs));
}

LogicalResult MaximumOp::buildVJP(OpBuilder &b, Value g,
                                  SmallVectorImpl<Value> &grads) {
  Emitter e = emitter(b, *this);
  buildMinMaxVJP(e, getLhs(), getRhs(), g, ComparePredicate::gt, grads);
  return success();
}

LogicalResult MinimumOp::buildVJP(OpBuilder &b, Value g,
                                  SmallVectorImpl<Value> &grads) {
  Emitter e = emitter(b, *this);
  buildMinMaxVJP(e, getLhs(), getRhs(), g, ComparePredicate::lt, grads);
  return success();
}

LogicalResult SelectOp::buildVJP(OpBuilder &b, Value g,
                                 SmallVectorImpl<Value> &grads) {
  Emitter e = emitter(b, *this);
  Value zero = e.scalar(g, 0.0);
  grads.push_back(Value());
  grads.push_back(e.toShapeOf(e.select(getCondition(), g, zero), getOnTrue()));
  grads.push_back(
      e.toShapeOf(e.select(getCondition(), zero, g), getOnFalse()));
  return success();
}

LogicalResult ConvertOp::buildVJP(OpBuilder &b, Value g,
                                  SmallVectorImpl<Value> &grads) {
  // Only float-to-float conversions carry a gradient.
  RankedTensorType in = getInput().getType();
  if (!llvm::isa<FloatType>(in.getElementType()) ||
      !llvm::isa<FloatType>(getType().getElementType())) {
    grads.push_back(Value());
    return success();
  }
  grads.push_back(ConvertOp::create(b, getLoc(), in, g));
  return success();
}

//===--- Reductions -------------------------------------------------------===//

LogicalResult SumOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  RankedTensorType in = getInput().getType();
  Value kept = reshapeTo(b, getLoc(), g, keepDimType(in, getDims()));
  grads.push_back(BroadcastOp::create(b, getLoc(), in, kept));
  return success();
}

LogicalResult MaxOp::buildVJP(OpBuilder &b, Value g,
                              SmallVectorImpl<Value> &grads) {
  // The gradient goes to the elements equal to the max, split evenly
  // between ties (PyTorch's amax).
  Emitter e = emitter(b, *this);
  RankedTensorType in = getInput().getType();
  RankedTensorType kept = keepDimType(in, getDims());
  Value maxKept = reshapeTo(b, getLoc(), getResult(), kept);
  Value isMax = e.cmp(ComparePredicate::eq, getInput(), maxKept);
  Value ones = e.select(isMax, e.scalar(g, 1.0), e.scalar(g, 0.0));
  Value count = SumOp::create(b, getLoc(), ones, getDims(), /*keepdim=*/true);
  Value share = e.div(reshapeTo(b, getLoc(), g, kept), count);
  grads.push_back(e.select(isMax, share, e.scalar(g, 0.0)));
  return success();
}

//===--- Linear algebra and data movement ---------------------------------===//

LogicalResult MatmulOp::buildVJP(OpBuilder &b, Value g,
                                 SmallVectorImpl<Value> &grads) {
  // C = A B: dA = dC B^T, dB = A^T dC, each summed over broadcast batch dims.
  Emitter e = emitter(b, *this);
  Value dA = MatmulOp::create(b, getLoc(), g, e.transposeLast2(getRhs()));
  Value dB = MatmulOp::create(b, getLoc(), e.transposeLast2(getLhs()), g);
  grads.push_back(e.toShapeOf(dA, getLhs()));
  grads.push_back(e.toShapeOf(dB, getRhs()));
  return success();
}

LogicalResult ReshapeOp::buildVJP(OpBuilder &b, Value g,
                                  SmallVectorImpl<Value> &grads) {
  grads.push_back(ReshapeOp::create(b, getLoc(), getInput().getType(), g));
  return success();
}

LogicalResult TransposeOp::buildVJP(OpBuilder &b, Value g,
                                    SmallVectorImpl<Value> &grads) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  grads.push_back(TransposeOp::create(b, getLoc(), g, inverse));
  return success();
}

LogicalResult BroadcastOp::buildVJP(OpBuilder &b, Value g,
                                    SmallVectorImpl<Value> &grads) {
  grads.push_back(sumToShape(b, getLoc(), g, getInput().getType()));
  return success();
}

LogicalResult SliceOp::buildVJP(OpBuilder &b, Value g,
                                SmallVectorImpl<Value> &grads) {
  // The slice's gradient spread back to its stride, padded with zeros on
  // both sides of `dim`.
  RankedTensorType in = getInput().getType();
  int64_t dim = *normalizeDim(getDim(), in.getRank());
  Value spread = spreadAlongDim(b, getLoc(), g, dim, getStep());
  int64_t after =
      in.getDimSize(dim) - getStart() - typeOf(spread).getDimSize(dim);
  grads.push_back(padAlongDim(b, getLoc(), spread, dim, getStart(), after));
  return success();
}

LogicalResult ConcatOp::buildVJP(OpBuilder &b, Value g,
                                 SmallVectorImpl<Value> &grads) {
  int64_t dim = *normalizeDim(getDim(), getType().getRank());
  int64_t offset = 0;
  for (Value input : getInputs()) {
    int64_t size = typeOf(input).getDimSize(dim);
    grads.push_back(
        SliceOp::create(b, getLoc(), g, dim, offset, offset + size, 1));
    offset += size;
  }
  return success();
}

LogicalResult EmbeddingOp::buildVJP(OpBuilder &b, Value g,
                                    SmallVectorImpl<Value> &grads) {
  if (std::optional<int64_t> padding = getPaddingIdx()) {
    // Positions holding padding_idx add nothing to the weight's gradient.
    GraphMath m{b, getLoc()};
    RankedTensorType indices = getIndices().getType();
    SmallVector<int64_t> column(indices.getShape());
    column.push_back(1);
    Value isPadding =
        m.compare(tg::ComparePredicate::eq, getIndices(),
                  buildScalar(b, getLoc(), indices.getElementType(), *padding));
    Value mask = ReshapeOp::create(
        b, getLoc(), RankedTensorType::get(column, b.getI1Type()), isPadding);
    g = m.select(mask, m.scalar(g, 0.0), g);
  }
  grads.push_back(EmbeddingBackwardOp::create(
      b, getLoc(), getWeight().getType(), g, getIndices()));
  grads.push_back(Value());
  return success();
}

LogicalResult EmbeddingBackwardOp::buildVJP(OpBuilder &b, Value g,
                                            SmallVectorImpl<Value> &grads) {
  grads.push_back(
      EmbeddingOp::create(b, getLoc(), g, getIndices(), IntegerAttr()));
  grads.push_back(Value());
  return success();
}

LogicalResult GatherOp::buildVJP(OpBuilder &b, Value g,
                                 SmallVectorImpl<Value> &grads) {
  grads.push_back(ScatterAddOp::create(b, getLoc(), getInput().getType(),
                                       getIndex(), g, getDim()));
  grads.push_back(Value());
  return success();
}

LogicalResult ScatterAddOp::buildVJP(OpBuilder &b, Value g,
                                     SmallVectorImpl<Value> &grads) {
  grads.push_back(Value());
  grads.push_back(GatherOp::create(b, getLoc(), g, getIndex(), getDim()));
  return success();
}

} // namespace spmdc::tg
