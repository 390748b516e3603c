//===- ParallelLoopNests.cpp - large loop nests on a rank's threads -------===//
//
// --parallelize-loop-nests gives each large outlined nest whose outer
// iterations are independent that loop's bounds as arguments;
// --call-parallel-nests calls it through the runtime's spmd_parallel_for,
// which shares the range among the rank's threads (spmd-run --threads).
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/Affine/Analysis/LoopAnalysis.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/VectorInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace spmdc {
#define GEN_PASS_DEF_PARALLELIZELOOPNESTS
#define GEN_PASS_DEF_CALLPARALLELNESTS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kParallelStep = "spmdc.parallel_step";
constexpr llvm::StringLiteral kParallelFor = "spmd_parallel_for";

/// The operations `loop` executes, a vector op counting its lanes (loops
/// with bounds that are not constant counted once).
int64_t workOf(affine::AffineForOp loop) {
  constexpr int64_t kCap = int64_t(1) << 50;
  int64_t total = 0;
  loop.getBody()->walk([&](Operation *op) {
    if (op->getNumRegions() != 0)
      return;
    int64_t count = 1;
    for (Type type : op->getResultTypes())
      if (auto vector = dyn_cast<VectorType>(type))
        count = std::max(count, vector.getNumElements());
    for (Operation *parent = op->getParentOp(); parent;
         parent = parent->getParentOp()) {
      if (auto inner = dyn_cast<affine::AffineForOp>(parent))
        count = std::min<int64_t>(
            kCap,
            count * std::max<int64_t>(
                        1, affine::getConstantTripCount(inner).value_or(1)));
      if (parent == loop)
        break;
    }
    total = std::min(kCap, total + count);
  });
  return total;
}

/// How one load or store indexes its memref: the dim whose index is the
/// induction variable itself (-1: none) and the lanes a vector access
/// spans along that dim.
struct Access {
  Value memref;
  bool writes;
  int dim = -1;
  int64_t lanes = 1;
};

/// The access `op` makes, if it is a load or store; std::nullopt for other
/// ops.
std::optional<Access> accessOf(Operation *op, Value iv) {
  Access access;
  auto dimOf = [&](ValueRange indices) {
    for (auto [dim, index] : llvm::enumerate(indices))
      if (index == iv)
        return int(dim);
    return -1;
  };
  if (auto read = dyn_cast<affine::AffineReadOpInterface>(op)) {
    access = {read.getMemRef(), false};
  } else if (auto write = dyn_cast<affine::AffineWriteOpInterface>(op)) {
    access = {write.getMemRef(), true};
  } else if (auto transfer = dyn_cast<VectorTransferOpInterface>(op)) {
    access = {transfer.getBase(), isa<vector::TransferWriteOp>(op)};
    access.dim = dimOf(transfer.getIndices());
    if (access.dim >= 0)
      for (auto [lane, expr] :
           llvm::enumerate(transfer.getPermutationMap().getResults()))
        if (auto dimExpr = dyn_cast<AffineDimExpr>(expr);
            dimExpr && int(dimExpr.getPosition()) == access.dim)
          access.lanes = transfer.getVectorType().getDimSize(lane);
    return access;
  } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
    access = {load.getMemRef(), false};
    access.dim = dimOf(load.getIndices());
    return access;
  } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
    access = {store.getMemRef(), true};
    access.dim = dimOf(store.getIndices());
    return access;
  } else {
    return std::nullopt;
  }
  // affine.load/store and affine.vector_load/store: a map result that is
  // the induction variable's dim.
  AffineMap map;
  ValueRange operands;
  if (auto read = dyn_cast<affine::AffineReadOpInterface>(op)) {
    map = read.getAffineMap();
    operands = read.getMapOperands();
  } else {
    auto write = cast<affine::AffineWriteOpInterface>(op);
    map = write.getAffineMap();
    operands = write.getMapOperands();
  }
  for (auto [dim, expr] : llvm::enumerate(map.getResults()))
    if (auto dimExpr = dyn_cast<AffineDimExpr>(expr);
        dimExpr && operands[dimExpr.getPosition()] == iv) {
      access.dim = dim;
      break;
    }
  VectorType vector;
  if (auto read = dyn_cast<affine::AffineVectorLoadOp>(op))
    vector = read.getVectorType();
  if (auto write = dyn_cast<affine::AffineVectorStoreOp>(op))
    vector = write.getVectorType();
  int64_t rank = map.getNumResults();
  if (vector && access.dim >= rank - vector.getRank())
    access.lanes = vector.getDimSize(access.dim - (rank - vector.getRank()));
  return access;
}

