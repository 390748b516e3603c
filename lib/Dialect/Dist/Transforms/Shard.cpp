//===- Shard.cpp - the whole step on local shards (--dist-shard) ----------===//
//
// Propagation then rewriting, function by function (@main, and the
// @forward/@backward it calls, each with the shardings its caller passes):
//
//  - propagate: every value gets the dims part of a sharding, by forward
//    and backward sweeps over the ops' sharding rules until nothing
//    changes; a value's sharding only ever gains axes.
//  - rewrite: each op runs on local shards. Its factors take their axes
//    from its operands (activations before parameters, larger before
//    smaller); operands that disagree are resharded; contracted sharded
//    factors make the result a partial sum. A partial value with one use
//    that is linear in it stays partial; otherwise it is reduced right
//    away, to the sharding propagation chose for it (reduce-scatter where
//    that shards a dim over the partial axis, all-reduce elsewhere).
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/Dist/Transforms/Passes.h"
#include "spmdc/Dialect/Dist/Transforms/SpecPlacement.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseSet.h"

#include <map>

namespace spmdc::dist {
#define GEN_PASS_DEF_DISTSHARD
#include "spmdc/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace spmdc::dist

using namespace mlir;
using namespace spmdc;
using namespace spmdc::dist;
using tg::ShardingRule;
using tg::typeOf;

namespace {

using Axes = SmallVector<int>;
/// Axes per factor of a rule.
using FactorAxes = SmallVector<Axes>;

int64_t bytesOf(Value v) {
  RankedTensorType type = typeOf(v);
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * std::max<int64_t>(1, bits / 8);
}

/// A known sharding of one side of an op, offered to its factors.
struct Source {
  const SmallVector<SmallVector<int>> *factorsPerDim;
  const TensorSharding *sharding;
  /// Lower goes first: 0 activations, 1 parameters and state.
  int priority;
  int64_t bytes;
};

/// Gives factors the axes their sources are sharded on, first source first.
/// A source extends what a factor already has (the same axes, then more)
/// and contributes the longest prefix of its axes that no other factor
/// uses and that divides the factor; a factor that must stay whole gets
/// nothing. Factors the result keeps are settled before contracted ones. Axes in `parametersFirst` (sequence parallelism's) are settled
/// first, with parameters ahead of activations: there the weights stay put
/// and activations move.
FactorAxes assignFactors(const ShardingRule &rule, SmallVector<Source> sources,
                         const Mesh &mesh,
                         const llvm::DenseSet<int> &parametersFirst = {}) {
  auto byPriority = [](SmallVector<Source> list, bool swap) {
    auto key = [&](const Source &s) {
      // 0 activations and 1 parameters trade places; -1 (a result leading)
      // and 2 (a result trailing) keep theirs.
      return swap && (s.priority == 0 || s.priority == 1) ? 1 - s.priority
                                                          : s.priority;
    };
    llvm::stable_sort(list, [&](const Source &a, const Source &b) {
      return key(a) != key(b) ? key(a) < key(b) : a.bytes > b.bytes;
    });
    return list;
  };
  FactorAxes assigned(rule.factorSizes.size());
  llvm::DenseSet<int> used;
  auto assign = [&](ArrayRef<Source> ordered, bool firstPass,
                    bool contractions) {
    for (const Source &source : ordered) {
      for (auto [dim, factors] : llvm::enumerate(*source.factorsPerDim)) {
        Axes axes;
        for (int a : source.sharding->dims[dim])
          if (!firstPass || parametersFirst.contains(a))
            axes.push_back(a);
        if (axes.empty() || factors.empty())
          continue;
        int f = factors.front();
        if (rule.isContraction(f) != contractions)
          continue;
        Axes &have = assigned[f];
        // In the second pass `have` may hold first-pass axes the source
        // lists too; compare on the axes this source offers.
        if (rule.replicatedOnly[f] || axes.size() <= have.size() ||
            ArrayRef<int>(axes).take_front(have.size()) != ArrayRef<int>(have))
          continue;
        for (int a : ArrayRef<int>(axes).drop_front(have.size())) {
          Axes extended(have);
          extended.push_back(a);
          if (used.contains(a) ||
              rule.factorSizes[f] % mesh.groupSize(extended) != 0)
            break;
          have.push_back(a);
          used.insert(a);
        }
      }
    }
  };
  // A result leading (-1) goes first and one trailing (2) last; among the
  // operands, kept factors go before contracted ones: sharding a
  // contraction leaves a partial sum to reduce, so it only takes axes the
  // kept factors do not want.
  auto run = [&](ArrayRef<Source> ordered, bool firstPass) {
    auto group = [&](auto keep) {
      SmallVector<Source> selected;
      for (const Source &s : ordered)
        if (keep(s.priority))
          selected.push_back(s);
      return selected;
    };
    auto leading = group([](int p) { return p < 0; });
    auto operands = group([](int p) { return p == 0 || p == 1; });
    auto trailing = group([](int p) { return p > 1; });
    for (bool contractions : {false, true})
      assign(leading, firstPass, contractions);
    for (bool contractions : {false, true})
      assign(operands, firstPass, contractions);
    for (bool contractions : {false, true})
      assign(trailing, firstPass, contractions);
  };
  if (!parametersFirst.empty())
    run(byPriority(sources, /*swap=*/true), /*firstPass=*/true);
  run(byPriority(sources, /*swap=*/false), /*firstPass=*/false);
  return assigned;
}

/// The dims of a value whose dims span `factorsPerDim`, under `assigned`.
TensorSharding shardingFromFactors(
    const SmallVector<SmallVector<int>> &factorsPerDim,
    const FactorAxes &assigned) {
  TensorSharding s;
  for (const auto &factors : factorsPerDim)
    s.dims.push_back(factors.empty() ? Axes() : assigned[factors.front()]);
  return s;
}

/// Makes `current` more specific where `proposed` extends a dim's axes
/// (an empty dim, or the same axes followed by more) with axes no other dim
/// uses; true if anything changed.
bool refine(TensorSharding &current, const TensorSharding &proposed,
            ArrayRef<int64_t> shape, const Mesh &mesh) {
  bool changed = false;
  for (auto [d, axes] : llvm::enumerate(proposed.dims)) {
    ArrayRef<int> have = current.dims[d];
    if (axes.size() <= have.size() ||
        ArrayRef<int>(axes).take_front(have.size()) != have)
      continue;
    if (llvm::any_of(ArrayRef<int>(axes).drop_front(have.size()), [&](int a) {
          return llvm::is_contained(current.shardedAxes(), a);
        }))
      continue;
    if (shape[d] % mesh.groupSize(axes) != 0)
      continue;
    current.dims[d] = axes;
    changed = true;
  }
  return changed;
}

class FunctionSharder;

/// State shared by all functions of the module.
struct ModuleSharder {
  ModuleOp module;
  Mesh mesh;
  /// The phase of ops of @main when the step is not partitioned.
  llvm::DenseSet<Operation *> forwardOps;
  /// Mesh axes where parameters' shardings win over activations'.
  llvm::DenseSet<int> parametersFirst;

