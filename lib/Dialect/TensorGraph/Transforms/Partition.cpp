//===- Partition.cpp - forward/backward split (--tg-partition) ------------===//
//
// Splits the joint step @main into @forward (the ops the loss depends on,
// returning the loss and the saved values) and @backward (gradients and the
// optimizer update, from the saved values), with @main calling both.
//
// save-all saves every forward value the backward uses (AOTAutograd's
// default_partition). min-cut (min_cut_rematerialization_partition) may
// instead recompute cheap forward ops in the backward: a max-flow/min-cut
// over the forward ops, each split into in -> out with capacity its bytes
// times 1.1^min(distance to the backward, 100); ops that must not be
// recomputed (matmul, reductions, gathers, random) hang off the source;
// values the backward uses run into the sink. The cut edges are the values
// to save; each recomputed op goes just before the backward's first use.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"
#include "spmdc/Support/Bytes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <deque>
#include <limits>

namespace spmdc::tg {
#define GEN_PASS_DEF_TGPARTITION
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h.inc"
} // namespace spmdc::tg

using namespace mlir;
using namespace spmdc::tg;

namespace {

/// Bytes of a tensor value (i1 takes a byte).
int64_t bytesOf(Value v) { return spmdc::storageBytes(typeOf(v)); }

/// Cheap ops the backward may recompute instead of loading (the op says
/// so: TG_Recomputable).
bool isRecomputable(Operation *op) {
  return op->hasTrait<spmdc::tg::OpTrait::Recomputable>();
}

/// Dinic's max-flow on a small dense-ish graph.
class MaxFlow {
public:
  explicit MaxFlow(int nodes) : adjacency(nodes) {}

  void addEdge(int from, int to, double capacity) {
    adjacency[from].push_back(edges.size());
    edges.push_back({to, capacity});
    adjacency[to].push_back(edges.size());
    edges.push_back({from, 0.0});
  }

  void run(int source, int sink) {
    while (buildLevels(source, sink)) {
      next.assign(adjacency.size(), 0);
      while (push(source, sink, std::numeric_limits<double>::infinity()) > 0) {
      }
    }
  }

  /// Nodes reachable from `source` in the residual graph: the source side
  /// of a minimum cut.
  std::vector<bool> sourceSide(int source) const {
    std::vector<bool> seen(adjacency.size(), false);
    std::deque<int> queue{source};
    seen[source] = true;
    while (!queue.empty()) {
      int n = queue.front();
      queue.pop_front();
      for (size_t e : adjacency[n])
        if (edges[e].capacity > kEpsilon && !seen[edges[e].to]) {
          seen[edges[e].to] = true;
          queue.push_back(edges[e].to);
        }
    }
    return seen;
  }

private:
  static constexpr double kEpsilon = 1e-9;
  struct Edge {
    int to;
    double capacity;
  };

  bool buildLevels(int source, int sink) {
    level.assign(adjacency.size(), -1);
    std::deque<int> queue{source};
    level[source] = 0;
    while (!queue.empty()) {
      int n = queue.front();
      queue.pop_front();
      for (size_t e : adjacency[n])
        if (edges[e].capacity > kEpsilon && level[edges[e].to] < 0) {
          level[edges[e].to] = level[n] + 1;
          queue.push_back(edges[e].to);
        }
    }
    return level[sink] >= 0;
  }

  double push(int n, int sink, double flow) {
    if (n == sink)
      return flow;
    for (size_t &i = next[n]; i < adjacency[n].size(); ++i) {
      size_t e = adjacency[n][i];
      Edge &edge = edges[e];
      if (edge.capacity <= kEpsilon || level[edge.to] != level[n] + 1)
        continue;
      double pushed = push(edge.to, sink, std::min(flow, edge.capacity));
      if (pushed > 0) {
        edge.capacity -= pushed;
        edges[e ^ 1].capacity += pushed;
        return pushed;
      }
    }
    return 0;
  }

  std::vector<std::vector<size_t>> adjacency;
  std::vector<Edge> edges;
  std::vector<int> level;
  std::vector<size_t> next;
};

struct Split {
  /// Forward ops in program order; the rest of the body is the backward.
  SmallVector<Operation *> forward, backward;
  /// Forward values handed to the backward.
  llvm::SetVector<Value> saved;
  /// Forward ops the backward computes again from saved values.
  llvm::DenseSet<Operation *> recomputed;
};

int64_t savedBytes(const Split &split) {
  int64_t bytes = 0;
  for (Value v : split.saved)
    bytes += bytesOf(v);
  return bytes;
}

struct TgPartitionPass : spmdc::tg::impl::TgPartitionBase<TgPartitionPass> {
  using TgPartitionBase::TgPartitionBase;

