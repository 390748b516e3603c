//===- Factories.cpp - tg factories into linalg ---------------------------===//
//
// Tensors made from nothing but attributes: iota, full, constant and
// rand_uniform (the interpreter's counter-based generator).
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

} // namespace

void spmdc::populateTgFactoryToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<IotaLowering, FullLowering, ConstantLowering,
               RandUniformLowering>(patterns.getContext());
}