  LogicalResult shardFunction(func::FuncOp fn,
                              ArrayRef<TensorSharding> argShardings,
                              ArrayRef<std::string> argOrigins,
                              ArrayRef<int> argPriorities,
                              ArrayRef<std::string> returnedNames,
                              ArrayRef<std::optional<TensorSharding>>
                                  requiredResults,
                              SmallVectorImpl<TensorSharding> &resultShardings);
};

class FunctionSharder {
public:
  FunctionSharder(ModuleSharder &module, func::FuncOp fn)
      : module(module), mesh(module.mesh), fn(fn) {}

  LogicalResult run(ArrayRef<TensorSharding> argShardings,
                    ArrayRef<std::string> argOrigins,
                    ArrayRef<int> argPriorities,
                    ArrayRef<std::string> returnedNames,
                    ArrayRef<std::optional<TensorSharding>> requiredResults,
                    SmallVectorImpl<TensorSharding> &resultShardings);

private:
  //===--- Propagation ----------------------------------------------------===//
  void propagate(ArrayRef<TensorSharding> argShardings,
                 ArrayRef<int> argPriorities);
  bool sweepForward(Operation *op);
  bool sweepBackward(Operation *op);
  SmallVector<Source> sourcesOf(Operation *op, const ShardingRule &rule,
                                bool includeResult);

