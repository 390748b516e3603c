//===- ReturnDonatedArguments.cpp - an entry point returns its own buffer -===//
//
// --return-donated-arguments: ownership-based deallocation makes an entry
// point return a clone of an argument it returns (its results are the
// caller's to free). Where the argument is donated
// (--mark-donated-arguments), its buffer holds the update already and is
// the caller's again: spmd-run adopts a result that is an argument's
// buffer as that argument. So the clone goes, and with it a copy of every
// parameter and moment in every step. The donation marks go too.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

namespace spmdc {
#define GEN_PASS_DEF_RETURNDONATEDARGUMENTS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

/// Whether `clone` is only returned, and kept alive (retained) by the
/// deallocations that list it.
bool isOnlyReturned(bufferization::CloneOp clone) {
  return llvm::all_of(clone->getUsers(), [&](Operation *user) {
    auto dealloc = dyn_cast<bufferization::DeallocOp>(user);
    return isa<func::ReturnOp>(user) ||
           (dealloc &&
            llvm::is_contained(dealloc.getRetained(), clone.getOutput()));
  });
}

/// Takes `clone` off the lists of buffers `dealloc` may free (it retains
/// it: nothing is freed).
void unlist(bufferization::DeallocOp dealloc, Value clone) {
  SmallVector<Value> memrefs, conditions;
  for (auto [memref, condition] :
       llvm::zip(dealloc.getMemrefs(), dealloc.getConditions()))
    if (memref != clone) {
      memrefs.push_back(memref);
      conditions.push_back(condition);
    }
  dealloc.getMemrefsMutable().assign(memrefs);
  dealloc.getConditionsMutable().assign(conditions);
}

struct ReturnDonatedArgumentsPass
    : spmdc::impl::ReturnDonatedArgumentsBase<ReturnDonatedArgumentsPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      SmallVector<bufferization::CloneOp> returned;
      fn.walk([&](bufferization::CloneOp clone) {
        auto arg = dyn_cast<BlockArgument>(clone.getInput());
        if (arg && arg.getOwner() == &fn.getBody().front() &&
            fn.getArgAttr(arg.getArgNumber(), spmdc::kDonatedAttr) &&
            clone.getInput().getType() == clone.getType() &&
            isOnlyReturned(clone))
          returned.push_back(clone);
      });
      for (bufferization::CloneOp clone : returned) {
        for (Operation *user : llvm::to_vector(clone->getUsers()))
          if (auto dealloc = dyn_cast<bufferization::DeallocOp>(user))
            unlist(dealloc, clone);
        clone.replaceAllUsesWith(clone.getInput());
        clone.erase();
      }
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        fn.removeArgAttr(i, spmdc::kDonatedAttr);
    }
  }
};

} // namespace
