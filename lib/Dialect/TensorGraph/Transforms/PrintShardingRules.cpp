//===- PrintShardingRules.cpp - each op's rule, readable (test pass) ------===//

#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"

namespace spmdc::tg {
#define GEN_PASS_DEF_TGPRINTSHARDINGRULES
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h.inc"
} // namespace spmdc::tg

using namespace mlir;
using namespace spmdc::tg;

namespace {
struct TgPrintShardingRulesPass
    : spmdc::tg::impl::TgPrintShardingRulesBase<TgPrintShardingRulesPass> {
  void runOnOperation() override {
    getOperation().walk([](ShardingRuleOpInterface op) {
      op->setAttr("tg.sharding_rule",
                  op.getShardingRule().toAttr(op->getContext()));
    });
  }
};
} // namespace