  //===--- Rewriting ------------------------------------------------------===//
  LogicalResult rewriteOp(Operation *op, OpBuilder &b);
  LogicalResult rewriteCall(func::CallOp call, OpBuilder &b);
  /// The local value of `v` resharded to `target` (memoized).
  Value reshard(OpBuilder &b, Value v, const TensorSharding &target,
                StringRef phase);
  void defineLocal(Value logical, Value local, TensorSharding sharding,
                   OpBuilder &b);
  std::string phaseOf(Operation *op);
  std::string originOf(Value logical);
  bool acceptsPartial(Operation *user, unsigned operandNumber);
  template <typename OpT, typename... Args>
  Value collective(OpBuilder &b, Value logical, StringRef phase,
                   RankedTensorType type, Value input, ArrayRef<int> axes,
                   Args... args);

  ModuleSharder &module;
  const Mesh &mesh;
  func::FuncOp fn;
  llvm::DenseMap<Value, TensorSharding> planned;
  llvm::DenseSet<Value> fixed;
  llvm::DenseMap<Value, int> priority;
  std::vector<std::string> argOrigins;
  /// Names of values the caller returns under a name (the loss).
  llvm::DenseMap<Value, std::string> resultOrigins;
  /// Shardings the caller needs returned values in.
  llvm::DenseMap<Value, TensorSharding> requiredOf;

  /// The logical value's local form and its current sharding.
  llvm::DenseMap<Value, Value> local;
  llvm::DenseMap<Value, TensorSharding> actual;
  /// Reshards done so far: (logical value, target) -> local value.
  std::map<std::pair<void *, std::string>, Value> reshards;
};

//===----------------------------------------------------------------------===//
// Propagation
//===----------------------------------------------------------------------===//

SmallVector<Source> FunctionSharder::sourcesOf(Operation *op,
                                               const ShardingRule &rule,
                                               bool includeResult) {
  SmallVector<Source> sources;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    auto it = planned.find(operand);
    if (it != planned.end())
      sources.push_back({&rule.operands[i], &it->second,
                         priority.lookup(operand), bytesOf(operand)});
  }
  if (includeResult) {
    auto it = planned.find(op->getResult(0));
    if (it != planned.end())
      // The result's wishes rank after every operand's.
      sources.push_back({&rule.result, &it->second, 2, 0});
  }
  return sources;
}

bool FunctionSharder::sweepForward(Operation *op) {
  auto ruleOp = dyn_cast<tg::ShardingRuleOpInterface>(op);
  if (!ruleOp)
    return false;
  ShardingRule rule = ruleOp.getShardingRule();
  FactorAxes assigned = assignFactors(rule, sourcesOf(op, rule, false), mesh,
                                      module.parametersFirst);
  Value result = op->getResult(0);
  TensorSharding proposed = shardingFromFactors(rule.result, assigned);
  auto [it, inserted] = planned.try_emplace(
      result, TensorSharding::replicated(typeOf(result).getRank()));
  return refine(it->second, proposed, typeOf(result).getShape(), mesh) ||
         inserted;
}

bool FunctionSharder::sweepBackward(Operation *op) {
  auto ruleOp = dyn_cast<tg::ShardingRuleOpInterface>(op);
  if (!ruleOp)
    return false;
  ShardingRule rule = ruleOp.getShardingRule();
  SmallVector<Source> sources = sourcesOf(op, rule, true);
  // From the consumer's side the result leads.
  for (Source &s : sources)
    s.priority = s.factorsPerDim == &rule.result ? -1 : s.priority;
  FactorAxes assigned =
      assignFactors(rule, sources, mesh, module.parametersFirst);
  bool changed = false;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (fixed.contains(operand))
      continue;
    TensorSharding proposed = shardingFromFactors(rule.operands[i], assigned);
    auto it = planned.find(operand);
    if (it != planned.end())
      changed |= refine(it->second, proposed, typeOf(operand).getShape(), mesh);
  }
  return changed;
}

void FunctionSharder::propagate(ArrayRef<TensorSharding> argShardings,
                                ArrayRef<int> argPriorities) {
  Block &body = fn.getBody().front();
  for (auto [arg, sharding, p] :
       llvm::zip(body.getArguments(), argShardings, argPriorities)) {
    planned[arg] = sharding;
    fixed.insert(arg);
    priority[arg] = p;
  }
  // Activations (anything computed from data) lead; parameters, optimizer
  // state and constants follow.
  for (Operation &op : body.without_terminator())
    for (Value result : op.getResults()) {
      int p = 1;
      for (Value operand : op.getOperands())
        p = std::min(p, priority.lookup(operand));
      priority[result] = op.getNumOperands() ? p : 1;
    }

  for (int sweep = 0; sweep < 16; ++sweep) {
    bool changed = false;
    for (Operation &op : body.without_terminator())
      if (!isa<func::CallOp>(op))
        changed |= sweepForward(&op);
    for (Operation &op : llvm::reverse(body.without_terminator()))
      if (!isa<func::CallOp>(op))
        changed |= sweepBackward(&op);
    if (!changed)
      break;
  }
}

