//===- BufferOrigins.cpp - what a value's buffer may be shared with -------===//

#include "BufferOrigins.h"

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace spmdc {

static bool isBuffer(Value v) {
  return isa<TensorType, BaseMemRefType>(v.getType());
}

BufferOrigins::BufferOrigins(ModuleOp module) {
  SymbolTable symbols(module);
  module.walk([&](func::CallOp call) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || !callee.isPrivate() || callee.isExternal())
      return;
    calleeOf[call] = callee;
    callers[callee].push_back(call);
  });
}

Value BufferOrigins::returnedValue(func::FuncOp callee, unsigned index) {
  if (!callee.getBody().hasOneBlock())
    return {};
  return callee.getBody().front().getTerminator()->getOperand(index);
}

bool BufferOrigins::diesAt(Value v, Operation *op) {
  Block *block = op->getBlock();
  Block *home = isa<BlockArgument>(v) ? cast<BlockArgument>(v).getOwner()
                                      : v.getDefiningOp()->getBlock();
  if (home != block)
    return false;
  SmallVector<Value> pending = {v};
  DenseSet<Value> seen = {v};
  while (!pending.empty()) {
    Value x = pending.pop_back_val();
    for (OpOperand &use : x.getUses()) {
      Operation *user = use.getOwner();
      if (user == op)
        continue;
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor || ancestor == op || !ancestor->isBeforeInBlock(op))
        return false;
      for (Value alias : aliasingResults(use))
        if (seen.insert(alias).second)
          pending.push_back(alias);
    }
  }
  return true;
}

SmallVector<Value> BufferOrigins::aliasingResults(OpOperand &use) {
  Operation *user = use.getOwner();
  if (auto dps = dyn_cast<DestinationStyleOpInterface>(user)) {
    if (dps.hasPureTensorSemantics() && dps.isDpsInit(&use))
      return {dps.getTiedOpResult(&use)};
    if (dps.isDpsInput(&use))
      return {};
  }
  SmallVector<Value> aliases;
  if (auto call = dyn_cast<func::CallOp>(user)) {
    if (func::FuncOp callee = calleeOf.lookup(call)) {
      BlockArgument arg = callee.getArgument(use.getOperandNumber());
      for (OpResult result : call->getResults()) {
        SmallPtrSet<Value, 4> within;
        if (Value returned = returnedValue(callee, result.getResultNumber()))
          collectLocalRoots(returned, within);
        if (within.empty() || within.contains(arg))
          aliases.push_back(result);
      }
      return aliases;
    }
  }
  for (Value result : user->getResults())
    if (isBuffer(result))
      aliases.push_back(result);
  return aliases;
}

/// The buffers `v` may be a view of within its function: fresh buffers,
/// constants, the function's arguments. What a call returns of its callee's
/// arguments stands for the operands it passed.
void BufferOrigins::collectLocalRoots(Value v, SmallPtrSetImpl<Value> &roots) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    roots.insert(v);
    // A loop's iteration argument: also what the loop started from.
    Operation *parent = arg.getOwner()->getParentOp();
    if (!isa<FunctionOpInterface>(parent))
      for (Value operand : parent->getOperands())
        if (isBuffer(operand))
          collectLocalRoots(operand, roots);
    return;
  }
  Operation *op = v.getDefiningOp();
  auto dps = dyn_cast<DestinationStyleOpInterface>(op);
  if (dps && dps.hasPureTensorSemantics())
    return collectLocalRoots(dps.getTiedOpOperand(cast<OpResult>(v))->get(),
                             roots);
  if (auto call = dyn_cast<func::CallOp>(op)) {
    func::FuncOp callee = calleeOf.lookup(call);
    Value returned =
        callee ? returnedValue(callee, cast<OpResult>(v).getResultNumber())
               : Value();
    if (returned) {
      SmallPtrSet<Value, 4> within;
      collectLocalRoots(returned, within);
      for (Value root : within) {
        auto arg = dyn_cast<BlockArgument>(root);
        if (arg && arg.getOwner() == &callee.getBody().front())
          collectLocalRoots(call.getOperand(arg.getArgNumber()), roots);
        else
          roots.insert(root);
      }
      return;
    }
  }
  bool fromOperands = false;
  for (Value operand : op->getOperands())
    if (isBuffer(operand)) {
      collectLocalRoots(operand, roots);
      fromOperands = true;
    }
  if (!fromOperands)
    roots.insert(v);
}

