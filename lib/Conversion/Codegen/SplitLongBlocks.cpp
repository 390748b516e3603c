//===- SplitLongBlocks.cpp - bounded basic blocks for the JIT -------------===//
//
// --split-long-blocks: LLVM's instruction selection and scheduling work a
// block at a time and cost more than linear time in its length; a step's
// glue code is one very long block. Cutting it with unconditional branches
// keeps every block short without changing what runs.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

namespace spmdc {
#define GEN_PASS_DEF_SPLITLONGBLOCKS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

struct SplitLongBlocksPass
    : spmdc::impl::SplitLongBlocksBase<SplitLongBlocksPass> {
  using SplitLongBlocksBase::SplitLongBlocksBase;

  void runOnOperation() override {
    if (ops < 2) {
      getOperation().emitError("split-long-blocks: ops must be at least 2");
      return signalPassFailure();
    }
    getOperation().walk([&](LLVM::LLVMFuncOp function) {
      SmallVector<Block *> blocks;
      for (Block &block : function.getBody())
        blocks.push_back(&block);
      for (Block *block : blocks) {
        // Cut points every `ops - 1` operations, cut from the last one
        // back, so each split moves one short tail (linear in all).
        SmallVector<Operation *> cuts;
        int64_t position = 0;
        for (Operation &op : *block)
          if (++position % (ops - 1) == 0 && &op != &block->back())
            cuts.push_back(op.getNextNode());
        for (Operation *cut : llvm::reverse(cuts)) {
          Block *rest = block->splitBlock(cut);
          OpBuilder b = OpBuilder::atBlockEnd(block);
          LLVM::BrOp::create(b, cut->getLoc(), ValueRange(), rest);
        }
      }
    });
  }
};

} // namespace
