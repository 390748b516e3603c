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
      SmallVector<Block *> work;
      for (Block &block : function.getBody())
        work.push_back(&block);
      while (!work.empty()) {
        Block *block = work.pop_back_val();
        if (static_cast<int64_t>(block->getOperations().size()) <= ops)
          continue;
        // Cut before the op at position `ops - 1`, so the branch makes
        // this block `ops` long; the rest is cut in turn.
        Operation *cut = &*std::next(block->begin(), ops - 1);
        Block *rest = block->splitBlock(cut);
        OpBuilder b = OpBuilder::atBlockEnd(block);
        LLVM::BrOp::create(b, cut->getLoc(), ValueRange(), rest);
        work.push_back(rest);
      }
    });
  }
};

} // namespace
