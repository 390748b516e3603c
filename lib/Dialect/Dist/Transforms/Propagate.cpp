//===- Propagate.cpp - every value's sharding (--dist-propagate) ----------===//
//
// Function by function, from @main's argument shardings: forward and
// backward sweeps over the ops' sharding rules until nothing changes (a
// value's sharding only ever gains axes); then each function @main calls,
// with the shardings the call passes. The plan goes on the IR as
// #dist.sharding attributes, each with its origin.
//
//===----------------------------------------------------------------------===//

#include "ShardingPlan.h"
#include "spmdc/Dialect/Dist/Transforms/Passes.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/IR/SymbolTable.h"

namespace spmdc::dist {
#define GEN_PASS_DEF_DISTPROPAGATE
#include "spmdc/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace spmdc::dist

using namespace mlir;
using namespace spmdc;
using namespace spmdc::dist;
using tg::ShardingRule;
using tg::typeOf;

namespace {

/// Makes `current` more specific where `proposed` extends a dim's axes
/// (an empty dim, or the same axes followed by more, in the same parts)
/// with axes no other dim uses; true if anything changed.
bool refine(TensorSharding &current, const TensorSharding &proposed,
            ArrayRef<int64_t> shape, const Mesh &mesh) {
  bool changed = false;
  for (auto [d, axes] : llvm::enumerate(proposed.dims)) {
    ArrayRef<int> have = current.dims[d];
    if (axes.size() <= have.size() ||
        ArrayRef<int>(axes).take_front(have.size()) != have)
      continue;
    int64_t parts = proposed.partsOf(d);
    if (!have.empty() && current.partsOf(d) != parts)
      continue;
    // A dim in parts splits each part evenly.
    if (parts > 1 && shape[d] % (parts * mesh.groupSize(axes)))
      continue;
    if (llvm::any_of(ArrayRef<int>(axes).drop_front(have.size()), [&](int a) {
          return llvm::is_contained(current.shardedAxes(), a);
        }))
      continue;
    // A dim smaller than its group stays whole (a larger one that the
    // group does not divide is padded).
    if (shape[d] < mesh.groupSize(axes))
      continue;
    current.dims[d] = axes;
    current.setParts(d, parts);
    changed = true;
  }
  return changed;
}

/// A planned sharding and where it came from.
struct Plan {
  TensorSharding sharding;
  std::string origin;
};

/// The sweeps over one function's own ops (calls are the module's part).
class FunctionPropagation {
public:
  FunctionPropagation(const Mesh &mesh, const llvm::DenseSet<int> &lead,
                      func::FuncOp fn)
      : mesh(mesh), lead(lead), fn(fn) {}

  void run(ArrayRef<Plan> args, ArrayRef<int> argPriorities);

  llvm::DenseMap<Value, Plan> planned;
  llvm::DenseMap<Value, int> priority;

private:
  bool sweepForward(Operation *op);
  bool sweepBackward(Operation *op);
  SmallVector<Source> sourcesOf(Operation *op, const ShardingRule &rule,
                                bool includeResult);

