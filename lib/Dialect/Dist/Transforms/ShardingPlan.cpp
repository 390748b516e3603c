//===- ShardingPlan.cpp - what propagation and partitioning share ---------===//

#include "ShardingPlan.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"
#include "spmdc/Support/Bytes.h"

using namespace mlir;
using spmdc::tg::ShardingRule;
using spmdc::tg::typeOf;

namespace spmdc::dist {

int64_t bytesOf(Value v) { return storageBytes(typeOf(v)); }

FactorAxes assignFactors(const ShardingRule &rule, SmallVector<Source> sources,
                         const Mesh &mesh,
                         const llvm::DenseSet<int> &parametersLead) {
  auto byPriority = [](SmallVector<Source> list, bool swap) {
    auto key = [&](const Source &s) {
      // Activations and parameters trade places; a result leading or
      // trailing keeps its place.
      bool operand = s.priority == kActivation || s.priority == kParameter;
      return swap && operand ? kActivation + kParameter - s.priority
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
          if (!firstPass || parametersLead.contains(a))
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
        // A factor its group does not divide is padded (see
        // TensorSharding); one smaller than its group stays whole.
        for (int a : ArrayRef<int>(axes).drop_front(have.size())) {
          Axes extended(have);
          extended.push_back(a);
          if (used.contains(a) ||
              rule.factorSizes[f] < mesh.groupSize(extended))
            break;
          have.push_back(a);
          used.insert(a);
        }
      }
    }
  };
  // A result leading goes first and one trailing last; among the
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
    auto leading = group([](int p) { return p == kResultLeading; });
    auto operands = group(
        [](int p) { return p == kActivation || p == kParameter; });
    auto trailing = group([](int p) { return p == kResultTrailing; });
    for (bool contractions : {false, true})
      assign(leading, firstPass, contractions);
    for (bool contractions : {false, true})
      assign(operands, firstPass, contractions);
    for (bool contractions : {false, true})
      assign(trailing, firstPass, contractions);
  };
  if (!parametersLead.empty())
    run(byPriority(sources, /*swap=*/true), /*firstPass=*/true);
  run(byPriority(sources, /*swap=*/false), /*firstPass=*/false);
  return assigned;
}

TensorSharding shardingFromFactors(
    const SmallVector<SmallVector<int>> &factorsPerDim,
    const FactorAxes &assigned) {
  TensorSharding s;
  for (const auto &factors : factorsPerDim)
    s.dims.push_back(factors.empty() ? Axes() : assigned[factors.front()]);
  return s;
}

TensorSharding shardingFromFactors(
    const SmallVector<SmallVector<int>> &factorsPerDim,
    const FactorAxes &assigned, const ShardingRule &rule,
    ArrayRef<int64_t> paddedFactors) {
  TensorSharding s = shardingFromFactors(factorsPerDim, assigned);
  for (auto [d, factors] : llvm::enumerate(factorsPerDim)) {
    if (factors.empty() || s.dims[d].empty() || !paddedFactors[factors.front()])
      continue;
    int64_t size = paddedFactors[factors.front()];
    for (int f : ArrayRef<int>(factors).drop_front())
      size *= rule.factorSizes[f];
    s.setPadded(d, size);
  }
  return s;
}

void assignPriorities(Block &body, ArrayRef<int> argPriorities,
                      llvm::DenseMap<Value, int> &priority) {
  for (auto [arg, p] : llvm::zip(body.getArguments(), argPriorities))
    priority[arg] = p;
  for (Operation &op : body.without_terminator())
    for (Value result : op.getResults()) {
      int p = kParameter;
      for (Value operand : op.getOperands())
        p = std::min(p, priority.lookup(operand));
      priority[result] = p;
    }
}

llvm::DenseSet<int> parametersLeadAxes(ModuleOp module, const Mesh &mesh) {
  llvm::DenseSet<int> axes;
  if (auto names = module->getAttrOfType<ArrayAttr>(kParametersLeadAttr))
    if (auto indices = mesh.axisIndices(names); succeeded(indices))
      axes.insert(indices->begin(), indices->end());
  return axes;
}

ShardingAttr plannedShardingAttr(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    return fn ? fn.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                                  kShardingAttr)
              : ShardingAttr();
  }
  return value.getDefiningOp()->getAttrOfType<ShardingAttr>(kShardingAttr);
}

} // namespace spmdc::dist
