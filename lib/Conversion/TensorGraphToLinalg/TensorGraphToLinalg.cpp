//===- TensorGraphToLinalg.cpp - tg primitives into linalg on tensors -----===//
//
// --convert-tg-to-linalg: each primitive tg op becomes linalg, tensor, arith
// and math ops on tensors, the form MLIR's fusion, one-shot bufferization
// and LLVM lowering take from there. Elementwise ops (with NumPy
// broadcasting), reductions and matmuls are linalg.generic ops whose
// indexing maps state the broadcast, so elementwise fusion sees through
// them. Composites must be decomposed first.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace spmdc {
#define GEN_PASS_DEF_CONVERTTGTOLINALG
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;
using namespace spmdc;
using tg::typeOf;

namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

bool isFloat(Type t) { return isa<FloatType>(t); }

/// The map of an operand broadcast NumPy-style into `resultRank` loops: its
/// dims align right; a size-1 dim the result stretches reads index 0.
AffineMap broadcastMap(MLIRContext *ctx, RankedTensorType operand,
                       RankedTensorType result) {
  int64_t lead = result.getRank() - operand.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < operand.getRank(); ++i)
    exprs.push_back(operand.getDimSize(i) == 1 &&
                            result.getDimSize(lead + i) != 1
                        ? getAffineConstantExpr(0, ctx)
                        : getAffineDimExpr(lead + i, ctx));
  return AffineMap::get(result.getRank(), 0, exprs, ctx);
}

/// A linalg.generic computing `resultType` elementwise from broadcast
/// `inputs` with `body`.
Value elementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                  ValueRange inputs, BodyFn body) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(ctx, typeOf(in), resultType));
  maps.push_back(AffineMap::getMultiDimIdentityMap(resultType.getRank(), ctx));
  Value init = tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                       resultType.getElementType());
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value v = body(nb, nl, args.drop_back());
        linalg::YieldOp::create(nb, nl, v);
      });
  return generic.getResult(0);
}

Value constantLike(OpBuilder &b, Location loc, Type type, double value) {
  if (auto f = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(f, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

/// Scalar conversion between element types, as tg.convert defines it.
Value convertScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (to.isInteger(1))
    return isFloat(from)
               ? arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                       constantLike(b, loc, from, 0.0))
                     .getResult()
               : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                                       constantLike(b, loc, from, 0.0))
                     .getResult();
  if (isFloat(from) && isFloat(to))
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
               ? arith::ExtFOp::create(b, loc, to, v).getResult()
               : arith::TruncFOp::create(b, loc, to, v).getResult();
  if (isFloat(from))
    return arith::FPToSIOp::create(b, loc, to, v);
  if (from.isInteger(1))
    return isFloat(to) ? arith::UIToFPOp::create(b, loc, to, v).getResult()
                       : arith::ExtUIOp::create(b, loc, to, v).getResult();
  if (isFloat(to))
    return arith::SIToFPOp::create(b, loc, to, v);
  return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
             ? arith::ExtSIOp::create(b, loc, to, v).getResult()
             : arith::TruncIOp::create(b, loc, to, v).getResult();
}

/// Ordered comparisons (false on NaN), but ne unordered (true on NaN), as
/// IEEE and PyTorch compare.
arith::CmpFPredicate floatPredicate(tg::ComparePredicate p) {
  switch (p) {
  case tg::ComparePredicate::eq:
    return arith::CmpFPredicate::OEQ;
  case tg::ComparePredicate::ne:
    return arith::CmpFPredicate::UNE;
  case tg::ComparePredicate::lt:
    return arith::CmpFPredicate::OLT;
  case tg::ComparePredicate::le:
    return arith::CmpFPredicate::OLE;
  case tg::ComparePredicate::gt:
    return arith::CmpFPredicate::OGT;
  case tg::ComparePredicate::ge:
    return arith::CmpFPredicate::OGE;
  }
  llvm_unreachable("every predicate is covered");
}

