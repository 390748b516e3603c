//===- OverwriteDeadInputs.cpp - elementwise results over dead inputs -----===//
//
// --overwrite-dead-inputs: an elementwise linalg.generic that writes a
// result into a fresh tensor (tensor.empty) writes it over an input of the
// same type and indexing instead, where nothing reads that input after the
// op and the input's buffer is fresh too (BufferOrigins::isFresh), a
// donated argument before an intermediate, each input for one result. One-shot
// bufferization then updates that buffer in place: the op stores to cache
// lines it has just read instead of fetching lines of a new buffer only to
// overwrite them, and the step holds one buffer fewer.
//
// Arguments of private functions are left to --overwrite-donated-buffers,
// after bufferization: one-shot bufferization's analysis of a call whose
// results share its operands' buffers grows with the square of their
// number (8 s on GPT-2 small's backward call, against 0.7 s).
//
//===----------------------------------------------------------------------===//

#include "BufferOrigins.h"

#include "spmdc/Conversion/Passes.h"

namespace spmdc {
#define GEN_PASS_DEF_OVERWRITEDEADINPUTS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

struct OverwriteDeadInputsPass
    : spmdc::impl::OverwriteDeadInputsBase<OverwriteDeadInputsPass> {
  void runOnOperation() override {
    spmdc::BufferOrigins origins(getOperation());
    getOperation().walk([&](linalg::GenericOp generic) {
      if (!generic.hasPureTensorSemantics())
        return;
      llvm::SmallPtrSet<Value, 4> taken;
      for (OpOperand &init : generic.getDpsInitsMutable()) {
        if (!init.get().getDefiningOp<tensor::EmptyOp>() ||
            !spmdc::isElementwiseResult(generic, init))
          continue;
        AffineMap map = generic.getMatchingIndexingMap(&init);
        auto overwritable = [&](Value v) {
          return !taken.contains(v) && v.getType() == init.get().getType() &&
                 spmdc::readsOnlyAt(generic, v, map) &&
                 origins.diesAt(v, generic) && origins.isFresh(v);
        };
        // A donated argument first: the caller holds its buffer for the
        // whole step, so a result written elsewhere (AdamW's v over the
        // gradient) holds a second buffer until the step returns.
        Value chosen;
        for (bool argument : {true, false}) {
          for (OpOperand *input : generic.getDpsInputOperands())
            if (isa<BlockArgument>(input->get()) == argument &&
                overwritable(input->get())) {
              chosen = input->get();
              break;
            }
          if (chosen)
            break;
        }
        if (chosen) {
          init.set(chosen);
          taken.insert(chosen);
        }
      }
    });
  }
};

} // namespace
