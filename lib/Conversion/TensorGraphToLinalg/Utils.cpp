//===- Utils.cpp - helpers of the tg-to-linalg patterns -------------------===//
//
// Broadcasting linalg.generic ops, constants and scalar conversions.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace spmdc;
using namespace spmdc::tg_to_linalg;
using tg::typeOf;

namespace {

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

} // namespace

Value spmdc::tg_to_linalg::elementwise(OpBuilder &b, Location loc,
                                       RankedTensorType resultType,
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

Value spmdc::tg_to_linalg::constantLike(OpBuilder &b, Location loc, Type type,
                                        double value) {
  if (auto f = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(f, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

Value spmdc::tg_to_linalg::convertScalar(OpBuilder &b, Location loc, Value v,
                                         Type to) {
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