  const Mesh &mesh;
  const llvm::DenseSet<int> &lead;
  func::FuncOp fn;
  llvm::DenseSet<Value> fixed;
};

SmallVector<Source> FunctionPropagation::sourcesOf(Operation *op,
                                                   const ShardingRule &rule,
                                                   bool includeResult) {
  SmallVector<Source> sources;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    auto it = planned.find(operand);
    if (it != planned.end())
      sources.push_back({&rule.operands[i], &it->second.sharding,
                         priority.lookup(operand), bytesOf(operand)});
  }
  if (includeResult) {
    auto it = planned.find(op->getResult(0));
    if (it != planned.end())
      // The result's wishes rank after every operand's.
      sources.push_back(
          {&rule.result(), &it->second.sharding, kResultTrailing, 0});
  }
  return sources;
}

bool FunctionPropagation::sweepForward(Operation *op) {
  auto ruleOp = dyn_cast<tg::ShardingRuleOpInterface>(op);
  if (!ruleOp)
    return false;
  ShardingRule rule = ruleOp.getShardingRule();
  FactorParts parts;
  FactorAxes assigned =
      assignFactors(rule, sourcesOf(op, rule, false), mesh, lead, &parts);
  Value result = op->getResult(0);
  TensorSharding proposed =
      shardingFromFactors(rule.result(), assigned, rule, parts);
  std::string origin =
      (op->getName().getStringRef() +
       (op->getNumOperands() ? ", from its operands" : ", which makes it whole"))
          .str();
  auto [it, inserted] = planned.try_emplace(
      result,
      Plan{TensorSharding::replicated(typeOf(result).getRank()), origin});
  if (!refine(it->second.sharding, proposed, typeOf(result).getShape(), mesh))
    return inserted;
  it->second.origin = origin;
  return true;
}

bool FunctionPropagation::sweepBackward(Operation *op) {
  auto ruleOp = dyn_cast<tg::ShardingRuleOpInterface>(op);
  if (!ruleOp)
    return false;
  ShardingRule rule = ruleOp.getShardingRule();
  SmallVector<Source> sources = sourcesOf(op, rule, true);
  // From the consumer's side the result leads.
  for (Source &s : sources)
    s.priority = s.factorsPerDim == &rule.result() ? kResultLeading : s.priority;
  FactorParts parts;
  FactorAxes assigned = assignFactors(rule, sources, mesh, lead, &parts);
  bool changed = false;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (fixed.contains(operand))
      continue;
    TensorSharding proposed =
        shardingFromFactors(rule.operands[i], assigned, rule, parts);
    auto it = planned.find(operand);
    if (it == planned.end() ||
        !refine(it->second.sharding, proposed, typeOf(operand).getShape(),
                mesh))
      continue;
    it->second.origin =
        (op->getName().getStringRef() + ", from its result").str();
    changed = true;
  }
  return changed;
}

void FunctionPropagation::run(ArrayRef<Plan> args,
                              ArrayRef<int> argPriorities) {
  Block &body = fn.getBody().front();
  for (auto [arg, plan] : llvm::zip(body.getArguments(), args)) {
    planned[arg] = plan;
    fixed.insert(arg);
  }
  // Activations (anything computed from data) lead; parameters, optimizer
  // state and constants follow.
  assignPriorities(body, argPriorities, priority);
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

/// Propagation over @main and the functions it calls.
struct ModulePropagation {
  Mesh mesh;
  llvm::DenseSet<int> lead;

  /// Plans `fn` from its arguments' plans, annotates it, and returns the
  /// plans of its results: `required` where given, otherwise as the value
  /// is planned.
  SmallVector<Plan> propagate(func::FuncOp fn, ArrayRef<Plan> args,
                              ArrayRef<int> argPriorities,
                              ArrayRef<std::optional<Plan>> required);
};

SmallVector<Plan>
ModulePropagation::propagate(func::FuncOp fn, ArrayRef<Plan> args,
                             ArrayRef<int> argPriorities,
                             ArrayRef<std::optional<Plan>> required) {
  FunctionPropagation function(mesh, lead, fn);
  function.run(args, argPriorities);
  Block &body = fn.getBody().front();
  Operation *ret = body.getTerminator();
  MLIRContext *ctx = fn.getContext();

  // Each callee takes its arguments as the call passes them (a partial sum
  // reduced first), after this function's own sweeps.
  llvm::DenseMap<Value, Plan> &planned = function.planned;
  for (Operation &op : body.without_terminator()) {
    auto call = dyn_cast<func::CallOp>(op);
    if (!call)
      continue;
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    SmallVector<Plan> calleeArgs;
    SmallVector<int> priorities;
    for (Value operand : call.getOperands()) {
      calleeArgs.push_back(
          {planned.lookup(operand).sharding,
           ("the call in @" + fn.getSymName()).str()});
      priorities.push_back(function.priority.lookup(operand));
    }
    // What the caller must return in a given sharding, the callee returns
    // so: the reshard then sits with the op that made the value.
    SmallVector<std::optional<Plan>> calleeRequired(call.getNumResults());
    for (OpOperand &use : ret->getOpOperands())
      if (use.get().getDefiningOp() == call &&
          required[use.getOperandNumber()])
        calleeRequired[cast<OpResult>(use.get()).getResultNumber()] =
            required[use.getOperandNumber()];
    SmallVector<Plan> results =
        propagate(callee, calleeArgs, priorities, calleeRequired);
    for (auto [value, plan] : llvm::zip(call.getResults(), results))
      planned[value] = plan;
  }

  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    const Plan &plan = planned[arg];
    fn.setArgAttr(i, kShardingAttr,
                  plan.sharding.toAttr(ctx, mesh, plan.origin));
  }
  for (Operation &op : body.without_terminator()) {
    if (isa<func::CallOp>(op) || op.getNumResults() != 1)
      continue;
    const Plan &plan = planned[op.getResult(0)];
    op.setAttr(kShardingAttr, plan.sharding.toAttr(ctx, mesh, plan.origin));
  }
  SmallVector<Plan> results;
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    results.push_back(required[i] ? *required[i] : planned.lookup(v));
    fn.setResultAttr(i, kShardingAttr,
                     results.back().sharding.toAttr(ctx, mesh,
                                                    results.back().origin));
  }
  return results;
}