//===----------------------------------------------------------------------===//
// Rewriting
//===----------------------------------------------------------------------===//

std::string FunctionSharder::phaseOf(Operation *op) {
  if (auto phase = op->getAttrOfType<StringAttr>(tg::kPhaseAttr))
    return phase.str();
  if (fn.getSymName() == "forward")
    return "forward";
  if (fn.getSymName() == "backward")
    return "backward";
  return module.forwardOps.contains(op) ? "forward" : "backward";
}

std::string FunctionSharder::originOf(Value logical) {
  if (auto arg = dyn_cast<BlockArgument>(logical))
    return argOrigins[arg.getArgNumber()];
  auto returned = resultOrigins.find(logical);
  if (returned != resultOrigins.end())
    return returned->second;
  Operation *def = logical.getDefiningOp();
  if (auto grad = def->getAttrOfType<StringAttr>(tg::kGradOfAttr))
    return grad.str();
  // A partial gradient on its way to its parameter: follow the single users
  // to the op that finishes it.
  Value v = logical;
  for (int step = 0; step < 8 && v.hasOneUse(); ++step) {
    Operation *user = *v.getUsers().begin();
    if (user->getNumResults() != 1 || user->hasAttr(tg::kPhaseAttr))
      break;
    if (auto grad = user->getAttrOfType<StringAttr>(tg::kGradOfAttr))
      return grad.str();
    v = user->getResult(0);
  }
  // A value computed from one tensor alone (a transpose, a cast) serves
  // that tensor.
  if (def->getNumOperands() == 1)
    return originOf(def->getOperand(0));
  return "activation";
}

template <typename OpT, typename... Args>
Value FunctionSharder::collective(OpBuilder &b, Value logical, StringRef phase,
                                  RankedTensorType type, Value input,
                                  ArrayRef<int> axes, Args... args) {
  auto op = OpT::create(b, input.getLoc(), type, input,
                        mesh.axisNames(b.getContext(), axes), args...,
                        b.getStringAttr(phase),
                        b.getStringAttr(originOf(logical)));
  return op.getResult();
}

