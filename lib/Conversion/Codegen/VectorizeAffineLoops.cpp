//===- VectorizeAffineLoops.cpp - SIMD for the CPU's affine loops ---------===//
//
// --vectorize-affine-loops: MLIR's affine super-vectorizer on the parallel
// and reduction loops whose accesses all use identity layouts.
//
// - Reductions: linalg's loops accumulate in memory (`C[i] = C[i] + A[i,
//   k]` in the loop over k), which the vectorizer does not recognise. An
//   innermost loop whose only access to an allocated buffer is one load and
//   one store at indices that do not depend on it carries the value in a
//   register instead (load before, iter_args, store after), and then
//   vectorizes as a reduction: 8 partial sums, added at the end.
// - The vectorizer handles only identity layouts, and reports every
//   candidate loop that touches another layout (a slice of a tensor, such
//   as the rotary embedding's halves) as an error ("NYI: non-trivial layout
//   map") while leaving it scalar and succeeding: a successful compile
//   printed errors. Such loops are not offered to it.
// - Loops shorter than a vector (a `4x16x1` result's last dim) stay
//   scalar: vectorized, they are all masked lanes.
// - Elementwise loops are shown parallel by a quick test of their access
//   maps before MLIR's dependence analysis, which was half the pass's time.
//
//===----------------------------------------------------------------------===//

#include "BufferOrigins.h"
#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/Affine/Analysis/AffineAnalysis.h"
#include "mlir/Dialect/Affine/Analysis/LoopAnalysis.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/MapVector.h"

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

/// In an innermost `loop` with no results: the one load and one store of an
/// allocated buffer (spmdc::allocatedBuffer) that nothing else in the loop
/// reads or writes, at the same loop-invariant indices, the store's value
/// computed from the load's (a reduction through memory); null if there is
/// none.
std::pair<affine::AffineLoadOp, affine::AffineStoreOp>
memoryCarriedReduction(affine::AffineForOp loop) {
  if (loop.getNumResults() != 0 ||
      !loop.getBody()->getOps<affine::AffineForOp>().empty())
    return {};
  // Per allocated buffer, the accesses to it in the loop.
  llvm::MapVector<Value, SmallVector<Operation *>> accesses;
  bool unknownEffects = false;
  for (Operation &op : loop.getBody()->without_terminator()) {
    Value memref;
    if (auto load = dyn_cast<affine::AffineLoadOp>(op))
      memref = load.getMemRef();
    else if (auto store = dyn_cast<affine::AffineStoreOp>(op))
      memref = store.getMemRef();
    else if (!isMemoryEffectFree(&op))
      unknownEffects = true;
    if (!memref)
      continue;
    accesses[spmdc::allocatedBuffer(memref)].push_back(&op);
  }
  if (unknownEffects)
    return {};
  for (auto &[buffer, ops] : accesses) {
    if (!buffer || ops.size() != 2)
      continue;
    auto load = dyn_cast<affine::AffineLoadOp>(ops[0]);
    auto store = dyn_cast<affine::AffineStoreOp>(ops[1]);
    if (!load || !store || load.getMemRef() != store.getMemRef() ||
        load.getAffineMap() != store.getAffineMap() ||
        load.getMapOperands() != store.getMapOperands() ||
        llvm::is_contained(load.getMapOperands(), loop.getInductionVar()))
      continue;
    bool invariant = llvm::all_of(load.getMapOperands(), [&](Value index) {
      return !loop->isAncestor(index.getParentBlock()->getParentOp());
    });
    if (invariant)
      return {load, store};
  }
  return {};
}

/// Carries `load`'s value through `loop` in a register: loaded before,
/// passed through iter_args, stored after.
void carryInRegister(affine::AffineForOp loop, affine::AffineLoadOp load,
                     affine::AffineStoreOp store) {
  OpBuilder b(loop);
  auto initial =
      affine::AffineLoadOp::create(b, load.getLoc(), load.getMemRef(),
                                   load.getAffineMap(), load.getMapOperands());
  IRRewriter rewriter(loop.getContext());
  FailureOr<LoopLikeOpInterface> carried = loop.replaceWithAdditionalYields(
      rewriter, initial.getResult(), /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
        return SmallVector<Value>{store.getValue()};
      });
  auto newLoop = cast<affine::AffineForOp>(carried->getOperation());
  Value accumulator = newLoop.getRegionIterArgs().back();
  load.getResult().replaceAllUsesWith(accumulator);
  b.setInsertionPointAfter(newLoop);
  affine::AffineStoreOp::create(b, store.getLoc(), newLoop.getResults().back(),
                                store.getMemRef(), store.getAffineMap(),
                                store.getMapOperands());
  store.erase();
  load.erase();
}

/// True if `loop` has a constant trip count below `lanes`.
bool shorterThan(affine::AffineForOp loop, int64_t lanes) {
  std::optional<uint64_t> trips = affine::getConstantTripCount(loop);
  return trips && *trips < static_cast<uint64_t>(lanes);
}

