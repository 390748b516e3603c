//===- SplatConstantsToFills.cpp - large splat constants as fills ---------===//
//
// --splat-constants-to-fills: bufferized, a tensor constant is a global of
// its full size in the object file, copied into a fresh buffer wherever it
// is written. GPT-2 small's scatter loops start from zeros of the embedding
// table's and the logits' shapes: 258 MB of zeros in the module's native
// code, read at every start and copied at every step. A fill writes the
// buffer once and costs no bytes of code.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Support/Bytes.h"

namespace spmdc {
#define GEN_PASS_DEF_SPLATCONSTANTSTOFILLS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

struct SplatConstantsToFillsPass
    : spmdc::impl::SplatConstantsToFillsBase<SplatConstantsToFillsPass> {
  using SplatConstantsToFillsBase::SplatConstantsToFillsBase;

  void runOnOperation() override {
    SmallVector<arith::ConstantOp> large;
    getOperation().walk([&](arith::ConstantOp constant) {
      auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
      auto type = dyn_cast<RankedTensorType>(constant.getType());
      if (splat && type && type.getElementType().isIntOrFloat() &&
          spmdc::storageBytes(type) >= static_cast<int64_t>(minBytes))
        large.push_back(constant);
    });
    for (arith::ConstantOp constant : large) {
      OpBuilder b(constant);
      auto type = cast<RankedTensorType>(constant.getType());
      auto splat = cast<SplatElementsAttr>(constant.getValue());
      Value scalar = arith::ConstantOp::create(
          b, constant.getLoc(), cast<TypedAttr>(splat.getSplatValue<Attribute>()));
      Value empty = tensor::EmptyOp::create(b, constant.getLoc(),
                                            type.getShape(),
                                            type.getElementType());
      Value filled =
          linalg::FillOp::create(b, constant.getLoc(), scalar, empty)
              .getResult(0);
      constant.replaceAllUsesWith(filled);
      constant.erase();
    }
  }
};

} // namespace