Value FunctionSharder::reshard(OpBuilder &b, Value v,
                               const TensorSharding &target, StringRef phase) {
  TensorSharding current = actual.lookup(v);
  Value value = local.lookup(v);
  if (current == target)
    return value;
  std::string key = target.str(mesh);
  auto cached = reshards.find({v.getAsOpaquePointer(), key});
  if (cached != reshards.end())
    return cached->second;

  // A transpose of an argument (a weight's W^T) is resharded at the
  // argument, so that every use of the weight shares one gather.
  if (auto transpose = v.getDefiningOp<tg::TransposeOp>();
      transpose && isa<BlockArgument>(transpose.getInput()) &&
      current.partial.empty() && target.partial.empty()) {
    TensorSharding sourceTarget = actual.lookup(transpose.getInput());
    for (auto [i, p] : llvm::enumerate(transpose.getPermutation()))
      sourceTarget.dims[p] = target.dims[i];
    Value source = reshard(b, transpose.getInput(), sourceTarget, phase);
    TensorSharding transposed = target;
    auto shape = transposed.localShape(typeOf(v).getShape(), mesh);
    Value result = tg::TransposeOp::create(
        b, value.getLoc(),
        RankedTensorType::get(*shape, typeOf(v).getElementType()), source,
        transpose.getPermutation());
    reshards[{v.getAsOpaquePointer(), key}] = result;
    return result;
  }

  RankedTensorType logical = typeOf(v);
  auto localType = [&](const TensorSharding &s) {
    return RankedTensorType::get(*s.localShape(logical.getShape(), mesh),
                                 logical.getElementType());
  };
  MLIRContext *ctx = b.getContext();

  // 1. Partial sums: reduce-scatter onto a dim the target shards over the
  // axis (when that dim is free to take it), all-reduce otherwise.
  for (int axis : SmallVector<int>(current.partial)) {
    std::optional<int64_t> scatterDim;
    for (auto [d, axes] : llvm::enumerate(target.dims))
      if (llvm::is_contained(axes, axis) && current.dims[d].size() + 1 <= axes.size() &&
          llvm::equal(current.dims[d], ArrayRef<int>(axes).take_front(current.dims[d].size())) &&
          axes[current.dims[d].size()] == axis &&
          !llvm::is_contained(current.shardedAxes(), axis))
        scatterDim = d;
    llvm::erase(current.partial, axis);
    if (scatterDim) {
      current.dims[*scatterDim].push_back(axis);
      value = collective<ReduceScatterOp>(b, v, phase, localType(current),
                                          value, {axis}, *scatterDim);
    } else {
      value = collective<AllReduceOp>(b, v, phase, localType(current), value,
                                      {axis});
    }
  }

  // 2. A dim that moves whole from one dim to another: all-to-all.
  for (size_t from = 0; from < current.dims.size(); ++from) {
    if (current.dims[from].empty() || current.dims[from] == target.dims[from])
      continue;
    for (size_t to = 0; to < current.dims.size(); ++to) {
      if (to == from || !current.dims[to].empty() ||
          target.dims[to] != current.dims[from] ||
          !target.dims[from].empty())
        continue;
      TensorSharding next = current;
      next.dims[to] = current.dims[from];
      next.dims[from].clear();
      if (failed(next.localShape(logical.getShape(), mesh)))
        continue;
      value = collective<AllToAllOp>(b, v, phase, localType(next), value,
                                     current.dims[from],
                                     static_cast<int64_t>(to),
                                     static_cast<int64_t>(from));
      current = next;
      break;
    }
  }

  // 3. Gather the minor axes of a dim beyond what it shares with the
  // target (its prefix in common).
  for (size_t d = 0; d < current.dims.size(); ++d) {
    ArrayRef<int> have = current.dims[d], want = target.dims[d];
    size_t common = 0;
    while (common < have.size() && common < want.size() &&
           have[common] == want[common])
      ++common;
    if (common == have.size())
      continue;
    Axes gathered(have.drop_front(common));
    current.dims[d].resize(common);
    value = collective<AllGatherOp>(b, v, phase, localType(current), value,
                                    gathered, static_cast<int64_t>(d));
  }

  // 4. Slice what the target shards further: free.
  for (size_t d = 0; d < current.dims.size(); ++d) {
    ArrayRef<int> want = target.dims[d];
    if (current.dims[d].size() == want.size())
      continue;
    Axes extra(want.drop_front(current.dims[d].size()));
    current.dims[d].append(extra.begin(), extra.end());
    value = LocalSliceOp::create(b, value.getLoc(), localType(current), value,
                                 mesh.axisNames(ctx, extra),
                                 static_cast<int64_t>(d));
  }
  reshards[{v.getAsOpaquePointer(), key}] = value;
  return value;
}

bool FunctionSharder::acceptsPartial(Operation *user, unsigned operandNumber) {
  auto ruleOp = dyn_cast<tg::ShardingRuleOpInterface>(user);
  if (!ruleOp || user->hasAttr(tg::kPhaseAttr))
    return false;
  ShardingRule rule = ruleOp.getShardingRule();
  switch (rule.partial) {
  case ShardingRule::Partial::None:
    return false;
  case ShardingRule::Partial::All:
    return true;
  case ShardingRule::Partial::Each:
    return rule.linearIn[operandNumber];
  }
  return false;
}

void FunctionSharder::defineLocal(Value logical, Value value,
                                  TensorSharding sharding, OpBuilder &b) {
  local[logical] = value;
  actual[logical] = sharding;
  // A partial sum stays partial only for one user that is linear in it;
  // otherwise reduce it now, once, to the sharding propagation planned.
  if (sharding.partial.empty())
    return;
  bool keep = logical.hasOneUse() &&
              acceptsPartial(*logical.getUsers().begin(),
                             logical.getUses().begin()->getOperandNumber()) &&
              !isa<func::ReturnOp, func::CallOp>(*logical.getUsers().begin());
  if (keep)
    return;
  Operation *def = logical.getDefiningOp();
  Value reduced = reshard(b, logical, planned.lookup(logical),
                          def ? phaseOf(def) : "forward");
  local[logical] = reduced;
  actual[logical] = planned.lookup(logical);
}