SmallPtrSet<Value, 4> BufferOrigins::roots(Value v) {
  SmallPtrSet<Value, 4> local, all;
  collectLocalRoots(v, local);
  for (Value root : local) {
    auto arg = dyn_cast<BlockArgument>(root);
    auto fn = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                  : func::FuncOp();
    if (!fn || !callers.count(fn)) {
      all.insert(root);
      continue;
    }
    for (func::CallOp call : callers[fn])
      for (Value r : roots(call.getOperand(arg.getArgNumber())))
        all.insert(r);
  }
  return all;
}

bool BufferOrigins::isFresh(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    return fn && !fn.isPrivate() && arg.getOwner() == &fn.getBody().front() &&
           fn.getArgAttr(arg.getArgNumber(), kDonatedAttr);
  }
  Operation *op = v.getDefiningOp();
  if (isa<tensor::EmptyOp, memref::AllocOp>(op))
    return true;
  auto dps = dyn_cast<DestinationStyleOpInterface>(op);
  if (dps && dps.hasPureTensorSemantics())
    return isFresh(dps.getTiedOpOperand(cast<OpResult>(v))->get());
  if (auto toTensor = dyn_cast<bufferization::ToTensorOp>(op))
    return toTensor.getRestrict() && toTensor.getWritable() &&
           isFresh(toTensor.getBuffer());
  if (auto call = dyn_cast<func::CallOp>(op))
    if (func::FuncOp callee = calleeOf.lookup(call))
      if (Value returned =
              returnedValue(callee, cast<OpResult>(v).getResultNumber()))
        return isFresh(returned);
  return false;
}

bool BufferOrigins::isPassedDonated(func::FuncOp fn, unsigned index) {
  auto it = callers.find(fn);
  if (it == callers.end())
    return false;
  for (func::CallOp call : it->second) {
    Value passed = call.getOperand(index);
    auto arg = dyn_cast<BlockArgument>(passed);
    auto caller = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                      : func::FuncOp();
    if (!caller || caller.isPrivate() ||
        !caller.getArgAttr(arg.getArgNumber(), kDonatedAttr) ||
        !diesAt(passed, call))
      return false;
    if (operandRoots(call).lookup(passed) != 1)
      return false;
  }
  return true;
}

const DenseMap<Value, int> &BufferOrigins::operandRoots(func::CallOp call) {
  auto it = operandRootCounts.find(call);
  if (it != operandRootCounts.end())
    return it->second;
  DenseMap<Value, int> counts;
  for (Value operand : call.getOperands())
    if (isBuffer(operand))
      for (Value root : roots(operand))
        ++counts[root];
  return operandRootCounts[call] = std::move(counts);
}

bool isElementwiseResult(linalg::GenericOp generic, OpOperand &init) {
  return generic.getNumParallelLoops() == generic.getNumLoops() &&
         !generic.payloadUsesValueFromOperand(&init) &&
         generic.getMatchingIndexingMap(&init).isPermutation();
}

bool readsOnlyAt(linalg::GenericOp generic, Value v, AffineMap map) {
  return llvm::all_of(generic->getOpOperands(), [&](OpOperand &operand) {
    return operand.get() != v ||
           (generic.isDpsInput(&operand) &&
            generic.getMatchingIndexingMap(&operand) == map);
  });
}

Value allocatedBuffer(Value memref) {
  while (Operation *def = memref.getDefiningOp()) {
    if (isa<memref::AllocOp, memref::AllocaOp>(def))
      return memref;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return nullptr;
    memref = view.getViewSource();
  }
  auto argument = cast<BlockArgument>(memref);
  auto function = dyn_cast<func::FuncOp>(argument.getOwner()->getParentOp());
  if (function && argument.getOwner()->isEntryBlock() &&
      function.getArgAttr(argument.getArgNumber(), kNoAliasAttrName))
    return memref;
  return nullptr;
}

BufferSpan spanOf(Value buffer, Block *block,
                  const DenseSet<Operation *> &ignored, bool viewsAreUses) {
  BufferSpan span;
  SmallVector<Value> pending{buffer};
  DenseSet<Value> seen{buffer};
  auto share = [&](Operation *op) {
    for (Value result : op->getResults())
      if (isa<BaseMemRefType>(result.getType()) && seen.insert(result).second)
        pending.push_back(result);
  };
  while (!pending.empty()) {
    Value value = pending.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (ignored.contains(user))
        continue;
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor || isa<func::ReturnOp>(user)) {
        span.escapes = true;
        continue;
      }
      share(user);
      if (ancestor != user)
        share(ancestor);
      if (!viewsAreUses && ancestor == user &&
          isa<ViewLikeOpInterface, memref::CastOp>(user))
        continue;
      if (!span.first || ancestor->isBeforeInBlock(span.first))
        span.first = ancestor;
      if (!span.last || span.last->isBeforeInBlock(ancestor))
        span.last = ancestor;
    }
  }
  return span;
}

} // namespace spmdc
