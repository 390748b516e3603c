//===- PrintCosts.cpp - each op's flops and bytes, readable (test pass) ---===//

#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace spmdc::tg {
#define GEN_PASS_DEF_TGPRINTCOSTS
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h.inc"
} // namespace spmdc::tg

using namespace mlir;
using namespace spmdc::tg;

namespace {
struct TgPrintCostsPass : spmdc::tg::impl::TgPrintCostsBase<TgPrintCostsPass> {
  void runOnOperation() override {
    getOperation().walk([](CostOpInterface op) {
      Builder b(op->getContext());
      op->setAttr("tg.cost",
                  b.getDictionaryAttr(
                      {b.getNamedAttr("flops", b.getI64IntegerAttr(op.getFlops())),
                       b.getNamedAttr("bytes", b.getI64IntegerAttr(
                                                   op.getBytesAccessed()))}));
    });
  }
};
} // namespace
