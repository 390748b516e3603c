//===- MarkDonatedArguments.cpp - which inputs the step may overwrite -----===//
//
// --mark-donated-arguments: spmd-run feeds a parameter or optimizer state
// the step returns under its argument's name back as the next step's
// argument, so the old value is dead once the step has read it and its
// buffer may take the update (JAX's donate_argnums, read off the
// signature). Every other input of an entry point must come back
// unchanged: a data batch the runner keeps from step to step, or @eval's
// arguments, which are the step's own buffers.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

namespace spmdc {
#define GEN_PASS_DEF_MARKDONATEDARGUMENTS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;
using namespace spmdc;

namespace {

/// The result of `fn` that comes back as argument `index`, on the same
/// ranks in the same type (else spmd-run refuses the module), if any.
std::optional<unsigned> fedBackFrom(func::FuncOp fn, unsigned index,
                                    ArrayRef<tg::GraphValueInfo> arguments,
                                    ArrayRef<tg::GraphValueInfo> results) {
  Attribute sharding = fn.getArgAttr(index, dist::kShardingAttr);
  for (auto [r, result] : llvm::enumerate(results))
    if (tg::feedsBack(result, arguments[index]) &&
        fn.getResultTypes()[r] == fn.getArgument(index).getType() &&
        fn.getResultAttr(r, dist::kShardingAttr) == sharding)
      return r;
  return std::nullopt;
}

struct MarkDonatedArgumentsPass
    : spmdc::impl::MarkDonatedArgumentsBase<MarkDonatedArgumentsPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isPrivate() || fn.isExternal())
        continue;
      std::vector<tg::GraphValueInfo> arguments = tg::getArgumentInfos(fn);
      std::vector<tg::GraphValueInfo> results = tg::getResultInfos(fn);
      for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
        if (!isa<TensorType>(fn.getArgument(i).getType()))
          continue;
        std::optional<unsigned> from = fedBackFrom(fn, i, arguments, results);
        fn.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                      BoolAttr::get(context, from.has_value()));
        // The result it comes back as: --results-in-donated-buffers may
        // make that result in this argument's buffer.
        if (from)
          fn.setArgAttr(i, kDonatedAttr,
                        IntegerAttr::get(IntegerType::get(context, 64), *from));
      }
    }
  }
};

} // namespace