  void runOnOperation() override {
    func::FuncOp fn = getEntryFunction(getOperation());
    if (!fn)
      return signalPassFailure();
    if (getOperation().lookupSymbol("forward") ||
        getOperation().lookupSymbol("backward")) {
      fn.emitError("the step is already partitioned");
      return signalPassFailure();
    }
    auto results = getResultInfos(fn);
    auto lossIt = llvm::find_if(
        results, [](const GraphValueInfo &r) { return r.role == Role::loss; });
    if (lossIt == results.end()) {
      fn.emitError("--tg-partition needs a result of role 'loss'");
      return signalPassFailure();
    }
    Block &body = fn.getBody().front();
    Value loss = body.getTerminator()->getOperand(lossIt - results.begin());

    Split split = forwardBackward(body, loss);
    Split saveAll = split;
    chooseSaveAll(saveAll);
    int64_t saveAllBytes = savedBytes(saveAll);
    if (policy == PartitionPolicy::MinCut) {
      chooseMinCut(split);
      // The distance weighting may prefer a cut with more bytes; never save
      // more than save-all does.
      if (savedBytes(split) > saveAllBytes)
        split = saveAll;
    } else {
      split = saveAll;
    }

    OpBuilder b(&getContext());
    getOperation()->setAttr(
        "tg.partition",
        b.getDictionaryAttr(
            {b.getNamedAttr("policy",
                            b.getStringAttr(partitionPolicyName(policy))),
             b.getNamedAttr("saved_activation_bytes",
                            b.getI64IntegerAttr(savedBytes(split))),
             b.getNamedAttr("save_all_activation_bytes",
                            b.getI64IntegerAttr(saveAllBytes))}));
    rebuild(fn, split);
  }