LogicalResult FunctionSharder::rewriteOp(Operation *op, OpBuilder &b) {
  auto ruleOp = dyn_cast<tg::ShardingRuleOpInterface>(op);
  if (!ruleOp)
    return op->emitError("the shard pass cannot handle this op");
  ShardingRule rule = ruleOp.getShardingRule();

  // Factors take the axes of the operands as they are now.
  SmallVector<Source> sources;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    sources.push_back({&rule.operands[i], &actual[operand],
                       priority.lookup(operand), bytesOf(operand)});
  FactorAxes assigned =
      assignFactors(rule, sources, mesh, module.parametersFirst);

  // Which partial operands may stay partial.
  SmallVector<unsigned> partialOperands;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (!actual[operand].partial.empty())
      partialOperands.push_back(i);
  bool keepPartial = false;
  // The update takes whole gradients: their reduction ends the backward.
  bool isUpdate = op->hasAttr(tg::kPhaseAttr);
  if (!partialOperands.empty() && !isUpdate) {
    Axes axes = actual[op->getOperand(partialOperands[0])].partial;
    bool sameAxes = llvm::all_of(partialOperands, [&](unsigned i) {
      return actual[op->getOperand(i)].partial == axes;
    });
    if (rule.partial == ShardingRule::Partial::All)
      keepPartial = sameAxes && partialOperands.size() == op->getNumOperands();
    else if (rule.partial == ShardingRule::Partial::Each)
      keepPartial = partialOperands.size() == 1 &&
                    rule.linearIn[partialOperands[0]];
    // Contracting a factor sharded over a partial axis would sum twice.
    for (auto [f, fAxes] : llvm::enumerate(assigned))
      if (llvm::any_of(fAxes, [&](int a) { return llvm::is_contained(axes, a); }))
        keepPartial = false;
  }
  // Then the sharding planned for the result, for factors the operands
  // leave whole: slicing an operand beats computing whole and slicing after.
  // A partial sum kept partial keeps its axes out of the dims.
  TensorSharding plannedResult = planned.lookup(op->getResult(0));
  if (keepPartial)
    for (auto &axes : plannedResult.dims)
      llvm::erase_if(axes, [&](int a) {
        return llvm::is_contained(
            actual[op->getOperand(partialOperands[0])].partial, a);
      });
  sources.push_back({&rule.result, &plannedResult, 2, 0});
  assigned = assignFactors(rule, sources, mesh, module.parametersFirst);

  std::string phase = phaseOf(op);
  SmallVector<Value> operands;
  Axes resultPartial;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    TensorSharding target = shardingFromFactors(rule.operands[i], assigned);
    if (keepPartial)
      target.partial = actual[operand].partial;
    // A partial operand's reduction belongs to the phase that produced it.
    bool reduces = !actual[operand].partial.empty() && !keepPartial;
    Operation *def = operand.getDefiningOp();
    operands.push_back(reshard(b, operand, target,
                               reduces && def ? phaseOf(def) : phase));
    if (keepPartial && resultPartial.empty())
      resultPartial = actual[operand].partial;
  }
  TensorSharding resultSharding = shardingFromFactors(rule.result, assigned);
  resultSharding.partial = resultPartial;
  for (auto [f, axes] : llvm::enumerate(assigned))
    if (!axes.empty() && rule.isContraction(f))
      resultSharding.partial.append(axes.begin(), axes.end());
  llvm::sort(resultSharding.partial);

  Value result = op->getResult(0);
  auto localShape = resultSharding.localShape(typeOf(result).getShape(), mesh);
  if (failed(localShape))
    return op->emitError("the result ")
           << typeOf(result) << " does not divide evenly into "
           << resultSharding.str(mesh);
  RankedTensorType localType =
      RankedTensorType::get(*localShape, typeOf(result).getElementType());

  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  state.addAttributes(op->getAttrs());
  if (auto infer = op->getName().getRegisteredInfo()->getInterface<
                   InferTypeOpInterface>()) {
    SmallVector<Type> types;
    if (failed(infer->inferReturnTypes(
            b.getContext(), op->getLoc(), operands,
            op->getAttrDictionary(), OpaqueProperties(nullptr),
            RegionRange(), types)))
      return failure();
    if (types.front() != localType)
      return op->emitError("local shape ")
             << types.front() << " differs from the planned " << localType;
  }
  state.addTypes(localType);
  Operation *created = b.create(state);
  defineLocal(result, created->getResult(0), resultSharding, b);
  return success();
}