arith::CmpIPredicate intPredicate(tg::ComparePredicate p) {
  switch (p) {
  case tg::ComparePredicate::eq:
    return arith::CmpIPredicate::eq;
  case tg::ComparePredicate::ne:
    return arith::CmpIPredicate::ne;
  case tg::ComparePredicate::lt:
    return arith::CmpIPredicate::slt;
  case tg::ComparePredicate::le:
    return arith::CmpIPredicate::sle;
  case tg::ComparePredicate::gt:
    return arith::CmpIPredicate::sgt;
  case tg::ComparePredicate::ge:
    return arith::CmpIPredicate::sge;
  }
  llvm_unreachable("every predicate is covered");
}

/// The scalar body of each elementwise tg op.
FailureOr<Value> scalarOf(Operation *op, OpBuilder &b, Location loc,
                          ValueRange x) {
  Type t = x.empty() ? Type() : x[0].getType();
  bool f = t && isFloat(t);
  auto one = [&] { return constantLike(b, loc, t, 1.0); };
  return llvm::TypeSwitch<Operation *, FailureOr<Value>>(op)
      .Case([&](tg::NegOp) -> Value {
        return f ? arith::NegFOp::create(b, loc, x[0]).getResult()
                 : arith::SubIOp::create(b, loc, constantLike(b, loc, t, 0),
                                         x[0])
                       .getResult();
      })
      .Case([&](tg::AbsOp) -> Value {
        return f ? math::AbsFOp::create(b, loc, x[0]).getResult()
                 : math::AbsIOp::create(b, loc, x[0]).getResult();
      })
      .Case([&](tg::ExpOp) -> Value { return math::ExpOp::create(b, loc, x[0]); })
      .Case([&](tg::LogOp) -> Value { return math::LogOp::create(b, loc, x[0]); })
      .Case([&](tg::SqrtOp) -> Value { return math::SqrtOp::create(b, loc, x[0]); })
      .Case([&](tg::RsqrtOp) -> Value { return math::RsqrtOp::create(b, loc, x[0]); })
      .Case([&](tg::TanhOp) -> Value { return math::TanhOp::create(b, loc, x[0]); })
      .Case([&](tg::ErfOp) -> Value { return math::ErfOp::create(b, loc, x[0]); })
      .Case([&](tg::SinOp) -> Value { return math::SinOp::create(b, loc, x[0]); })
      .Case([&](tg::CosOp) -> Value { return math::CosOp::create(b, loc, x[0]); })
      .Case([&](tg::ReciprocalOp) -> Value {
        return arith::DivFOp::create(b, loc, one(), x[0]);
      })
      .Case([&](tg::SigmoidOp) -> Value {
        Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x[0]));
        return arith::DivFOp::create(b, loc, one(),
                                     arith::AddFOp::create(b, loc, one(), e));
      })
      .Case([&](tg::ReluOp) -> Value {
        Value zero = constantLike(b, loc, t, 0.0);
        return f ? arith::MaximumFOp::create(b, loc, x[0], zero).getResult()
                 : arith::MaxSIOp::create(b, loc, x[0], zero).getResult();
      })
      .Case([&](tg::NotOp) -> Value {
        return arith::XOrIOp::create(b, loc, x[0], constantLike(b, loc, t, 1));
      })
      .Case([&](tg::AddOp) -> Value {
        return f ? arith::AddFOp::create(b, loc, x[0], x[1]).getResult()
                 : arith::AddIOp::create(b, loc, x[0], x[1]).getResult();
      })
      .Case([&](tg::SubOp) -> Value {
        return f ? arith::SubFOp::create(b, loc, x[0], x[1]).getResult()
                 : arith::SubIOp::create(b, loc, x[0], x[1]).getResult();
      })
      .Case([&](tg::MulOp) -> Value {
        return f ? arith::MulFOp::create(b, loc, x[0], x[1]).getResult()
                 : arith::MulIOp::create(b, loc, x[0], x[1]).getResult();
      })
      .Case([&](tg::DivOp) -> Value {
        return f ? arith::DivFOp::create(b, loc, x[0], x[1]).getResult()
                 : arith::DivSIOp::create(b, loc, x[0], x[1]).getResult();
      })
      .Case([&](tg::PowOp) -> Value {
        return math::PowFOp::create(b, loc, x[0], x[1]);
      })
      .Case([&](tg::MaximumOp) -> Value {
        return f ? arith::MaximumFOp::create(b, loc, x[0], x[1]).getResult()
                 : arith::MaxSIOp::create(b, loc, x[0], x[1]).getResult();
      })
      .Case([&](tg::MinimumOp) -> Value {
        return f ? arith::MinimumFOp::create(b, loc, x[0], x[1]).getResult()
                 : arith::MinSIOp::create(b, loc, x[0], x[1]).getResult();
      })
      .Case([&](tg::AndOp) -> Value {
        return arith::AndIOp::create(b, loc, x[0], x[1]);
      })
      .Case([&](tg::OrOp) -> Value {
        return arith::OrIOp::create(b, loc, x[0], x[1]);
      })
      .Case([&](tg::CompareOp c) -> Value {
        if (f)
          return arith::CmpFOp::create(b, loc, floatPredicate(c.getPredicate()),
                                       x[0], x[1]);
        return arith::CmpIOp::create(b, loc, intPredicate(c.getPredicate()),
                                     x[0], x[1]);
      })
      .Case([&](tg::SelectOp) -> Value {
        return arith::SelectOp::create(b, loc, x[0], x[1], x[2]);
      })
      .Case([&](tg::ConvertOp c) -> Value {
        return convertScalar(b, loc, x[0], c.getType().getElementType());
      })
      .Default([&](Operation *) { return failure(); });
}

