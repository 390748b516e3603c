//===- VectorizeAffineLoops.cpp - SIMD for the CPU's affine loops ---------===//
//
// --vectorize-affine-loops: MLIR's affine super-vectorizer on the parallel
// loops whose accesses all use identity layouts. The vectorizer handles only
// those, and reports every candidate loop that touches another layout (a
// slice of a tensor, such as the rotary embedding's halves) as an error
// ("NYI: non-trivial layout map") while leaving it scalar and succeeding:
// a successful compile printed errors. Choosing the candidates here keeps
// its behaviour and drops the noise.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/Affine/Analysis/AffineAnalysis.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace spmdc {
#define GEN_PASS_DEF_VECTORIZEAFFINELOOPS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

/// True if every affine load and store in `loop` uses an identity layout.
bool accessesIdentityLayoutsOnly(affine::AffineForOp loop) {
  WalkResult walk = loop.walk([](Operation *op) {
    MemRefType type;
    if (auto read = dyn_cast<affine::AffineReadOpInterface>(op))
      type = read.getMemRefType();
    else if (auto write = dyn_cast<affine::AffineWriteOpInterface>(op))
      type = write.getMemRefType();
    return type && !type.getLayout().isIdentity() ? WalkResult::interrupt()
                                                  : WalkResult::advance();
  });
  return !walk.wasInterrupted();
}

struct VectorizeAffineLoopsPass
    : spmdc::impl::VectorizeAffineLoopsBase<VectorizeAffineLoopsPass> {
  using VectorizeAffineLoopsBase::VectorizeAffineLoopsBase;

  void runOnOperation() override {
    if (vectorSize < 2) {
      getOperation().emitError("vectorize-affine-loops: vector-size must be at "
                               "least 2, not ")
          << static_cast<int64_t>(vectorSize);
      return signalPassFailure();
    }
    llvm::DenseSet<Operation *> candidates;
    getOperation().walk([&](affine::AffineForOp loop) {
      if (affine::isLoopParallel(loop) && accessesIdentityLayoutsOnly(loop))
        candidates.insert(loop);
    });
    // The innermost dim, the one whose accesses are contiguous, is the one
    // vectorized (the pass's test-fastest-varying=0).
    affine::vectorizeAffineLoops(getOperation(), candidates,
                                 {static_cast<int64_t>(vectorSize)}, {0});
  }
};

} // namespace