LogicalResult FunctionSharder::rewriteCall(func::CallOp call, OpBuilder &b) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  SmallVector<TensorSharding> argShardings;
  SmallVector<std::string> origins;
  SmallVector<int> priorities;
  SmallVector<Value> operands;
  for (Value operand : call.getOperands()) {
    priorities.push_back(priority.lookup(operand));
    TensorSharding s = actual[operand];
    s.partial.clear();
    operands.push_back(reshard(b, operand, s, phaseOf(call)));
    argShardings.push_back(s);
    origins.push_back(originOf(operand));
  }
  // What @main must return in a given sharding, @backward returns so: the
  // reshard then sits with the op that made the value (the update).
  SmallVector<std::optional<TensorSharding>> required;
  for (Value r : call.getResults()) {
    auto it = requiredOf.find(r);
    required.push_back(it == requiredOf.end()
                           ? std::nullopt
                           : std::optional<TensorSharding>(it->second));
  }
  SmallVector<std::string> returnedNames;
  for (Value r : call.getResults()) {
    auto it = resultOrigins.find(r);
    returnedNames.push_back(it == resultOrigins.end() ? "" : it->second);
  }
  SmallVector<TensorSharding> resultShardings;
  if (failed(module.shardFunction(callee, argShardings, origins, priorities,
                                  returnedNames, required, resultShardings)))
    return failure();
  auto newCall = func::CallOp::create(b, call.getLoc(), callee, operands);
  for (auto [logical, value, s] :
       llvm::zip(call.getResults(), newCall.getResults(), resultShardings)) {
    local[logical] = value;
    actual[logical] = s;
  }
  return success();
}

LogicalResult FunctionSharder::run(
    ArrayRef<TensorSharding> argShardings, ArrayRef<std::string> origins,
    ArrayRef<int> argPriorities, ArrayRef<std::string> returnedNames,
    ArrayRef<std::optional<TensorSharding>> requiredResults,
    SmallVectorImpl<TensorSharding> &resultShardings) {
  argOrigins.assign(origins.begin(), origins.end());
  Block &body = fn.getBody().front();
  for (auto [v, name] : llvm::zip(body.getTerminator()->getOperands(),
                                  returnedNames))
    if (!name.empty())
      resultOrigins[v] = name;
  for (auto [v, required] :
       llvm::zip(body.getTerminator()->getOperands(), requiredResults))
    if (required)
      requiredOf.try_emplace(v, *required);
  propagate(argShardings, argPriorities);
  // Results the caller needs in a given sharding pull propagation too.
  Operation *ret = body.getTerminator();

  // The local block: arguments with local shapes.
  SmallVector<Type> argTypes;
  for (auto [arg, s] : llvm::zip(body.getArguments(), argShardings)) {
    auto shape = s.localShape(typeOf(arg).getShape(), mesh);
    if (failed(shape))
      return fn.emitError("argument #")
             << arg.getArgNumber() << " " << typeOf(arg)
             << " does not divide evenly into " << s.str(mesh);
    argTypes.push_back(
        RankedTensorType::get(*shape, typeOf(arg).getElementType()));
  }
  // Built beside the logical body, which goes once the local one is done.
  Block *newBody = new Block();
  fn.getBody().push_back(newBody);
  for (auto [arg, type] : llvm::zip(body.getArguments(), argTypes)) {
    BlockArgument newArg = newBody->addArgument(type, arg.getLoc());
    local[arg] = newArg;
    actual[arg] = argShardings[arg.getArgNumber()];
  }
  OpBuilder b = OpBuilder::atBlockEnd(newBody);
  for (Operation &op : body.without_terminator()) {
    LogicalResult ok = isa<func::CallOp>(op)
                           ? rewriteCall(cast<func::CallOp>(op), b)
                           : rewriteOp(&op, b);
    if (failed(ok)) {
      newBody->dropAllDefinedValueUses();
      newBody->erase();
      return failure();
    }
  }

  SmallVector<Value> results;
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    TensorSharding target = requiredResults[i] ? *requiredResults[i]
                                               : actual[v];
    target.partial.clear();
    if (!requiredResults[i] && !actual[v].partial.empty())
      target = planned.lookup(v);
    Operation *def = v.getDefiningOp();
    results.push_back(reshard(b, v, target, def ? phaseOf(def) : "forward"));
    resultShardings.push_back(target);
  }
  func::ReturnOp::create(b, ret->getLoc(), results);

  body.dropAllDefinedValueUses();
  body.erase();
  fn.setFunctionType(FunctionType::get(fn.getContext(), argTypes,
                                       ValueRange(results).getTypes()));
  return success();
}