/// Elementwise tg ops (unary, binary, compare, select, convert).
struct ElementwiseLowering : RewritePattern {
  ElementwiseLowering(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!op->hasTrait<tg::OpTrait::Elementwise>() ||
        op->hasTrait<tg::OpTrait::Composite>())
      return failure();
    bool failedBody = false;
    Value result = elementwise(
        rewriter, op->getLoc(), typeOf(op->getResult(0)), op->getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          FailureOr<Value> v = scalarOf(op, b, loc, args);
          if (failed(v)) {
            failedBody = true;
            return args[0];
          }
          return *v;
        });
    if (failedBody)
      return failure();
    rewriter.replaceOp(op, result);
    return success();
  }
};

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

struct IotaLowering : OpRewritePattern<tg::IotaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::IotaOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType out = op.getType();
    int64_t dim = *tg::normalizeDim(op.getDim(), out.getRank());
    Value result = elementwise(
        rewriter, op.getLoc(), out, ValueRange{},
        [&](OpBuilder &b, Location loc, ValueRange) -> Value {
          Value i = linalg::IndexOp::create(b, loc, dim);
          Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), i);
          return convertScalar(b, loc, asInt, out.getElementType());
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct FullLowering : OpRewritePattern<tg::FullOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::FullOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType out = op.getType();
    double v = op.getValue().convertToDouble();
    Attribute element =
        isFloat(out.getElementType())
            ? Attribute(rewriter.getFloatAttr(out.getElementType(), v))
            : Attribute(rewriter.getIntegerAttr(out.getElementType(),
                                                static_cast<int64_t>(v)));
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, DenseElementsAttr::get(out, element));
    return success();
  }
};

struct ConstantLowering : OpRewritePattern<tg::ConstantOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::ConstantOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, cast<TypedAttr>(op.getValue()));
    return success();
  }
};

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

/// Zeros of `resultType`, then, for every index `ivs` of `iterShape`,
/// result[target(ivs)] += source[ivs]: the adjoints of gather and embedding.
Value scatterAccumulate(
    OpBuilder &b, Location loc, RankedTensorType resultType,
    ArrayRef<int64_t> iterShape, Value source,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>
        target) {
  return loopNest(
      b, loc, iterShape, zerosOf(b, loc, resultType),
      [&](OpBuilder &nb, Location l, ValueRange ivs, Value acc) -> Value {
        SmallVector<Value> at = target(nb, l, ivs);
        Value old = tensor::ExtractOp::create(nb, l, acc, at);
        Value add = arith::AddFOp::create(
            nb, l, old, tensor::ExtractOp::create(nb, l, source, ivs));
        return tensor::InsertOp::create(nb, l, add, acc, at);
      });
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
    rewriter.replaceOp(
        op, scatterAccumulate(
                rewriter, op.getLoc(), op.getType(),
                op.getSource().getType().getShape(), op.getSource(),
                [&](OpBuilder &b, Location l, ValueRange ivs) {
                  SmallVector<Value> at(ivs);
                  at[dim] = toIndex(b, l,
                                    tensor::ExtractOp::create(b, l, index, ivs));
                  return at;
                }));
    return success();
  }
};