/// Whether `loop`'s iterations are independent: each memref the nest
/// writes (but does not allocate on the stack inside it) is indexed by the
/// induction variable in one and the same dim by every access, vector accesses
/// spanning at most a step there; no other side effects, no views.
bool hasIndependentIterations(affine::AffineForOp loop) {
  Value iv = loop.getInductionVar();
  int64_t step = loop.getStepAsInt();
  SmallVector<Access> accesses;
  llvm::DenseSet<Value> written;
  WalkResult result = loop.getBody()->walk([&](Operation *op) {
    if (std::optional<Access> access = accessOf(op, iv)) {
      if (loop->isAncestor(access->memref.getParentBlock()->getParentOp()))
        return WalkResult::advance(); // private to an iteration
      if (access->writes)
        written.insert(access->memref);
      accesses.push_back(*access);
      return WalkResult::advance();
    }
    // Views would hide which elements an access touches; heap allocations
    // (the runtime's allocator) stay on the rank's own thread.
    if (llvm::any_of(op->getResultTypes(), llvm::IsaPred<BaseMemRefType>) &&
        !isa<memref::AllocaOp>(op))
      return WalkResult::interrupt();
    if (isa<memref::AllocaOp>(op) || isMemoryEffectFree(op) ||
        isa<affine::AffineForOp, affine::AffineIfOp, affine::AffineYieldOp,
            scf::ForOp, scf::IfOp, scf::YieldOp>(op))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  if (result.wasInterrupted())
    return false;
  llvm::DenseMap<Value, int> dimOf;
  for (const Access &access : accesses) {
    if (!written.contains(access.memref))
      continue;
    if (access.dim < 0 || access.lanes > step)
      return false;
    auto [it, inserted] = dimOf.try_emplace(access.memref, access.dim);
    if (!inserted && it->second != access.dim)
      return false;
  }
  return true;
}

/// The one loop of an outlined nest function (its other ops constants),
/// if it has constant bounds and no results.
affine::AffineForOp soleLoop(func::FuncOp function) {
  if (function.isExternal() || function.getNumResults() != 0 ||
      !function.getBody().hasOneBlock())
    return nullptr;
  affine::AffineForOp loop;
  for (Operation &op : function.getBody().front()) {
    if (auto found = dyn_cast<affine::AffineForOp>(op)) {
      if (loop)
        return nullptr;
      loop = found;
    } else if (!op.hasTrait<OpTrait::ConstantLike>() &&
               !isa<func::ReturnOp>(op)) {
      return nullptr;
    }
  }
  if (!loop || loop.getNumResults() != 0 || !loop.hasConstantLowerBound() ||
      !loop.hasConstantUpperBound() ||
      loop.getConstantUpperBound() - loop.getConstantLowerBound() <=
          loop.getStepAsInt())
    return nullptr;
  return loop;
}

struct ParallelizeLoopNestsPass
    : spmdc::impl::ParallelizeLoopNestsBase<ParallelizeLoopNestsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = module.getContext();
    // Bounds each marked function had, for its calls.
    llvm::DenseMap<StringAttr, std::pair<int64_t, int64_t>> bounds;
    for (func::FuncOp function : module.getOps<func::FuncOp>()) {
      if (!function.isPrivate() || function->hasAttr(kParallelStep))
        continue;
      affine::AffineForOp loop = soleLoop(function);
      if (!loop || workOf(loop) < minWork || !hasIndependentIterations(loop))
        continue;
      Type index = IndexType::get(context);
      unsigned count = function.getNumArguments();
      if (failed(function.insertArguments({count, count}, {index, index}, {},
                                          {loop.getLoc(), loop.getLoc()})))
        continue;
      bounds[function.getSymNameAttr()] = {loop.getConstantLowerBound(),
                                           loop.getConstantUpperBound()};
      AffineMap symbol = AffineMap::get(0, 1, getAffineSymbolExpr(0, context));
      loop.setLowerBound(function.getArgument(count), symbol);
      loop.setUpperBound(function.getArgument(count + 1), symbol);
      function->setAttr(
          kParallelStep,
          IntegerAttr::get(IntegerType::get(context, 64), loop.getStepAsInt()));
    }
    if (bounds.empty())
      return;
    module.walk([&](func::CallOp call) {
      auto it = bounds.find(call.getCalleeAttr().getAttr());
      if (it == bounds.end())
        return;
      OpBuilder b(call);
      Value lo =
          arith::ConstantIndexOp::create(b, call.getLoc(), it->second.first);
      Value hi =
          arith::ConstantIndexOp::create(b, call.getLoc(), it->second.second);
      call.getOperandsMutable().append({lo, hi});
    });
  }
};

