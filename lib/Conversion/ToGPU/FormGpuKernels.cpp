//===- FormGpuKernels.cpp - loop nests to GPU blocks and threads ----------===//
//
// --form-gpu-kernels: after --convert-linalg-to-parallel-loops each step
// function is a sequence of top-level loop nests over buffers. This pass
// fuses neighbouring nests that work row by row (softmax's max, sum and
// divide; layer_norm's mean, variance and normalise) into one loop over
// rows, then gives every nest the two-level block/thread form that
// --convert-parallel-loops-to-gpu turns into one gpu.launch each.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace spmdc {
#define GEN_PASS_DEF_FORMGPUKERNELS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

//===----------------------------------------------------------------------===//
// What a loop nest reads and writes
//===----------------------------------------------------------------------===//

/// One load or store in a loop nest.
struct Access {
  Value memref;
  Value root; // the allocation or argument the memref views
  ValueRange indices;
  bool write;
};

Value rootOf(Value memref) {
  while (Operation *def = memref.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    memref = view.getViewSource();
  }
  return memref;
}

/// The loads and stores of `nest`; failure when it touches memory another
/// way (a call, a copy), which the fusion does not reason about.
FailureOr<SmallVector<Access>> accessesOf(Operation *nest) {
  SmallVector<Access> accesses;
  WalkResult walk = nest->walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      accesses.push_back({load.getMemRef(), rootOf(load.getMemRef()),
                          load.getIndices(), false});
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      accesses.push_back({store.getMemRef(), rootOf(store.getMemRef()),
                          store.getIndices(), true});
    } else if (op != nest && op->getNumRegions() == 0 &&
               !op->hasTrait<OpTrait::IsTerminator>() &&
               !isMemoryEffectFree(op)) {
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return accesses;
}

/// Where each of `ivs` indexes `access`: one position per IV, or nothing
/// when an IV is missing or appears twice.
std::optional<SmallVector<unsigned>> ivPositions(const Access &access,
                                                 ValueRange ivs) {
  SmallVector<unsigned> positions;
  for (Value iv : ivs) {
    std::optional<unsigned> found;
    for (auto [i, index] : llvm::enumerate(access.indices)) {
      if (index != iv)
        continue;
      if (found)
        return std::nullopt;
      found = i;
    }
    if (!found)
      return std::nullopt;
    positions.push_back(*found);
  }
  return positions;
}

//===----------------------------------------------------------------------===//
// Row fusion
//===----------------------------------------------------------------------===//

