//===- ShardingPlan.cpp - what propagation and partitioning share ---------===//

#include "ShardingPlan.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"
#include "spmdc/Support/Bytes.h"

using namespace mlir;
using spmdc::tg::ShardingRule;
using spmdc::tg::typeOf;

namespace spmdc::dist {

int64_t bytesOf(Value v) { return storageBytes(typeOf(v)); }

std::optional<std::pair<int, int64_t>>
factorOfDim(ArrayRef<int> factors, int64_t dimParts, const ShardingRule &rule) {
  if (factors.empty())
    return std::nullopt;
  if (dimParts <= 1)
    return std::make_pair(factors.front(), int64_t(1));
  int64_t covered = 1;
  for (int f : factors) {
    if (dimParts % covered)
      return std::nullopt;
    int64_t left = dimParts / covered, size = rule.factorSizes[f];
    if (size % left == 0 && size / left > 1)
      return std::make_pair(f, left);
    if (left % size)
      return std::nullopt;
    covered *= size;
  }
  return std::nullopt;
}

FactorAxes assignFactors(const ShardingRule &rule, SmallVector<Source> sources,
                         const Mesh &mesh,
                         const llvm::DenseSet<int> &parametersLead,
                         FactorParts *partsOut) {
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
  FactorParts parts(rule.factorSizes.size(), 1);
  // Factors a dim spans after another: splitting one makes that dim
  // strided, which is never padded.
  llvm::SmallVector<bool> exact(rule.factorSizes.size(), false);
  for (const auto *dims : {&rule.operands, &rule.results})
    for (const auto &value : *dims)
      for (const auto &factors : value)
        for (size_t i = 1; i < factors.size(); ++i)
          exact[factors[i]] = true;
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
        auto landing =
            factorOfDim(factors, source.sharding->partsOf(dim), rule);
        if (!landing)
          continue;
        auto [f, p] = *landing;
        if (rule.isContraction(f) != contractions)
          continue;
        Axes &have = assigned[f];
        // In the second pass `have` may hold first-pass axes the source
        // lists too; compare on the axes this source offers.
        if (rule.replicatedOnly[f] || axes.size() <= have.size() ||
            ArrayRef<int>(axes).take_front(have.size()) != ArrayRef<int>(have))
          continue;
        // Parts are the first source's; an index addresses contiguous
        // blocks only.
        if ((!have.empty() && parts[f] != p) ||
            (p > 1 && rule.indexOperandOf(f) >= 0))
          continue;
        // A factor its group does not divide is padded (see
        // TensorSharding); one smaller than its group stays whole. One in
        // parts, or inside a dim after another factor, splits only evenly.
        for (int a : ArrayRef<int>(axes).drop_front(have.size())) {
          Axes extended(have);
          extended.push_back(a);
          int64_t group = mesh.groupSize(extended);
          if (used.contains(a) || rule.factorSizes[f] < group ||
              ((p > 1 || exact[f]) && rule.factorSizes[f] % (p * group)))
            break;
          have.push_back(a);
          parts[f] = p;
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
  if (partsOut)
    *partsOut = parts;
  return assigned;
}

TensorSharding shardingFromFactors(
    const SmallVector<SmallVector<int>> &factorsPerDim,
    const FactorAxes &assigned, const ShardingRule &rule,
    ArrayRef<int64_t> parts) {
  TensorSharding s;
  for (const auto &factors : factorsPerDim) {
    s.dims.emplace_back();
    // The first factor with axes splits the dim, in the parts the whole
    // factors before it make (times its own).
    int64_t before = 1;
    for (int f : factors) {
      if (!assigned[f].empty()) {
        int64_t p = before * (parts.empty() ? 1 : parts[f]);
        s.dims.back() = assigned[f];
        s.setParts(s.dims.size() - 1, p);
        break;
      }
      before *= rule.factorSizes[f];
    }
  }
  return s;
}

TensorSharding shardingFromFactors(
    const SmallVector<SmallVector<int>> &factorsPerDim,
    const FactorAxes &assigned, const ShardingRule &rule,
    ArrayRef<int64_t> parts, ArrayRef<int64_t> paddedFactors) {
  TensorSharding s = shardingFromFactors(factorsPerDim, assigned, rule, parts);
  for (auto [d, factors] : llvm::enumerate(factorsPerDim)) {
    if (factors.empty() || s.dims[d].empty() ||
        !paddedFactors[factors.front()] || s.partsOf(d) > 1)
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
