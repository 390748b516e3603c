//===- MixedPrecision.cpp - f32 matmuls computed in bf16 ------------------===//
//
// --tg-mixed-precision: autocast's rule for bf16 on the per-rank program.
// Matmuls read and produce bf16 (the GEMM accumulates in f32); all other
// ops, the weights and the optimizer stay f32. An operand is converted
// beneath its transposes, which the GEMM reads in place.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace spmdc::tg {
#define GEN_PASS_DEF_TGMIXEDPRECISION
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h.inc"
} // namespace spmdc::tg

using namespace mlir;
using namespace spmdc::tg;

namespace {

Value convertTo(OpBuilder &b, Location loc, Value value, Type element) {
  auto type = cast<RankedTensorType>(value.getType());
  return ConvertOp::create(b, loc, type.clone(element), value);
}

/// A matmul operand in `element`, converted beneath the transposes of its
/// last two dims: the GEMM still reads the converted value transposed in
/// place (--convert-tg-matmul-to-blas), and the conversion reads and
/// writes contiguously, where converting the transpose would first copy
/// the f32 value transposed.
Value convertOperand(OpBuilder &b, Location loc, Value value, Type element) {
  auto [source, transposed] = peelTransposes(value);
  Value converted = convertTo(b, loc, source, element);
  return transposed ? transposeLastTwo(b, loc, converted) : converted;
}

struct TgMixedPrecisionPass
    : spmdc::tg::impl::TgMixedPrecisionBase<TgMixedPrecisionPass> {
  void runOnOperation() override {
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp op) {
      if (op.getType().getElementType().isF32())
        matmuls.push_back(op);
    });
    OpBuilder b(&getContext());
    Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
    for (MatmulOp op : matmuls) {
      b.setInsertionPoint(op);
      Location loc = op.getLoc();
      Value lhs = op.getLhs(), rhs = op.getRhs();
      Value product =
          MatmulOp::create(b, loc, convertOperand(b, loc, lhs, bf16),
                           convertOperand(b, loc, rhs, bf16));
      op.getResult().replaceAllUsesWith(convertTo(b, loc, product, f32));
      op.erase();
      eraseDeadTransposes({lhs, rhs});
    }
  }
};

} // namespace