/// True if the 1-D `transfer` on its memref's last dim reads or writes
/// whole vectors only: its index there is a constant, or the induction
/// variable of a loop stepping by the vector's length from a constant to a
/// constant that many vectors later, and the last vector ends within the
/// dim. The vectorizer leaves every transfer possibly out of bounds, which
/// lowers to masked loads and stores with a mask computed per iteration.
bool wholeVectorsOnly(VectorTransferOpInterface transfer) {
  auto memref = dyn_cast<MemRefType>(transfer.getShapedType());
  VectorType vector = transfer.getVectorType();
  // An i1 buffer holds a byte per element, but an in-bounds vector<8xi1>
  // load reads 8 bits of one byte: only the masked form (which LLVM
  // scalarizes) reads i1 elements right.
  if (!memref || !memref.hasStaticShape() || vector.getRank() != 1 ||
      !transfer.getPermutationMap().isMinorIdentity() ||
      vector.getElementTypeBitWidth() % 8 != 0)
    return false;
  int64_t lanes = vector.getDimSize(0);
  int64_t size = memref.getShape().back();
  Value index = transfer.getIndices().back();
  if (std::optional<int64_t> c = getConstantIntValue(index))
    return *c >= 0 && *c + lanes <= size;
  affine::AffineForOp loop = affine::getForInductionVarOwner(index);
  if (!loop || !loop.hasConstantBounds() || loop.getStepAsInt() != lanes)
    return false;
  int64_t lower = loop.getConstantLowerBound();
  int64_t upper = loop.getConstantUpperBound();
  return lower >= 0 && (upper - lower) % lanes == 0 && upper <= size;
}

/// True if `loop` is parallel by a test far cheaper than MLIR's dependence
/// analysis (`affine::isLoopParallel`, which solves a Presburger problem
/// for every pair of accesses to one memref at every loop depth, and was
/// half of this pass's time): the loop has no iter_args, nothing in it has
/// memory effects but affine loads and stores, and every store meets only
/// accesses of its memref with the same map and operands, one of whose
/// results is the loop's induction variable alone. Two iterations of the
/// loop then touch different elements. False when it cannot tell.
bool obviouslyParallel(affine::AffineForOp loop) {
  if (loop.getNumIterOperands() != 0)
    return false;
  llvm::SmallDenseMap<Value, SmallVector<Operation *, 4>> accessesOf;
  llvm::SmallDenseSet<Value> written;
  WalkResult walk = loop.walk([&](Operation *op) {
    if (auto read = dyn_cast<affine::AffineLoadOp>(op)) {
      accessesOf[read.getMemRef()].push_back(op);
    } else if (auto write = dyn_cast<affine::AffineStoreOp>(op)) {
      accessesOf[write.getMemRef()].push_back(op);
      written.insert(write.getMemRef());
    } else if (!isa<affine::AffineForOp, affine::AffineYieldOp>(op) &&
               !isMemoryEffectFree(op)) {
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return false;
  Value iv = loop.getInductionVar();
  auto mapOf = [](Operation *op) {
    if (auto read = dyn_cast<affine::AffineLoadOp>(op))
      return std::pair{read.getAffineMap(), read.getMapOperands()};
    auto write = cast<affine::AffineStoreOp>(op);
    return std::pair{write.getAffineMap(), write.getMapOperands()};
  };
  for (Value memref : written) {
    ArrayRef<Operation *> accesses = accessesOf[memref];
    auto [map, operands] = mapOf(accesses.front());
    auto indexedByLoop = [&, &operands = operands](AffineExpr result) {
      auto dim = dyn_cast<AffineDimExpr>(result);
      return dim && operands[dim.getPosition()] == iv;
    };
    if (!llvm::any_of(map.getResults(), indexedByLoop))
      return false;
    for (Operation *op : accesses.drop_front()) {
      auto [otherMap, otherOperands] = mapOf(op);
      if (otherMap != map || otherOperands != operands)
        return false;
    }
  }
  return true;
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
    int64_t lanes = vectorSize;
    SmallVector<std::tuple<affine::AffineForOp, affine::AffineLoadOp,
                           affine::AffineStoreOp>>
        reductions;
    getOperation().walk([&](affine::AffineForOp loop) {
      auto [load, store] = memoryCarriedReduction(loop);
      if (load && !shorterThan(loop, lanes))
        reductions.emplace_back(loop, load, store);
    });
    for (auto [loop, load, store] : reductions)
      carryInRegister(loop, load, store);

    llvm::DenseSet<Operation *> candidates;
    affine::ReductionLoopMap reductionLoops;
    getOperation().walk([&](affine::AffineForOp loop) {
      if (shorterThan(loop, lanes) || !accessesIdentityLayoutsOnly(loop))
        return;
      SmallVector<affine::LoopReduction, 2> loopReductions;
      if (!obviouslyParallel(loop) &&
          !affine::isLoopParallel(loop, &loopReductions))
        return;
      candidates.insert(loop);
      if (!loopReductions.empty())
        reductionLoops[loop] = loopReductions;
    });
    // The innermost dim, the one whose accesses are contiguous, is the one
    // vectorized (the pass's test-fastest-varying=0).
    affine::vectorizeAffineLoops(getOperation(), candidates, {lanes}, {0},
                                 reductionLoops);
    getOperation().walk([](VectorTransferOpInterface transfer) {
      if (wholeVectorsOnly(transfer))
        transfer->setAttr(
            transfer.getInBoundsAttrName(),
            Builder(transfer->getContext()).getBoolArrayAttr({true}));
    });
  }
};

} // namespace
