//===- Elementwise.cpp - elementwise tg ops into linalg -------------------===//
//
// Every op with the Elementwise trait (unary, binary, compare, select,
// convert) as one linalg.generic whose indexing maps state the NumPy
// broadcast, so that elementwise fusion sees through it.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "spmdc/Conversion/TensorGraphToLinalg/TensorGraphToLinalg.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace spmdc;
using namespace spmdc::tg_to_linalg;
using tg::typeOf;

namespace {

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
      .Case([&](tg::FloorOp) -> Value { return math::FloorOp::create(b, loc, x[0]); })
      .Case([&](tg::CeilOp) -> Value { return math::CeilOp::create(b, loc, x[0]); })
      .Case([&](tg::TruncOp) -> Value { return math::TruncOp::create(b, loc, x[0]); })
      .Case([&](tg::RoundOp) -> Value {
        return math::RoundEvenOp::create(b, loc, x[0]);
      })
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
      .Case([&](tg::RemOp) -> Value {
        return f ? arith::RemFOp::create(b, loc, x[0], x[1]).getResult()
                 : arith::RemSIOp::create(b, loc, x[0], x[1]).getResult();
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

} // namespace

void spmdc::populateTgElementwiseToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<ElementwiseLowering>(patterns.getContext());
}