bool hasSequentialLoop(scf::ParallelOp loop) {
  return loop.getBody()
      ->walk([](scf::ForOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

/// How many leading dims `a` and `b` share (equal constant bounds and
/// steps).
unsigned sharedDims(scf::ParallelOp a, scf::ParallelOp b) {
  unsigned shared = 0;
  for (unsigned d = 0; d < std::min(a.getNumLoops(), b.getNumLoops()); ++d) {
    auto same = [&](Value x, Value y) {
      std::optional<int64_t> cx = getConstantIntValue(x);
      std::optional<int64_t> cy = getConstantIntValue(y);
      return cx && cy && *cx == *cy;
    };
    if (!same(a.getLowerBound()[d], b.getLowerBound()[d]) ||
        !same(a.getUpperBound()[d], b.getUpperBound()[d]) ||
        !same(a.getStep()[d], b.getStep()[d]))
      break;
    ++shared;
  }
  return shared;
}

/// True when running `first`'s and `second`'s bodies one after the other
/// for each value of the `shared` leading IVs computes what running all of
/// `first` and then all of `second` does: every buffer both touch, and one
/// of them writes, is reached through one memref value and indexed by the
/// shared IVs at the same positions everywhere, so distinct rows touch
/// disjoint elements.
bool rowsAreIndependent(scf::ParallelOp first, scf::ParallelOp second,
                        unsigned shared) {
  FailureOr<SmallVector<Access>> a = accessesOf(first);
  FailureOr<SmallVector<Access>> b = accessesOf(second);
  if (failed(a) || failed(b))
    return false;
  ValueRange ivsA = first.getBody()->getArguments().take_front(shared);
  ValueRange ivsB = second.getBody()->getArguments().take_front(shared);
  llvm::SmallDenseSet<Value> rootsA, rootsB, written;
  for (const Access &x : *a) {
    rootsA.insert(x.root);
    if (x.write)
      written.insert(x.root);
  }
  for (const Access &x : *b) {
    rootsB.insert(x.root);
    if (x.write)
      written.insert(x.root);
  }
  for (Value root : written) {
    if (!rootsA.contains(root) || !rootsB.contains(root))
      continue;
    std::optional<Value> memref;
    std::optional<SmallVector<unsigned>> positions;
    auto check = [&](ArrayRef<Access> accesses, ValueRange ivs) {
      for (const Access &x : accesses) {
        if (x.root != root)
          continue;
        std::optional<SmallVector<unsigned>> at = ivPositions(x, ivs);
        if (!at || (memref && *memref != x.memref) ||
            (positions && *positions != *at))
          return false;
        memref = x.memref;
        positions = at;
      }
      return true;
    };
    if (!check(*a, ivsA) || !check(*b, ivsB))
      return false;
  }
  return true;
}

/// The buffers `op` may free, when freeing is all it does (a dealloc, an
/// scf.if of deallocs, a bufferization.dealloc); nothing otherwise.
std::optional<SmallVector<Value>> freedBuffers(Operation *op) {
  if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
    return SmallVector<Value>{dealloc.getMemref()};
  if (auto dealloc = dyn_cast<bufferization::DeallocOp>(op))
    return SmallVector<Value>(dealloc.getMemrefs());
  if (!isa<scf::IfOp>(op))
    return std::nullopt;
  SmallVector<Value> freed;
  WalkResult walk = op->walk([&](Operation *nested) {
    if (auto dealloc = dyn_cast<memref::DeallocOp>(nested))
      freed.push_back(dealloc.getMemref());
    else if (nested != op && !isa<scf::YieldOp>(nested))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return std::nullopt;
  return freed;
}

/// Makes `first` and `second` neighbours: ops between them that only
/// compute values or allocate move above `first`; ops that only free
/// buffers `second` does not touch move below `second`. False (nothing
/// moved) when some op between them can do neither.
bool makeNeighbours(scf::ParallelOp first, scf::ParallelOp second) {
  FailureOr<SmallVector<Access>> b = accessesOf(second);
  if (failed(b))
    return false;
  llvm::SmallDenseSet<Value> touchedBySecond;
  for (const Access &x : *b)
    touchedBySecond.insert(x.root);
  SmallVector<Operation *> hoist, sink;
  for (Operation *op = first->getNextNode(); op != second;
       op = op->getNextNode()) {
    bool allocatesOnly = op->getNumRegions() == 0 &&
                         (isMemoryEffectFree(op) ||
                          hasSingleEffect<MemoryEffects::Allocate>(op));
    bool usesSunkValue = llvm::any_of(op->getOperands(), [&](Value v) {
      return llvm::is_contained(sink, v.getDefiningOp());
    });
    if (allocatesOnly && !usesSunkValue) {
      hoist.push_back(op);
      continue;
    }
    if (std::optional<SmallVector<Value>> freed = freedBuffers(op)) {
      if (llvm::none_of(*freed, [&](Value buffer) {
            return touchedBySecond.contains(rootOf(buffer));
          })) {
        sink.push_back(op);
        continue;
      }
    }
    return false;
  }
  for (Operation *op : hoist)
    op->moveBefore(first);
  for (Operation *op : llvm::reverse(sink))
    op->moveAfter(second);
  return true;
}

/// Clones `loop`'s body at `b`'s point with its first IVs replaced by
/// `ivs` and its remaining dims as sequential loops.
void cloneBodyAsRow(OpBuilder &b, scf::ParallelOp loop, ValueRange ivs) {
  IRMapping mapping;
  for (auto [old, now] : llvm::zip(loop.getBody()->getArguments(), ivs))
    mapping.map(old, now);
  OpBuilder::InsertionGuard guard(b);
  for (unsigned d = ivs.size(); d < loop.getNumLoops(); ++d) {
    auto inner = scf::ForOp::create(b, loop.getLoc(), loop.getLowerBound()[d],
                                    loop.getUpperBound()[d], loop.getStep()[d]);
    mapping.map(loop.getInductionVars()[d], inner.getInductionVar());
    b.setInsertionPoint(inner.getBody()->getTerminator());
  }
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, mapping);
}

/// Fuses `first` into `second` when that is worth it and safe; the fused
/// loop, or null.
scf::ParallelOp fuseRows(scf::ParallelOp first, scf::ParallelOp second) {
  if (first.getNumResults() || second.getNumResults())
    return nullptr;
  unsigned shared = sharedDims(first, second);
  unsigned minDims = std::min(first.getNumLoops(), second.getNumLoops());
  if (shared == 0 || shared != minDims)
    return nullptr;
  // Fusing makes the extra dims of one loop sequential: worth it only to
  // keep a reduction's row in one kernel with its neighbours.
  bool sameDims = first.getNumLoops() == second.getNumLoops();
  if (!sameDims && !hasSequentialLoop(first) && !hasSequentialLoop(second))
    return nullptr;
  if (!rowsAreIndependent(first, second, shared) ||
      !makeNeighbours(first, second))
    return nullptr;
  OpBuilder b(second);
  auto fused = scf::ParallelOp::create(
      b, second.getLoc(), second.getLowerBound().take_front(shared),
      second.getUpperBound().take_front(shared),
      second.getStep().take_front(shared));
  b.setInsertionPoint(fused.getBody()->getTerminator());
  cloneBodyAsRow(b, first, fused.getInductionVars());
  cloneBodyAsRow(b, second, fused.getInductionVars());
  first.erase();
  second.erase();
  return fused;
}

void fuseRowsIn(Block &block) {
  scf::ParallelOp current;
  for (Operation *op = &block.front(); op;) {
    auto loop = dyn_cast<scf::ParallelOp>(op);
    if (!loop) {
      op = op->getNextNode();
      continue;
    }
    if (current) {
      if (scf::ParallelOp fused = fuseRows(current, loop)) {
        current = fused;
        op = fused->getNextNode();
        continue;
      }
    }
    current = loop;
    op = op->getNextNode();
  }
}

//===----------------------------------------------------------------------===//
// Mapping to blocks and threads
//===----------------------------------------------------------------------===//

void setMapping(scf::ParallelOp loop, ArrayRef<gpu::Processor> processors) {
  MLIRContext *context = loop.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, context);
  SmallVector<gpu::ParallelLoopDimMappingAttr> mapping;
  for (gpu::Processor processor : processors)
    mapping.push_back(gpu::ParallelLoopDimMappingAttr::get(context, processor,
                                                           identity, identity));
  (void)gpu::setMappingAttr(loop, mapping);
}

/// Replaces the top-level nest `nest` (an scf.parallel, or a sequential
/// nest run as one thread) with a loop over blocks around a loop over
/// threads; each thread takes one linear index of `nest`'s parallel dims.
void mapToBlocksAndThreads(Operation *nest, int64_t blockSize) {
  auto parallel = dyn_cast<scf::ParallelOp>(nest);
  SmallVector<int64_t> lower, extent, step;
  if (parallel) {
    for (unsigned d = 0; d < parallel.getNumLoops(); ++d) {
      std::optional<int64_t> lb =
          getConstantIntValue(parallel.getLowerBound()[d]);
      std::optional<int64_t> ub =
          getConstantIntValue(parallel.getUpperBound()[d]);
      std::optional<int64_t> st = getConstantIntValue(parallel.getStep()[d]);
      if (!lb || !ub || !st || *st <= 0)
        return; // dynamic bounds: left on the host
      lower.push_back(*lb);
      step.push_back(*st);
      extent.push_back(std::max<int64_t>(0, (*ub - *lb + *st - 1) / *st));
    }
  }
  int64_t total = 1;
  for (int64_t e : extent)
    total *= e;
  if (total == 0) {
    nest->erase();
    return;
  }
  int64_t threads = std::min(blockSize, total);
  int64_t blocks = (total + threads - 1) / threads;

  Location loc = nest->getLoc();
  OpBuilder b(nest);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value zero = index(0), one = index(1);
  auto grid = scf::ParallelOp::create(b, loc, zero, index(blocks), one);
  setMapping(grid, gpu::Processor::BlockX);
  b.setInsertionPoint(grid.getBody()->getTerminator());
  auto block = scf::ParallelOp::create(b, loc, zero, index(threads), one);
  setMapping(block, gpu::Processor::ThreadX);
  b.setInsertionPoint(block.getBody()->getTerminator());

  if (!parallel) {
    nest->moveBefore(block.getBody()->getTerminator());
    return;
  }
  Value linear = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, grid.getInductionVars()[0], index(threads)),
      block.getInductionVars()[0]);
  if (blocks * threads != total) {
    Value inBounds = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                           linear, index(total));
    auto guard = scf::IfOp::create(b, loc, inBounds);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
  }
  IRMapping mapping;
  int64_t stride = total;
  for (unsigned d = 0; d < extent.size(); ++d) {
    stride /= extent[d];
    Value i = arith::DivUIOp::create(b, loc, linear, index(stride));
    if (d > 0)
      i = arith::RemUIOp::create(b, loc, i, index(extent[d]));
    if (step[d] != 1)
      i = arith::MulIOp::create(b, loc, i, index(step[d]));
    if (lower[d] != 0)
      i = arith::AddIOp::create(b, loc, i, index(lower[d]));
    mapping.map(parallel.getInductionVars()[d], i);
  }
  for (Operation &op : parallel.getBody()->without_terminator())
    b.clone(op, mapping);
  parallel.erase();
}

