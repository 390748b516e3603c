//===- BranchlessConditionalFrees.cpp - free(select) for owned buffers ----===//
//
// --branchless-conditional-frees: the ownership-based deallocation frees a
// buffer only where it owns it, one branch around each `free` call. In a
// step's glue that is thousands of tiny blocks (1,985 in GPT-2 small's
// backward), and LLVM's register allocator then spends seconds splitting
// live ranges over them. free(NULL) does nothing, so the branch becomes a
// select of the pointer, and the blocks it split join again.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace spmdc {
#define GEN_PASS_DEF_BRANCHLESSCONDITIONALFREES
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

/// The pointer `block` frees when it is `{ llvm.call @free(%p); llvm.br
/// ^next }` reached only from `from`, with `next` the branch's target.
Value freedPointer(Block *block, Block *from, Block *next) {
  if (block->getSinglePredecessor() != from || block->getNumArguments() != 0 ||
      !llvm::hasSingleElement(block->without_terminator()))
    return nullptr;
  auto call = dyn_cast<LLVM::CallOp>(block->front());
  auto branch = dyn_cast<LLVM::BrOp>(block->getTerminator());
  if (!call || !branch || branch.getDest() != next ||
      !branch.getDestOperands().empty() || call.getNumResults() != 0 ||
      call.getCallee() != StringRef("free") || call.getArgOperands().size() != 1)
    return nullptr;
  return call.getArgOperands()[0];
}

struct BranchlessConditionalFreesPass
    : spmdc::impl::BranchlessConditionalFreesBase<
          BranchlessConditionalFreesPass> {
  void runOnOperation() override {
    getOperation().walk([](LLVM::LLVMFuncOp function) {
      SmallVector<LLVM::CondBrOp> branches;
      function.walk([&](LLVM::CondBrOp b) { branches.push_back(b); });
      for (LLVM::CondBrOp branch : branches) {
        Block *from = branch->getBlock();
        Block *freeing = branch.getTrueDest();
        Block *next = branch.getFalseDest();
        if (!branch.getTrueDestOperands().empty() ||
            !branch.getFalseDestOperands().empty())
          continue;
        Value pointer = freedPointer(freeing, from, next);
        if (!pointer)
          continue;
        OpBuilder b(branch);
        Location loc = branch.getLoc();
        Value null = LLVM::ZeroOp::create(b, loc, pointer.getType());
        Value freed =
            LLVM::SelectOp::create(b, loc, branch.getCondition(), pointer, null);
        auto call = cast<LLVM::CallOp>(freeing->front());
        call->moveBefore(branch);
        call->setOperand(0, freed);
        branch.erase();
        freeing->erase();
        // `next` followed `from` alone: one block again.
        if (next->hasNoPredecessors() && next->getNumArguments() == 0) {
          from->getOperations().splice(from->end(), next->getOperations());
          next->erase();
        } else {
          b.setInsertionPointToEnd(from);
          LLVM::BrOp::create(b, loc, ValueRange(), next);
        }
      }
    });
  }
};

} // namespace