  /// Forward = the ops the loss depends on; backward = the rest.
  Split forwardBackward(Block &body, Value loss) {
    llvm::DenseSet<Operation *> inForward;
    SmallVector<Value> work{loss};
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || !inForward.insert(def).second)
        continue;
      for (Value operand : def->getOperands())
        work.push_back(operand);
    }
    Split split;
    for (Operation &op : body.without_terminator())
      (inForward.contains(&op) ? split.forward : split.backward).push_back(&op);
    return split;
  }

  static bool isForwardValue(const Split &split, Value v) {
    Operation *def = v.getDefiningOp();
    return def && llvm::is_contained(split.forward, def);
  }

  void chooseSaveAll(Split &split) {
    for (Operation *op : split.backward)
      for (Value operand : op->getOperands())
        if (isForwardValue(split, operand))
          split.saved.insert(operand);
  }

  void chooseMinCut(Split &split) {
    llvm::DenseMap<Operation *, int> index;
    for (auto [i, op] : llvm::enumerate(split.forward))
      index[op] = i;
    llvm::DenseSet<Operation *> backward(split.backward.begin(),
                                         split.backward.end());
    auto usedByBackward = [&](Operation *op) {
      return llvm::any_of(op->getUsers(),
                          [&](Operation *u) { return backward.contains(u); });
    };

    // Distance (in forward ops) to the nearest use by the backward.
    std::vector<int> distance(split.forward.size(), 100);
    for (int i = split.forward.size() - 1; i >= 0; --i) {
      Operation *op = split.forward[i];
      if (usedByBackward(op))
        distance[i] = 0;
      for (Operation *user : op->getUsers())
        if (index.count(user))
          distance[i] = std::min(distance[i], distance[index[user]] + 1);
    }

    const int source = 0, sink = 1;
    auto in = [](int i) { return 2 + 2 * i; };
    auto out = [](int i) { return 3 + 2 * i; };
    const double inf = std::numeric_limits<double>::infinity();
    MaxFlow flow(2 + 2 * split.forward.size());
    for (auto [i, op] : llvm::enumerate(split.forward)) {
      double weight =
          bytesOf(op->getResult(0)) * std::pow(1.1, std::min(distance[i], 100));
      flow.addEdge(in(i), out(i), weight);
      if (!isRecomputable(op))
        flow.addEdge(source, in(i), inf);
      if (usedByBackward(op))
        flow.addEdge(out(i), sink, inf);
      for (Operation *user : op->getUsers())
        if (index.count(user))
          flow.addEdge(out(i), in(index[user]), inf);
    }
    flow.run(source, sink);
    std::vector<bool> sourceSide = flow.sourceSide(source);

    // Saved: cut between in and out. Recomputed: forward ops on the sink
    // side that the backward reaches without crossing a saved value.
    split.saved.clear();
    for (auto [i, op] : llvm::enumerate(split.forward))
      if (sourceSide[in(i)] && !sourceSide[out(i)])
        split.saved.insert(op->getResult(0));
    SmallVector<Value> work;
    for (Operation *op : split.backward)
      for (Value operand : op->getOperands())
        work.push_back(operand);
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!isForwardValue(split, v) || split.saved.contains(v))
        continue;
      Operation *def = v.getDefiningOp();
      if (split.recomputed.insert(def).second)
        for (Value operand : def->getOperands())
          work.push_back(operand);
    }
  }

  /// Builds @forward and @backward and makes @main call them.
  void rebuild(func::FuncOp fn, const Split &split) {
    Block &body = fn.getBody().front();
    Operation *ret = body.getTerminator();
    OpBuilder b(fn);
    b.setInsertionPointAfter(fn);
    Location loc = fn.getLoc();

    // The arguments of @main each function reads, in @main's order.
    auto argsUsedBy = [&](ArrayRef<Operation *> ops) {
      llvm::SetVector<Value> used;
      for (Operation *op : ops)
        for (Value operand : op->getOperands())
          if (llvm::isa<BlockArgument>(operand))
            used.insert(operand);
      SmallVector<Value> ordered;
      for (BlockArgument arg : body.getArguments())
        if (used.contains(arg))
          ordered.push_back(arg);
      return ordered;
    };

    // @main's results: computed by the forward, by the backward, or passed
    // straight through from an argument.
    SmallVector<Value> forwardResults, backwardResults;
    for (Value r : ret->getOperands()) {
      if (isForwardValue(split, r))
        forwardResults.push_back(r);
      else if (r.getDefiningOp())
        backwardResults.push_back(r);
    }

    // @forward(args) -> (forward results..., saved...).
    SmallVector<Value> forwardArgs = argsUsedBy(split.forward);
    SmallVector<Value> forwardReturns(forwardResults);
    forwardReturns.append(split.saved.begin(), split.saved.end());
    func::FuncOp forwardFn =
        buildFunction(b, loc, "forward", forwardArgs, {}, split.forward,
                      forwardReturns);
    b.setInsertionPointAfter(forwardFn);

    // @backward(saved..., args) -> (backward results...).
    SmallVector<Operation *> backwardOps = recomputedWhereNeeded(split);
    SmallVector<Value> backwardArgs = argsUsedBy(backwardOps);
    SmallVector<Value> savedValues(split.saved.begin(), split.saved.end());
    func::FuncOp backwardFn =
        buildFunction(b, loc, "backward", backwardArgs, savedValues,
                      backwardOps, backwardResults);

    // @main: call both, return what it returned before.
    b.setInsertionPoint(ret);
    auto forwardCall = func::CallOp::create(b, loc, forwardFn, forwardArgs);
    SmallVector<Value> backwardOperands(
        forwardCall.getResults().drop_front(forwardResults.size()));
    backwardOperands.append(backwardArgs);
    auto backwardCall =
        func::CallOp::create(b, loc, backwardFn, backwardOperands);
    IRMapping mapping;
    for (auto [old, now] : llvm::zip(forwardResults, forwardCall.getResults()))
      mapping.map(old, now);
    for (auto [old, now] : llvm::zip(backwardResults, backwardCall.getResults()))
      mapping.map(old, now);
    SmallVector<Value> newReturns;
    for (Value r : ret->getOperands())
      newReturns.push_back(mapping.lookupOrDefault(r));
    func::ReturnOp::create(b, ret->getLoc(), newReturns);
    ret->erase();
    for (Operation *op : llvm::reverse(split.backward))
      op->erase();
    for (Operation *op : llvm::reverse(split.forward))
      op->erase();
  }

  /// The backward's ops with each recomputed op placed just before the
  /// first op that reads it (AOTAutograd's
  /// reordering_to_mimic_autograd_engine): placed all first, the backward
  /// began by recomputing every layer's activations and held them all at
  /// once (GPT-2 small: half a gigabyte more than its forward's peak).
  static SmallVector<Operation *> recomputedWhereNeeded(const Split &split) {
    SmallVector<Operation *> order;
    llvm::DenseSet<Operation *> placed;
    // Depth first through the recomputed ops `root` reads, each placed once
    // its own operands are.
    auto place = [&](Operation *root) {
      SmallVector<std::pair<Operation *, unsigned>> path{{root, 0}};
      while (!path.empty()) {
        auto [op, next] = path.back();
        if (next < op->getNumOperands()) {
          ++path.back().second;
          Operation *def = op->getOperand(next).getDefiningOp();
          if (def && split.recomputed.contains(def) && !placed.contains(def))
            path.push_back({def, 0});
          continue;
        }
        path.pop_back();
        if (placed.insert(op).second)
          order.push_back(op);
      }
    };
    for (Operation *op : split.backward)
      place(op);
    return order;
  }

  /// A private function of `leadingArgs` then `args` running a clone of
  /// `ops` and returning `returns`.
  func::FuncOp buildFunction(OpBuilder &b, Location loc, StringRef name,
                             ArrayRef<Value> args, ArrayRef<Value> leadingArgs,
                             ArrayRef<Operation *> ops,
                             ArrayRef<Value> returns) {
    SmallVector<Value> allArgs(leadingArgs);
    allArgs.append(args.begin(), args.end());
    auto fn = func::FuncOp::create(
        b, loc, name,
        b.getFunctionType(ValueRange(allArgs).getTypes(),
                          ValueRange(returns).getTypes()));
    fn.setPrivate();
    Block *entry = fn.addEntryBlock();
    IRMapping mapping;
    for (auto [old, now] : llvm::zip(allArgs, entry->getArguments()))
      mapping.map(old, now);
    OpBuilder inner = OpBuilder::atBlockBegin(entry);
    for (Operation *op : ops)
      inner.clone(*op, mapping);
    SmallVector<Value> mapped;
    for (Value r : returns)
      mapped.push_back(mapping.lookup(r));
    func::ReturnOp::create(inner, loc, mapped);
    return fn;
  }
};

} // namespace