/// True for a top-level sequential nest worth a kernel: it touches buffers
/// and calls nothing.
bool isDeviceLoopNest(scf::ForOp loop) {
  if (loop.getNumResults())
    return false;
  bool touchesMemory = false;
  WalkResult walk = loop->walk([&](Operation *op) {
    if (isa<CallOpInterface>(op))
      return WalkResult::interrupt();
    touchesMemory |= isa<memref::LoadOp, memref::StoreOp>(op);
    return WalkResult::advance();
  });
  return touchesMemory && !walk.wasInterrupted();
}

struct FormGpuKernelsPass
    : spmdc::impl::FormGpuKernelsBase<FormGpuKernelsPass> {
  using FormGpuKernelsBase::FormGpuKernelsBase;

  void runOnOperation() override {
    if (blockSize <= 0 || blockSize > 1024) {
      getOperation().emitError("block-size must be in 1..1024, not ")
          << static_cast<int64_t>(blockSize);
      return signalPassFailure();
    }
    getOperation().walk([&](func::FuncOp function) {
      for (Block &block : function.getBody()) {
        fuseRowsIn(block);
        SmallVector<Operation *> nests;
        for (Operation &op : block) {
          if (auto parallel = dyn_cast<scf::ParallelOp>(op)) {
            if (parallel.getNumResults() == 0)
              nests.push_back(&op);
          } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
            if (isDeviceLoopNest(loop))
              nests.push_back(&op);
          }
        }
        for (Operation *nest : nests) {
          // Parallel loops left inside a nest run sequentially per thread.
          nest->walk([&](scf::ParallelOp inner) {
            if (inner != nest)
              setMapping(inner,
                         SmallVector<gpu::Processor>(
                             inner.getNumLoops(), gpu::Processor::Sequential));
          });
          mapToBlocksAndThreads(nest, blockSize);
        }
      }
    });
  }
};

} // namespace