/// embedding_backward: row indices[p] of a [V, D] table += grad[p].
struct EmbeddingBackwardLowering : OpRewritePattern<tg::EmbeddingBackwardOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::EmbeddingBackwardOp op,
                                PatternRewriter &rewriter) const override {
    Value indices = op.getIndices();
    rewriter.replaceOp(
        op, scatterAccumulate(
                rewriter, op.getLoc(), op.getType(),
                op.getGrad().getType().getShape(), op.getGrad(),
                [&](OpBuilder &b, Location l, ValueRange ivs) {
                  Value row = tensor::ExtractOp::create(b, l, indices,
                                                        ivs.drop_back());
                  return SmallVector<Value>{toIndex(b, l, row), ivs.back()};
                }));
    return success();
  }
};

/// rand_uniform: the interpreter's counter-based generator (splitmix64 of
/// seed and row-major index, top 53 bits / 2^53), element by element.
struct RandUniformLowering : OpRewritePattern<tg::RandUniformOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::RandUniformOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType out = op.getType();
    uint64_t seed = static_cast<uint64_t>(op.getSeed());
    Value result = elementwise(
        rewriter, op.getLoc(), out, ValueRange{},
        [&](OpBuilder &b, Location loc, ValueRange) -> Value {
          Type i64 = b.getI64Type();
          auto c = [&](uint64_t v) -> Value {
            return arith::ConstantOp::create(
                b, loc, b.getIntegerAttr(i64, static_cast<int64_t>(v)));
          };
          // Row-major linear index.
          Value linear = c(0);
          for (int64_t d = 0; d < out.getRank(); ++d) {
            Value i = arith::IndexCastOp::create(
                b, loc, i64, linalg::IndexOp::create(b, loc, d));
            linear = arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, linear,
                                              c(out.getDimSize(d))),
                i);
          }
          auto mix = [&](Value z, unsigned shift, uint64_t mul) -> Value {
            Value s = arith::ShRUIOp::create(b, loc, z, c(shift));
            Value x = arith::XOrIOp::create(b, loc, z, s);
            return mul ? arith::MulIOp::create(b, loc, x, c(mul)).getResult()
                       : x;
          };
          Value z = arith::AddIOp::create(
              b, loc, arith::AddIOp::create(b, loc,
                                            c(seed * 0x9E3779B97F4A7C15ULL),
                                            linear),
              c(1));
          z = mix(z, 30, 0xBF58476D1CE4E5B9ULL);
          z = mix(z, 27, 0x94D049BB133111EBULL);
          z = mix(z, 31, 0);
          Value top = arith::ShRUIOp::create(b, loc, z, c(11));
          Value asFloat = arith::UIToFPOp::create(b, loc, b.getF64Type(), top);
          Value scale = arith::ConstantOp::create(
              b, loc, b.getF64FloatAttr(0x1.0p-53));
          return convertScalar(b, loc,
                               arith::MulFOp::create(b, loc, asFloat, scale),
                               out.getElementType());
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConvertTgToLinalgPass
    : spmdc::impl::ConvertTgToLinalgBase<ConvertTgToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, func::FuncDialect>();
    // Collectives need the runtime's calls, which this pass does not make.
    target.addIllegalDialect<tg::TensorGraphDialect, dist::DistDialect>();
    RewritePatternSet patterns(ctx);
    patterns.add<ElementwiseLowering, ReductionLowering<tg::SumOp>,
                 ReductionLowering<tg::MaxOp>, MatmulLowering, ReshapeLowering,
                 TransposeLowering, BroadcastLowering, SliceLowering,
                 ConcatLowering, IotaLowering, FullLowering, ConstantLowering,
                 EmbeddingLowering, GatherLowering, ScatterAddLowering,
                 EmbeddingBackwardLowering, RandUniformLowering>(ctx);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
