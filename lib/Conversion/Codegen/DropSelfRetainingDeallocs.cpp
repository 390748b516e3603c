//===- DropSelfRetainingDeallocs.cpp - deallocs that free nothing ---------===//
//
// --drop-self-retaining-deallocs: ownership-based deallocation threads an
// ownership flag through every loop that writes a buffer in place (a
// scatter) and puts `bufferization.dealloc (%m) if (%c) retain (%m)` in its
// body. Retaining the one buffer it would free, such an op frees nothing,
// and the ownership it returns for %m is %c. Replacing it by %c lets
// canonicalization drop the flag from the loop, which --form-gpu-kernels
// can then make a kernel. MLIR's buffer-deallocation-simplification does
// this and much more, but with alias analysis that took four minutes on
// GPT-2 small.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

namespace spmdc {
#define GEN_PASS_DEF_DROPSELFRETAININGDEALLOCS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

struct DropSelfRetainingDeallocsPass
    : spmdc::impl::DropSelfRetainingDeallocsBase<
          DropSelfRetainingDeallocsPass> {
  void runOnOperation() override {
    SmallVector<bufferization::DeallocOp> dropped;
    getOperation().walk([&](bufferization::DeallocOp dealloc) {
      if (dealloc.getMemrefs().size() == 1 &&
          dealloc.getRetained().size() == 1 &&
          dealloc.getMemrefs()[0] == dealloc.getRetained()[0])
        dropped.push_back(dealloc);
    });
    for (bufferization::DeallocOp dealloc : dropped) {
      dealloc.getUpdatedConditions()[0].replaceAllUsesWith(
          dealloc.getConditions()[0]);
      dealloc.erase();
    }
  }
};

} // namespace
