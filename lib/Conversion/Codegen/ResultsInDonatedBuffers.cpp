//===- ResultsInDonatedBuffers.cpp - results made where their inputs lay --===//
//
// --results-in-donated-buffers: spmd-run feeds each parameter and state the
// step returns back as the next step's argument, and adopts a result that
// is the argument's own buffer as that argument. An entry point's result
// that the step builds in a fresh buffer (ZeRO-1's all-gather of the
// updated shards) can be built in the argument's buffer instead, once the
// step has done with the old value: the step then holds one copy of the
// parameters, not two (XLA's input/output aliasing of donated buffers).
//
//===----------------------------------------------------------------------===//

#include "BufferOrigins.h"

#include "spmdc/Conversion/Passes.h"

namespace spmdc {
#define GEN_PASS_DEF_RESULTSINDONATEDBUFFERS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

/// The donated arguments of `fn` by the result each comes back as.
llvm::DenseMap<int64_t, BlockArgument> donatedByResult(func::FuncOp fn) {
  llvm::DenseMap<int64_t, BlockArgument> byResult;
  for (BlockArgument arg : fn.getArguments())
    if (auto from = fn.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                     spmdc::kDonatedAttr))
      byResult[from.getInt()] = arg;
  return byResult;
}

/// Whether `alloc` can be `arg`'s buffer: nothing uses `arg`, or a value
/// that may share its buffer (what a call returns of it included), from
/// the first op that touches `alloc`'s memory on, nor returns it.
bool canTakeOver(memref::AllocOp alloc, BlockArgument arg,
                 spmdc::BufferOrigins &origins) {
  Block *block = alloc->getBlock();
  if (alloc.getType() != arg.getType() || arg.getOwner() != block)
    return false;
  Operation *first =
      spmdc::spanOf(alloc.getResult(), block, {}, /*viewsAreUses=*/false)
          .first;
  if (!first)
    return false;
  Operation *before = first->getPrevNode();
  return before ? origins.diesAt(arg, before) : arg.use_empty();
}

struct ResultsInDonatedBuffersPass
    : spmdc::impl::ResultsInDonatedBuffersBase<ResultsInDonatedBuffersPass> {
  void runOnOperation() override {
    spmdc::BufferOrigins origins(getOperation());
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isPrivate() || fn.isExternal())
        continue;
      auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
      llvm::DenseMap<int64_t, BlockArgument> donated = donatedByResult(fn);
      for (auto [r, result] : llvm::enumerate(ret.getOperands())) {
        auto alloc = result.getDefiningOp<memref::AllocOp>();
        BlockArgument arg = alloc ? donated.lookup(r) : nullptr;
        // Returned twice, the buffer would be two arguments at once.
        if (!arg || llvm::count(ret.getOperands(), result) != 1 ||
            !canTakeOver(alloc, arg, origins))
          continue;
        alloc.getResult().replaceAllUsesWith(arg);
        alloc.erase();
      }
    }
  }
};

} // namespace