LogicalResult ModuleSharder::shardFunction(
    func::FuncOp fn, ArrayRef<TensorSharding> argShardings,
    ArrayRef<std::string> argOrigins, ArrayRef<int> argPriorities,
    ArrayRef<std::string> returnedNames,
    ArrayRef<std::optional<TensorSharding>> requiredResults,
    SmallVectorImpl<TensorSharding> &resultShardings) {
  return FunctionSharder(*this, fn).run(argShardings, argOrigins,
                                        argPriorities, returnedNames,
                                        requiredResults,
                                        resultShardings);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct DistShardPass : dist::impl::DistShardBase<DistShardPass> {
  using DistShardBase::DistShardBase;
  DistShardPass(ShardSpec spec) : spec(std::move(spec)) {}

  void runOnOperation() override {
    ModuleOp moduleOp = getOperation();
    if (!spec) {
      if (specFile.empty()) {
        moduleOp.emitError("--dist-shard needs a shard spec (spec=FILE)");
        return signalPassFailure();
      }
      spec = readShardSpec(specFile, getContext());
      if (!spec)
        return signalPassFailure();
    }
    if (moduleOp->hasAttr(kMeshAttr)) {
      moduleOp.emitError("the module is already sharded");
      return signalPassFailure();
    }
    func::FuncOp main = tg::getEntryFunction(moduleOp);
    if (!main)
      return signalPassFailure();

    ModuleSharder sharder{moduleOp, meshOf(*spec), {}, {}};
    for (auto &[axis, preset] : spec->presets)
      if (preset == "sequence")
        sharder.parametersFirst.insert(sharder.mesh.axisIndex(axis));
    auto argShardings = placeArguments(main, *spec, sharder.mesh);
    if (failed(argShardings))
      return signalPassFailure();

    // Results come back as the arguments they update went in; the loss and
    // gradients replicated or as their parameter.
    auto args = tg::getArgumentInfos(main);
    auto results = tg::getResultInfos(main);
    SmallVector<std::optional<TensorSharding>> required;
    for (const tg::GraphValueInfo &r : results) {
      std::optional<TensorSharding> s;
      if (r.role == "loss")
        s = TensorSharding::replicated(r.type.getRank());
      for (auto [i, a] : llvm::enumerate(args))
        if (a.name == r.name && (a.role == r.role ||
                                 (r.role == "grad" && a.role == "param")))
          s = (*argShardings)[i];
      required.push_back(s);
    }
    SmallVector<std::string> origins, returnedNames;
    SmallVector<int> priorities;
    for (const tg::GraphValueInfo &a : args) {
      origins.push_back(a.name);
      priorities.push_back(a.role == "data" ? 0 : 1);
    }
    for (const tg::GraphValueInfo &r : results)
      returnedNames.push_back(r.name);

    // Without a partition, the loss's inputs are the forward.
    Value loss;
    for (auto [i, r] : llvm::enumerate(results))
      if (r.role == "loss")
        loss = main.getBody().front().getTerminator()->getOperand(i);
    SmallVector<Value> work;
    if (loss)
      work.push_back(loss);
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (def && sharder.forwardOps.insert(def).second)
        work.append(def->operand_begin(), def->operand_end());
    }

    SmallVector<TensorSharding> resultShardings;
    if (failed(sharder.shardFunction(main, *argShardings, origins, priorities,
                                     returnedNames, required,
                                     resultShardings)))
      return signalPassFailure();

    MLIRContext *ctx = &getContext();
    moduleOp->setAttr(kMeshAttr, sharder.mesh.toAttr(ctx));
    for (auto [i, s] : llvm::enumerate(*argShardings))
      main.setArgAttr(i, kShardingAttr, s.toAttr(ctx, sharder.mesh));
    for (auto [i, s] : llvm::enumerate(resultShardings))
      main.setResultAttr(i, kShardingAttr, s.toAttr(ctx, sharder.mesh));
  }

  std::optional<ShardSpec> spec;
};

} // namespace

std::unique_ptr<Pass> spmdc::dist::createDistShardPass(ShardSpec spec) {
  return std::make_unique<DistShardPass>(std::move(spec));
}
