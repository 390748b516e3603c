//===- PrepareLinalgForGpu.cpp - bufferized linalg made kernel-ready ------===//
//
// --prepare-linalg-for-gpu: on the CUDA path every buffer the step
// allocates is device-reachable managed memory, but constant globals live
// in host memory and memref.copy lowers to a host loop. This pass stages
// globals into fresh buffers, turns copies into linalg.copy (a kernel
// later) and puts each linalg.generic's parallel loops first, so that the
// loop nests `--form-gpu-kernels` maps are parallel outside, sequential
// inside.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace spmdc {
#define GEN_PASS_DEF_PREPARELINALGFORGPU
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

/// The interchange vector that puts a generic's parallel loops first, in
/// their order, then the others; empty when they already are.
SmallVector<unsigned> parallelFirst(linalg::GenericOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < iterators.size(); ++i)
    if (iterators[i] == utils::IteratorType::parallel)
      order.push_back(i);
  for (unsigned i = 0; i < iterators.size(); ++i)
    if (iterators[i] != utils::IteratorType::parallel)
      order.push_back(i);
  if (llvm::equal(order, llvm::seq<unsigned>(0, iterators.size())))
    return {};
  return order;
}

struct PrepareLinalgForGpuPass
    : spmdc::impl::PrepareLinalgForGpuBase<PrepareLinalgForGpuPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    IRRewriter rewriter(module.getContext());

    // Copies between the step's buffers: device loops. Done before the
    // globals below add the host copies that must stay host copies.
    SmallVector<memref::CopyOp> copies;
    module.walk([&](memref::CopyOp op) { copies.push_back(op); });
    for (memref::CopyOp op : copies) {
      rewriter.setInsertionPoint(op);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(op, op.getSource(),
                                                  op.getTarget());
    }

    // Constant globals: a fresh buffer per use, filled by the host.
    SmallVector<memref::GetGlobalOp> globals;
    module.walk([&](memref::GetGlobalOp op) { globals.push_back(op); });
    for (memref::GetGlobalOp op : globals) {
      rewriter.setInsertionPointAfter(op);
      auto staged =
          memref::AllocOp::create(rewriter, op.getLoc(), op.getType());
      op.getResult().replaceAllUsesWith(staged);
      memref::CopyOp::create(rewriter, op.getLoc(), op.getResult(), staged);
    }

    SmallVector<linalg::GenericOp> generics;
    module.walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics) {
      SmallVector<unsigned> order = parallelFirst(op);
      if (order.empty())
        continue;
      rewriter.setInsertionPoint(op);
      if (failed(linalg::interchangeGenericOp(rewriter, op, order))) {
        op.emitError("cannot put this op's parallel loops first");
        return signalPassFailure();
      }
    }
  }
};

} // namespace