struct DistPropagatePass
    : dist::impl::DistPropagateBase<DistPropagatePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module->hasAttr(kMeshAttr)) {
      module.emitError("the module is already partitioned");
      return signalPassFailure();
    }
    if (!module->hasAttr(kPlannedMeshAttr)) {
      module.emitError("--dist-propagate needs the module's '")
          << kPlannedMeshAttr << "': run --dist-apply-spec first";
      return signalPassFailure();
    }
    FailureOr<Mesh> mesh = Mesh::of(module, kPlannedMeshAttr);
    func::FuncOp main = tg::getEntryFunction(module);
    if (failed(mesh) || !main)
      return signalPassFailure();
    ModulePropagation propagation{*mesh, parametersLeadAxes(module, *mesh)};

    // @main's arguments as the spec placed them; results it must return in
    // a given sharding.
    auto readPlan = [&](ShardingAttr attr, RankedTensorType type,
                        StringRef what) -> FailureOr<Plan> {
      FailureOr<TensorSharding> s =
          TensorSharding::fromAttr(attr, *mesh, type.getRank());
      if (failed(s))
        return main.emitError() << what << " of @main has no valid '"
                                << kShardingAttr
                                << "': run --dist-apply-spec first";
      return Plan{*s, attr.getOrigin() ? attr.getOrigin().str() : ""};
    };
    SmallVector<Plan> args;
    SmallVector<int> priorities;
    for (const tg::GraphValueInfo &info : tg::getArgumentInfos(main)) {
      unsigned i = args.size();
      FailureOr<Plan> plan = readPlan(
          main.getArgAttrOfType<ShardingAttr>(i, kShardingAttr), info.type,
          "argument '" + info.name + "'");
      if (failed(plan))
        return signalPassFailure();
      args.push_back(*plan);
      priorities.push_back(info.role == tg::Role::data ? kActivation : kParameter);
    }
    SmallVector<std::optional<Plan>> required;
    for (auto [i, type] : llvm::enumerate(main.getResultTypes())) {
      auto attr = main.getResultAttrOfType<ShardingAttr>(i, kShardingAttr);
      required.push_back(std::nullopt);
      if (!attr)
        continue;
      FailureOr<Plan> plan = readPlan(attr, cast<RankedTensorType>(type),
                                      "result #" + std::to_string(i));
      if (failed(plan))
        return signalPassFailure();
      required.back() = *plan;
    }
    propagation.propagate(main, args, priorities, required);
  }
};

} // namespace