struct CallParallelNestsPass
    : spmdc::impl::CallParallelNestsBase<CallParallelNestsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = module.getContext();
    auto ptr = LLVM::LLVMPointerType::get(context);
    auto i64 = IntegerType::get(context, 64);
    auto voidType = LLVM::LLVMVoidType::get(context);
    SymbolTable symbols(module);

    // Each marked nest's task: (ctx, lo, hi) -> nest(args from ctx, lo, hi).
    llvm::DenseMap<StringAttr, std::pair<LLVM::LLVMFuncOp, int64_t>> tasks;
    OpBuilder b(context);
    for (auto nest : llvm::to_vector(module.getOps<LLVM::LLVMFuncOp>())) {
      auto step = nest->getAttrOfType<IntegerAttr>(kParallelStep);
      if (!step)
        continue;
      nest->removeAttr(kParallelStep);
      ArrayRef<Type> params = nest.getFunctionType().getParams();
      if (params.size() < 2 || params.take_back(2) != ArrayRef<Type>{i64, i64})
        continue;
      Location loc = nest.getLoc();
      b.setInsertionPointAfter(nest);
      auto task = LLVM::LLVMFuncOp::create(
          b, loc, (nest.getSymName() + "_task").str(),
          LLVM::LLVMFunctionType::get(voidType, {ptr, i64, i64}));
      task.setLinkage(LLVM::Linkage::Internal);
      symbols.insert(task);
      Block *entry = task.addEntryBlock(b);
      b.setInsertionPointToStart(entry);
      SmallVector<Value> arguments;
      for (auto [slot, type] : llvm::enumerate(params.drop_back(2))) {
        Value address =
            LLVM::GEPOp::create(b, loc, ptr, i64, entry->getArgument(0),
                                ArrayRef<LLVM::GEPArg>{int32_t(slot)});
        arguments.push_back(LLVM::LoadOp::create(b, loc, type, address));
      }
      arguments.push_back(entry->getArgument(1));
      arguments.push_back(entry->getArgument(2));
      LLVM::CallOp::create(b, loc, nest, arguments);
      LLVM::ReturnOp::create(b, loc, ValueRange{});
      tasks[nest.getSymNameAttr()] = {task, step.getInt()};
    }
    if (tasks.empty())
      return;

    auto parallelFor = symbols.lookup<LLVM::LLVMFuncOp>(kParallelFor);
    if (!parallelFor) {
      b.setInsertionPointToEnd(module.getBody());
      parallelFor = LLVM::LLVMFuncOp::create(
          b, module.getLoc(), kParallelFor,
          LLVM::LLVMFunctionType::get(voidType, {ptr, ptr, i64, i64, i64}));
    }
    llvm::DenseSet<Operation *> taskFunctions;
    for (auto &[name, task] : tasks)
      taskFunctions.insert(task.first);
    module.walk([&](LLVM::CallOp call) {
      FlatSymbolRefAttr callee = call.getCalleeAttr();
      if (!callee || taskFunctions.contains(call->getParentOp()))
        return;
      auto it = tasks.find(callee.getAttr());
      if (it == tasks.end() || call.getNumResults() != 0)
        return;
      auto [task, step] = it->second;
      Location loc = call.getLoc();
      b.setInsertionPoint(call);
      ValueRange operands = call.getArgOperands();
      ValueRange stored = operands.drop_back(2);
      Value one = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1));
      Value buffer = LLVM::AllocaOp::create(
          b, loc, ptr,
          LLVM::LLVMArrayType::get(i64, std::max<size_t>(1, stored.size())),
          one, /*alignment=*/8);
      for (auto [slot, value] : llvm::enumerate(stored)) {
        Value address = LLVM::GEPOp::create(
            b, loc, ptr, i64, buffer, ArrayRef<LLVM::GEPArg>{int32_t(slot)});
        LLVM::StoreOp::create(b, loc, value, address);
      }
      Value function = LLVM::AddressOfOp::create(b, loc, task);
      Value stepValue =
          LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(step));
      LLVM::CallOp::create(b, loc, parallelFor,
                           ValueRange{function, buffer,
                                      operands[operands.size() - 2],
                                      operands.back(), stepValue});
      call.erase();
    });
  }
};

} // namespace
