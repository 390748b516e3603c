//===- Partition.cpp - the step on local shards (--dist-partition) --------===//
//
// Function by function (@main, and the @forward/@backward it calls), each op
// runs on local shards. Its factors take their axes from its operands
// (activations before parameters, larger before smaller), then from the
// sharding propagation planned for its result; operands that disagree are
// resharded; contracted sharded factors make the result a partial sum (a
// max's are all-reduced by max at once). A partial value with one use that
// is linear in it stays partial, unless that use would broadcast it;
// otherwise it is reduced right away, to its planned sharding
// (reduce-scatter where that shards a dim over the partial axis, one
// all-reduce over the other axes). Where two or more partial sums over
// different axes meet in an op that adds its operands, the others are made
// partial over all those axes too, so that one reduction serves them all.
//
// A split factor that an index operand addresses (a table's rows, a
// gathered or scattered dim) is served locally: each rank shifts the
// indices to its block and masks those outside it (Megatron-LM's
// vocabulary-parallel embedding and cross-entropy).
//
// A dim its group does not divide is padded at its end (GSPMD's pad and
// mask): the shard pass pads a whole dim with zeros before splitting it and
// slices the padding off after gathering it, and before an op sums over a
// padded factor (a contraction) it masks the padding with zeros, so that
// padding never reaches a value.
//
// A dim in parts (TensorSharding::parts: each rank holds its chunk of every
// part, a fused QKV projection's q, k and v) keeps its parts through the
// ops whose factors carry it; a slice or concat of whole parts is served
// locally (the local slice's bounds scaled to the local parts). Moving a
// dim in parts through a collective reorders its chunks around it: a
// gather yields [ranks][parts][chunk] where [parts][ranks][chunk] is
// meant, so the local tensor is transposed in that view (a scatter or a
// local slice does the inverse first).
//
//===----------------------------------------------------------------------===//

#include "ShardingPlan.h"
#include "spmdc/Dialect/Dist/Transforms/Passes.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace spmdc::dist {
#define GEN_PASS_DEF_DISTPARTITION
#include "spmdc/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace spmdc::dist

using namespace mlir;
using namespace spmdc;
using namespace spmdc::dist;
using tg::ShardingRule;
using tg::typeOf;

namespace {

class FunctionSharder;

/// State shared by all functions of the module.
struct ModuleSharder {
  ModuleOp module;
  Mesh mesh;
  /// The phase of ops of @main when the step is not partitioned.
  llvm::DenseSet<Operation *> forwardOps;
  /// Mesh axes where parameters' shardings win over activations'.
  llvm::DenseSet<int> parametersLead;

  /// Partitions `fn`, whose arguments are the logical values named by
  /// `argOrigins`; results are returned as `fn`'s result attributes say.
  LogicalResult shardFunction(func::FuncOp fn,
                              ArrayRef<std::string> argOrigins,
                              ArrayRef<int> argPriorities,
                              ArrayRef<std::string> returnedNames);
};

class FunctionSharder {
public:
  FunctionSharder(ModuleSharder &module, func::FuncOp fn)
      : module(module), mesh(module.mesh), fn(fn) {}

  LogicalResult run(ArrayRef<std::string> argOrigins,
                    ArrayRef<int> argPriorities,
                    ArrayRef<std::string> returnedNames);

private:
  /// The sharding propagation planned for `v` (an argument, an op's result
  /// or, for a function's results, what it returns).
  FailureOr<TensorSharding> readPlan(ShardingAttr attr, Value v,
                                     Operation *at);
  LogicalResult rewriteOp(Operation *op, OpBuilder &b);
  LogicalResult rewriteCall(func::CallOp call, OpBuilder &b);
  /// The local value of `v` resharded to `target` (memoized).
  Value reshard(OpBuilder &b, Value v, const TensorSharding &target,
                Phase phase);
  void defineLocal(Value logical, Value local, TensorSharding sharding,
                   OpBuilder &b);
  /// `value` (local) with dim `d` viewed as [outer, inner, rest] reordered
  /// to [inner, outer, rest].
  Value swapChunks(OpBuilder &b, Value value, int64_t d, int64_t outer,
                   int64_t inner);
  /// Per factor of `rule`, the size it is padded to under `assigned` (0:
  /// none): an operand's where one holds it split the same way, else the
  /// next multiple of its group.
  SmallVector<int64_t> paddedFactors(Operation *op, const ShardingRule &rule,
                                     const FactorAxes &assigned);
  /// `value` (local, dim `dim` split over `axes` and padded to `padded`)
  /// with the positions past the logical `size` set to `fill` (the
  /// identity of the reduction to come: 0, or -inf for a max).
  Value maskPadding(OpBuilder &b, Value value, int64_t dim, int64_t size,
                    ArrayRef<int> axes, int64_t padded, double fill);
  /// `index` (local) made to address this rank's block of a factor split
  /// over `axes` (padded to `padded`): indices in the block, shifted to its
  /// start, and 0 elsewhere; `inBlock` says which were in it.
  Value localIndices(OpBuilder &b, Value index, ArrayRef<int> axes,
                     int64_t padded, Value &inBlock);
  /// `value` (local, whole over `axes`) as a partial sum over `axes`: kept
  /// by the first member of each group and zero on the others.
  Value heldByFirst(OpBuilder &b, Value value, ArrayRef<int> axes);
  Phase phaseOf(Operation *op);
  std::string originOf(Value logical);
  bool acceptsPartial(Operation *user, unsigned operandNumber);
  template <typename OpT, typename... Args>
  Value collective(OpBuilder &b, Value logical, Phase phase,
                   RankedTensorType type, Value input, ArrayRef<int> axes,
                   Args... args);

  ModuleSharder &module;
  const Mesh &mesh;
  func::FuncOp fn;
  llvm::DenseMap<Value, TensorSharding> planned;
  llvm::DenseMap<Value, int> priority;
  std::vector<std::string> argOrigins;
  /// Names of values the caller returns under a name (the loss).
  llvm::DenseMap<Value, std::string> resultOrigins;

  /// The logical value's local form and its current sharding.
  llvm::DenseMap<Value, Value> local;
  llvm::DenseMap<Value, TensorSharding> actual;
  /// Reshards done so far: (logical value, target) -> local value.
  std::map<std::pair<void *, std::string>, Value> reshards;
  /// Masked local values: (local value, dim, fill) -> masked.
  std::map<std::tuple<void *, int64_t, double>, Value> masks;
};

FailureOr<TensorSharding> FunctionSharder::readPlan(ShardingAttr attr,
                                                    Value v, Operation *at) {
  FailureOr<TensorSharding> s =
      TensorSharding::fromAttr(attr, mesh, typeOf(v).getRank());
  if (failed(s))
    return at->emitError("has no valid '")
           << kShardingAttr << "' for a value of type " << typeOf(v)
           << ": run --dist-propagate first";
  s->padUneven(typeOf(v).getShape(), mesh);
  return s;
}

//===----------------------------------------------------------------------===//
// Rewriting
//===----------------------------------------------------------------------===//

Phase FunctionSharder::phaseOf(Operation *op) {
  if (op->hasAttr(tg::kUpdateAttr))
    return Phase::optimizer;
  if (fn.getSymName() == "forward")
    return Phase::forward;
  if (fn.getSymName() == "backward")
    return Phase::backward;
  return module.forwardOps.contains(op) ? Phase::forward : Phase::backward;
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
  if (auto origin = def->getAttrOfType<StringAttr>(tg::kOriginAttr))
    return origin.str();
  // A partial gradient on its way to its parameter: follow the single users
  // to the op that finishes it.
  Value v = logical;
  for (int step = 0; step < 8 && v.hasOneUse(); ++step) {
    Operation *user = *v.getUsers().begin();
    if (user->getNumResults() != 1 || user->hasAttr(tg::kUpdateAttr))
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
Value FunctionSharder::collective(OpBuilder &b, Value logical, Phase phase,
                                  RankedTensorType type, Value input,
                                  ArrayRef<int> axes, Args... args) {
  auto op = OpT::create(b, input.getLoc(), type, input,
                        mesh.axisNames(b.getContext(), axes), args...,
                        PhaseAttr::get(b.getContext(), phase),
                        b.getStringAttr(originOf(logical)));
  return op.getResult();
}

Value FunctionSharder::reshard(OpBuilder &b, Value v,
                               const TensorSharding &target, Phase phase) {
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
    for (auto [i, p] : llvm::enumerate(transpose.getPermutation())) {
      sourceTarget.dims[p] = target.dims[i];
      sourceTarget.setPadded(p, target.paddedSize(i));
      sourceTarget.setParts(p, target.partsOf(i));
    }
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
  // A splat (a slice's gradient's zeros) is made at the target's shape:
  // every block of it is the same.
  if (auto full = value.getDefiningOp<tg::FullOp>();
      full && current.partial.empty() && target.partial.empty() &&
      llvm::all_of(target.padded, [](int64_t p) { return p == 0; }) &&
      succeeded(target.localShape(logical.getShape(), mesh))) {
    Value result = tg::FullOp::create(b, full.getLoc(), localType(target),
                                      full.getValueAttr());
    reshards[{v.getAsOpaquePointer(), key}] = result;
    return result;
  }
  MLIRContext *ctx = b.getContext();
  // A whole dim padded with zeros before it is split, and unpadded once it
  // is whole again.
  auto pad = [&](size_t d, int64_t size) {
    if (!size || current.paddedSize(d) == size)
      return;
    RankedTensorType type = tg::typeOf(value);
    SmallVector<int64_t> shape(type.getShape());
    shape[d] = size - shape[d];
    Value zeros = tg::buildZeros(
        b, value.getLoc(), RankedTensorType::get(shape, type.getElementType()));
    value = tg::ConcatOp::create(b, value.getLoc(), ValueRange{value, zeros},
                                 static_cast<int64_t>(d));
    current.setPadded(d, size);
  };
  auto unpad = [&](size_t d) {
    if (!current.dims[d].empty() || !current.paddedSize(d))
      return;
    value = tg::SliceOp::create(b, value.getLoc(), value,
                                static_cast<int64_t>(d), 0,
                                logical.getDimSize(d), 1);
    current.setPadded(d, 0);
  };

  // A gather of `axes` on dim d of a dim in parts: the chunks come
  // rank-major and go back part-major.
  auto gather = [&](size_t d, const Axes &axes) {
    int64_t parts = current.partsOf(d);
    current.dims[d].resize(current.dims[d].size() - axes.size());
    value = collective<AllGatherOp>(b, v, phase, localType(current), value,
                                    axes, static_cast<int64_t>(d));
    value = swapChunks(b, value, d, mesh.groupSize(axes), parts);
  };

  // 0. A dim split with another padding, or in other parts, than the
  // target splits it with comes whole first.
  for (size_t d = 0; d < current.dims.size(); ++d) {
    if (current.dims[d].empty() || target.dims[d].empty() ||
        (current.paddedSize(d) == target.paddedSize(d) &&
         current.partsOf(d) == target.partsOf(d)))
      continue;
    gather(d, Axes(current.dims[d]));
    unpad(d);
  }

  // 1. Partial sums: reduce-scatter onto a dim the target shards over the
  // axis (when that dim is free to take it), all-reduce otherwise (one
  // all-reduce over all such axes).
  // Axes the target keeps partial stay so: moving summands along other
  // axes keeps them summands.
  Axes allReduced;
  for (int axis : SmallVector<int>(current.partial)) {
    if (llvm::is_contained(target.partial, axis))
      continue;
    std::optional<int64_t> scatterDim;
    for (auto [d, axes] : llvm::enumerate(target.dims))
      if (llvm::is_contained(axes, axis) && current.dims[d].size() + 1 <= axes.size() &&
          llvm::equal(current.dims[d], ArrayRef<int>(axes).take_front(current.dims[d].size())) &&
          axes[current.dims[d].size()] == axis &&
          !llvm::is_contained(current.shardedAxes(), axis))
        scatterDim = d;
    llvm::erase(current.partial, axis);
    if (scatterDim) {
      pad(*scatterDim, target.paddedSize(*scatterDim));
      // Into a dim in parts: each rank's chunks of every part together.
      int64_t parts = target.partsOf(*scatterDim);
      value = swapChunks(b, value, *scatterDim, parts, mesh.shape[axis]);
      current.setParts(*scatterDim, parts);
      current.dims[*scatterDim].push_back(axis);
      value = collective<ReduceScatterOp>(b, v, phase, localType(current),
                                          value, {axis}, *scatterDim);
    } else {
      allReduced.push_back(axis);
    }
  }
  if (!allReduced.empty())
    value = collective<AllReduceOp>(b, v, phase, localType(current), value,
                                    allReduced);

  // 2. A dim that moves whole from one dim to another: all-to-all.
  for (size_t from = 0; from < current.dims.size(); ++from) {
    if (current.dims[from].empty() || current.dims[from] == target.dims[from] ||
        current.partsOf(from) > 1)
      continue;
    for (size_t to = 0; to < current.dims.size(); ++to) {
      if (to == from || !current.dims[to].empty() ||
          target.dims[to] != current.dims[from] ||
          !target.dims[from].empty() || target.partsOf(to) > 1)
        continue;
      TensorSharding next = current;
      next.dims[to] = current.dims[from];
      next.dims[from].clear();
      next.setPadded(to, target.paddedSize(to));
      if (failed(next.localShape(logical.getShape(), mesh)))
        continue;
      pad(to, target.paddedSize(to));
      value = collective<AllToAllOp>(b, v, phase, localType(next), value,
                                     current.dims[from],
                                     static_cast<int64_t>(to),
                                     static_cast<int64_t>(from));
      current = next;
      unpad(from);
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
    gather(d, Axes(have.drop_front(common)));
    unpad(d);
  }

  // 4. Slice what the target shards further: free.
  for (size_t d = 0; d < current.dims.size(); ++d) {
    ArrayRef<int> want = target.dims[d];
    if (current.dims[d].size() == want.size())
      continue;
    if (current.dims[d].empty())
      pad(d, target.paddedSize(d));
    Axes extra(want.drop_front(current.dims[d].size()));
    // Into a dim in parts: this rank's chunks of every part together.
    int64_t parts = target.partsOf(d);
    value = swapChunks(b, value, d, parts, mesh.groupSize(extra));
    current.setParts(d, parts);
    current.dims[d].append(extra.begin(), extra.end());
    value = LocalSliceOp::create(b, value.getLoc(), localType(current), value,
                                 mesh.axisNames(ctx, extra),
                                 static_cast<int64_t>(d));
  }
  reshards[{v.getAsOpaquePointer(), key}] = value;
  return value;
}

Value FunctionSharder::swapChunks(OpBuilder &b, Value value, int64_t d,
                                  int64_t outer, int64_t inner) {
  if (outer == 1 || inner == 1)
    return value;
  Location loc = value.getLoc();
  RankedTensorType type = typeOf(value);
  SmallVector<int64_t> viewed(type.getShape().take_front(d));
  viewed.append({outer, inner, type.getDimSize(d) / (outer * inner)});
  viewed.append(type.getShape().begin() + d + 1, type.getShape().end());
  SmallVector<int64_t> perm(viewed.size()), swapped(viewed);
  for (auto [i, p] : llvm::enumerate(perm))
    p = i;
  std::swap(perm[d], perm[d + 1]);
  std::swap(swapped[d], swapped[d + 1]);
  Type element = type.getElementType();
  Value view = tg::ReshapeOp::create(
      b, loc, RankedTensorType::get(viewed, element), value);
  Value moved = tg::TransposeOp::create(
      b, loc, RankedTensorType::get(swapped, element), view, perm);
  return tg::ReshapeOp::create(b, loc, type, moved);
}

/// True if `v` is made by the update (a gradient's norm), not handed to it.
static bool madeByUpdate(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->hasAttr(tg::kUpdateAttr);
}

bool FunctionSharder::acceptsPartial(Operation *user, unsigned operandNumber) {
  auto ruleOp = dyn_cast<tg::ShardingRuleOpInterface>(user);
  // The update takes whole gradients; partial sums it makes itself may
  // flow on through it.
  if (!ruleOp || (user->hasAttr(tg::kUpdateAttr) &&
                  !madeByUpdate(user->getOperand(operandNumber))))
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

/// True if reducing `partial` after `user` would move more bytes than
/// reducing it now: the user broadcasts it. An op that takes all its
/// operands partial (an add) reduces them together, once.
static bool growsPartialSum(Operation *user, Value partial) {
  auto ruleOp = dyn_cast<tg::ShardingRuleOpInterface>(user);
  int64_t before = bytesOf(partial);
  if (ruleOp && ruleOp.getShardingRule().partial == ShardingRule::Partial::All) {
    before = 0;
    for (Value operand : user->getOperands())
      before += bytesOf(operand);
  }
  return bytesOf(user->getResult(0)) > before;
}

void FunctionSharder::defineLocal(Value logical, Value value,
                                  TensorSharding sharding, OpBuilder &b) {
  local[logical] = value;
  actual[logical] = sharding;
  // A partial sum stays partial only for one user that is linear in it;
  // otherwise reduce it now, once, to the sharding propagation planned.
  if (sharding.partial.empty())
    return;
  Operation *user = logical.hasOneUse() ? *logical.getUsers().begin() : nullptr;
  bool keep = user &&
              acceptsPartial(user, logical.getUses().begin()->getOperandNumber()) &&
              !isa<func::ReturnOp, func::CallOp>(user) &&
              !growsPartialSum(user, logical);
  if (keep)
    return;
  Operation *def = logical.getDefiningOp();
  Value reduced = reshard(b, logical, planned.lookup(logical),
                          def ? phaseOf(def) : Phase::forward);
  local[logical] = reduced;
  actual[logical] = planned.lookup(logical);
}

SmallVector<int64_t> FunctionSharder::paddedFactors(Operation *op,
                                                    const ShardingRule &rule,
                                                    const FactorAxes &assigned) {
  SmallVector<int64_t> padded(rule.factorSizes.size(), 0);
  for (auto [f, axes] : llvm::enumerate(assigned)) {
    if (axes.empty())
      continue;
    int64_t size = rule.factorSizes[f], parts = mesh.groupSize(axes);
    if (size % parts)
      padded[f] = llvm::divideCeil(size, parts) * parts;
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      const TensorSharding &have = actual[operand];
      for (auto [d, factors] : llvm::enumerate(rule.operands[i])) {
        if (factors.empty() || factors.front() != static_cast<int>(f) ||
            have.dims[d] != axes || !have.paddedSize(d))
          continue;
        int64_t inner = 1;
        for (int g : ArrayRef<int>(factors).drop_front())
          inner *= rule.factorSizes[g];
        int64_t factorPadded = have.paddedSize(d) / inner;
        if (have.paddedSize(d) % inner == 0 && factorPadded % parts == 0 &&
            factorPadded >= size)
          padded[f] = factorPadded;
      }
    }
    if (padded[f] == size)
      padded[f] = 0;
  }
  return padded;
}

Value FunctionSharder::maskPadding(OpBuilder &b, Value value, int64_t dim,
                                   int64_t size, ArrayRef<int> axes,
                                   int64_t padded, double fill) {
  auto key = std::make_tuple(value.getAsOpaquePointer(), dim, fill);
  if (auto cached = masks.find(key); cached != masks.end())
    return cached->second;
  // The positions of this rank's chunk of the padded dim, shaped to
  // broadcast along `dim`; those past the logical size are padding.
  Location loc = value.getLoc();
  Type i64 = b.getI64Type();
  int64_t chunk = padded / mesh.groupSize(axes);
  Value position = LocalSliceOp::create(
      b, loc, RankedTensorType::get({chunk}, i64),
      tg::IotaOp::create(b, loc, RankedTensorType::get({padded}, i64), 0),
      mesh.axisNames(b.getContext(), axes), 0);
  SmallVector<int64_t> shape(typeOf(value).getRank(), 1);
  shape[dim] = chunk;
  position = tg::ReshapeOp::create(b, loc, RankedTensorType::get(shape, i64),
                                   position);
  Value mine = tg::CompareOp::create(b, loc, tg::ComparePredicate::lt,
                                     position,
                                     tg::buildScalar(b, loc, i64, size));
  Value masked = tg::SelectOp::create(b, loc, mine, value,
                                      tg::buildScalarLike(b, loc, value, fill));
  masks[key] = masked;
  return masked;
}

Value FunctionSharder::localIndices(OpBuilder &b, Value index,
                                    ArrayRef<int> axes, int64_t padded,
                                    Value &inBlock) {
  Location loc = index.getLoc();
  Type i64 = b.getI64Type(), element = typeOf(index).getElementType();
  int64_t parts = mesh.groupSize(axes), block = padded / parts;
  // This rank's place in the group, times the block: its first position.
  Value place = LocalSliceOp::create(
      b, loc, RankedTensorType::get({1}, i64),
      tg::IotaOp::create(b, loc, RankedTensorType::get({parts}, i64), 0),
      mesh.axisNames(b.getContext(), axes), 0);
  Value start = tg::MulOp::create(
      b, loc,
      tg::ReshapeOp::create(b, loc, RankedTensorType::get({}, i64), place),
      tg::buildScalar(b, loc, i64, block));
  if (element != i64)
    start = tg::ConvertOp::create(b, loc, RankedTensorType::get({}, element),
                                  start);
  Value shifted = tg::SubOp::create(b, loc, index, start);
  inBlock = tg::AndOp::create(
      b, loc,
      tg::CompareOp::create(b, loc, tg::ComparePredicate::ge, shifted,
                            tg::buildScalar(b, loc, element, 0)),
      tg::CompareOp::create(b, loc, tg::ComparePredicate::lt, shifted,
                            tg::buildScalar(b, loc, element, block)));
  return tg::SelectOp::create(b, loc, inBlock, shifted,
                              tg::buildScalar(b, loc, element, 0));
}

Value FunctionSharder::heldByFirst(OpBuilder &b, Value value,
                                   ArrayRef<int> axes) {
  Location loc = value.getLoc();
  Type i64 = b.getI64Type();
  Value place = LocalSliceOp::create(
      b, loc, RankedTensorType::get({1}, i64),
      tg::IotaOp::create(b, loc,
                         RankedTensorType::get({mesh.groupSize(axes)}, i64), 0),
      mesh.axisNames(b.getContext(), axes), 0);
  Value first = tg::CompareOp::create(
      b, loc, tg::ComparePredicate::eq,
      tg::ReshapeOp::create(b, loc, RankedTensorType::get({}, i64), place),
      tg::buildScalar(b, loc, i64, 0));
  // A select, not a product: a whole inf or NaN stays one summand.
  return tg::SelectOp::create(b, loc, first, value,
                              tg::buildScalarLike(b, loc, value, 0.0));
}

/// `value` where `mask` holds and zero elsewhere; `mask` has the shape of
/// `value`'s leading dims (an index's shape, `value` an embedding's rows).
static Value zeroWhereNot(OpBuilder &b, Value mask, Value value) {
  Location loc = value.getLoc();
  SmallVector<int64_t> shape(typeOf(mask).getShape());
  shape.resize(typeOf(value).getRank(), 1);
  mask = tg::reshapeTo(b, loc, mask,
                       RankedTensorType::get(shape, b.getI1Type()));
  return tg::SelectOp::create(b, loc, mask, value,
                              tg::buildScalarLike(b, loc, value, 0.0));
}

/// The identity of a max over `element`: -inf, or an integer's lowest.
static double lowestOf(Type element) {
  if (isa<FloatType>(element))
    return -std::numeric_limits<double>::infinity();
  return -std::ldexp(1.0, element.getIntOrFloatBitWidth() - 1);
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
      assignFactors(rule, sources, mesh, module.parametersLead);

  // Which partial operands may stay partial.
  SmallVector<Axes> partialOf;
  SmallVector<unsigned> partialOperands;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    partialOf.push_back(actual[operand].partial);
    if (!partialOf.back().empty())
      partialOperands.push_back(i);
  }
  // The update takes whole gradients: their reduction ends the backward.
  // Partial sums the update makes itself (a global norm's) may stay so.
  bool isUpdate = op->hasAttr(tg::kUpdateAttr) &&
                  !llvm::all_of(partialOperands, [&](unsigned i) {
                    return madeByUpdate(op->getOperand(i));
                  });
  // Two or more partial sums over different axes, or beside whole values,
  // in an op that adds its operands would each be reduced here: instead
  // all operands become partial over every axis of them (a whole value held
  // by each group's first member), and one reduction serves them all later.
  SmallVector<Axes> heldByFirstOver(op->getNumOperands());
  if (rule.partial == ShardingRule::Partial::All && !isUpdate &&
      partialOperands.size() >= 2) {
    Axes all;
    for (const Axes &axes : partialOf)
      for (int a : axes)
        if (!llvm::is_contained(all, a))
          all.push_back(a);
    llvm::sort(all);
    auto usesAny = [&](ArrayRef<int> axes) {
      return llvm::any_of(axes,
                          [&](int a) { return llvm::is_contained(all, a); });
    };
    bool differ =
        llvm::any_of(partialOf, [&](const Axes &axes) { return axes != all; });
    bool free = llvm::none_of(assigned, usesAny) &&
                llvm::none_of(op->getOperands(), [&](Value operand) {
                  return usesAny(actual[operand].shardedAxes());
                });
    if (differ && free)
      for (auto [i, axes] : llvm::enumerate(partialOf)) {
        for (int a : all)
          if (!llvm::is_contained(axes, a))
            heldByFirstOver[i].push_back(a);
        axes = all;
        if (!llvm::is_contained(partialOperands, unsigned(i)))
          partialOperands.push_back(i);
      }
  }
  bool keepPartial = false;
  if (!partialOperands.empty() && !isUpdate) {
    Axes axes = partialOf[partialOperands[0]];
    bool sameAxes = llvm::all_of(
        partialOperands, [&](unsigned i) { return partialOf[i] == axes; });
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
        return llvm::is_contained(partialOf[partialOperands[0]], a);
      });
  sources.push_back({&rule.result(), &plannedResult, kResultTrailing, 0});
  FactorParts parts;
  assigned = assignFactors(rule, sources, mesh, module.parametersLead, &parts);

  SmallVector<int64_t> padded = paddedFactors(op, rule, assigned);
  // A factor in parts is never padded.
  for (auto [f, p] : llvm::enumerate(parts))
    if (p > 1)
      padded[f] = 0;
  Phase phase = phaseOf(op);
  SmallVector<Value> operands;
  Axes resultPartial;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    TensorSharding target =
        shardingFromFactors(rule.operands[i], assigned, rule, parts, padded);
    if (keepPartial)
      target.partial = actual[operand].partial;
    // A partial operand's reduction belongs to the phase that produced it.
    bool reduces = !actual[operand].partial.empty() && !keepPartial;
    Operation *def = operand.getDefiningOp();
    operands.push_back(reshard(b, operand, target,
                               reduces && def ? phaseOf(def) : phase));
    if (keepPartial && !heldByFirstOver[i].empty())
      operands.back() = heldByFirst(b, operands.back(), heldByFirstOver[i]);
    if (keepPartial && resultPartial.empty())
      resultPartial = partialOf[i];
    // The op reduces over a contracted factor: its padding must add
    // nothing (an indexed factor's padding is never addressed).
    bool max = rule.combine == ShardingRule::Combine::Max;
    for (auto [d, factors] : llvm::enumerate(rule.operands[i]))
      if (!factors.empty() && rule.isContraction(factors.front()) &&
          rule.indexOperandOf(factors.front()) < 0 && target.paddedSize(d))
        operands.back() = maskPadding(
            b, operands.back(), d, typeOf(operand).getDimSize(d),
            target.dims[d], target.paddedSize(d),
            max ? lowestOf(typeOf(operand).getElementType()) : 0.0);
  }
  // A split indexed factor: each rank serves the indices in its block. A
  // gather's other ranks' picks become zeros (the result sums over the
  // axes, as a contraction's); a scatter drops the sources it does not
  // hold.
  Value pickedHere;
  for (auto [f, indexOperand] : rule.indexed) {
    if (assigned[f].empty())
      continue;
    Value inBlock;
    operands[indexOperand] = localIndices(
        b, operands[indexOperand], assigned[f],
        padded[f] ? padded[f] : rule.factorSizes[f], inBlock);
    if (rule.isContraction(f)) {
      pickedHere = pickedHere ? tg::AndOp::create(b, op->getLoc(), pickedHere,
                                                  inBlock)
                              : inBlock;
      continue;
    }
    for (auto [i, linear] : llvm::enumerate(rule.linearIn))
      if (linear)
        operands[i] = zeroWhereNot(b, inBlock, operands[i]);
  }
  TensorSharding resultSharding =
      shardingFromFactors(rule.result(), assigned, rule, parts, padded);
  resultSharding.partial = resultPartial;
  // A max's shards combine at once; a sum's stay a partial sum.
  Axes maxAxes;
  for (auto [f, axes] : llvm::enumerate(assigned))
    if (!axes.empty() && rule.isContraction(f))
      (rule.combine == ShardingRule::Combine::Max ? maxAxes
                                                  : resultSharding.partial)
          .append(axes.begin(), axes.end());
  llvm::sort(resultSharding.partial);

  Value result = op->getResult(0);
  // Where the result is split as planned, it is padded as computed.
  TensorSharding &plan = planned[result];
  for (auto [d, axes] : llvm::enumerate(plan.dims))
    if (axes == resultSharding.dims[d])
      plan.setPadded(d, resultSharding.paddedSize(d));
  auto localShape = resultSharding.localShape(typeOf(result).getShape(), mesh);
  if (failed(localShape))
    return op->emitError("the result ")
           << typeOf(result) << " does not divide evenly into "
           << resultSharding.str(mesh);
  RankedTensorType localType =
      RankedTensorType::get(*localShape, typeOf(result).getElementType());

  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  for (NamedAttribute attr : op->getAttrs())
    if (attr.getName() != kShardingAttr)
      state.addAttribute(attr.getName(), attr.getValue());
  // A slice of whole parts of a split dim: the same parts of the local
  // ones (the rule's part factor is the sliced dim's last).
  if (auto slice = dyn_cast<tg::SliceOp>(op)) {
    int64_t d = *tg::normalizeDim(slice.getDim(), typeOf(result).getRank());
    int part = rule.operands[0][d].back();
    if (!assigned[part].empty()) {
      int64_t size = rule.factorSizes[part];
      int64_t local = size / mesh.groupSize(assigned[part]);
      int64_t start = static_cast<int64_t>(slice.getStart());
      int64_t end = static_cast<int64_t>(slice.getEnd());
      state.attributes.set(slice.getStartAttrName(),
                           b.getI64IntegerAttr(start / size * local));
      state.attributes.set(slice.getEndAttrName(),
                           b.getI64IntegerAttr(end / size * local));
    }
  }
  if (auto infer = op->getName().getRegisteredInfo()->getInterface<
                   InferTypeOpInterface>()) {
    SmallVector<Type> types;
    if (failed(infer->inferReturnTypes(
            b.getContext(), op->getLoc(), operands,
            state.attributes.getDictionary(b.getContext()),
            OpaqueProperties(nullptr), RegionRange(), types)))
      return failure();
    if (types.front() != localType)
      return op->emitError("local shape ")
             << types.front() << " differs from the planned " << localType;
  }
  state.addTypes(localType);
  Value value = b.create(state)->getResult(0);
  if (pickedHere)
    value = zeroWhereNot(b, pickedHere, value);
  if (!maxAxes.empty()) {
    llvm::sort(maxAxes);
    value = AllReduceOp::create(
        b, op->getLoc(), localType, value,
        mesh.axisNames(b.getContext(), maxAxes),
        PhaseAttr::get(b.getContext(), phase),
        b.getStringAttr(originOf(result)), Reduction::max);
  }
  defineLocal(result, value, resultSharding, b);
  return success();
}

LogicalResult FunctionSharder::rewriteCall(func::CallOp call, OpBuilder &b) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  SmallVector<std::string> origins;
  SmallVector<int> priorities;
  SmallVector<Value> operands;
  for (auto [i, operand] : llvm::enumerate(call.getOperands())) {
    // The callee's argument as propagation planned it (a partial sum is
    // reduced here, in the caller).
    FailureOr<TensorSharding> s = readPlan(
        callee.getArgAttrOfType<ShardingAttr>(i, kShardingAttr), operand,
        callee);
    if (failed(s))
      return failure();
    priorities.push_back(priority.lookup(operand));
    operands.push_back(reshard(b, operand, *s, phaseOf(call)));
    origins.push_back(originOf(operand));
  }
  SmallVector<std::string> returnedNames;
  for (Value r : call.getResults()) {
    auto it = resultOrigins.find(r);
    returnedNames.push_back(it == resultOrigins.end() ? "" : it->second);
  }
  if (failed(module.shardFunction(callee, origins, priorities, returnedNames)))
    return failure();
  auto newCall = func::CallOp::create(b, call.getLoc(), callee, operands);
  for (auto [i, logical, value] :
       llvm::enumerate(call.getResults(), newCall.getResults())) {
    local[logical] = value;
    actual[logical] = *TensorSharding::fromAttr(
        callee.getResultAttrOfType<ShardingAttr>(i, kShardingAttr), mesh,
        typeOf(logical).getRank());
    actual[logical].padUneven(typeOf(logical).getShape(), mesh);
  }
  return success();
}

LogicalResult FunctionSharder::run(ArrayRef<std::string> origins,
                                   ArrayRef<int> argPriorities,
                                   ArrayRef<std::string> returnedNames) {
  argOrigins.assign(origins.begin(), origins.end());
  Block &body = fn.getBody().front();
  Operation *ret = body.getTerminator();
  for (auto [v, name] : llvm::zip(ret->getOperands(), returnedNames))
    if (!name.empty())
      resultOrigins[v] = name;
  assignPriorities(body, argPriorities, priority);

  // The plan: arguments', results' and every op's sharding.
  SmallVector<TensorSharding> argShardings, resultShardings;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    auto s = readPlan(fn.getArgAttrOfType<ShardingAttr>(i, kShardingAttr),
                      arg, fn);
    if (failed(s))
      return failure();
    argShardings.push_back(*s);
  }
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    auto s = readPlan(fn.getResultAttrOfType<ShardingAttr>(i, kShardingAttr),
                      v, fn);
    if (failed(s))
      return failure();
    resultShardings.push_back(*s);
  }
  for (Operation &op : body.without_terminator()) {
    if (isa<func::CallOp>(op))
      continue;
    if (op.getNumResults() != 1)
      return op.emitError("the shard stage handles ops of one result");
    auto s = readPlan(op.getAttrOfType<ShardingAttr>(kShardingAttr),
                      op.getResult(0), &op);
    if (failed(s))
      return failure();
    planned[op.getResult(0)] = *s;
  }

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
  for (auto [v, target] : llvm::zip(ret->getOperands(), resultShardings)) {
    Operation *def = v.getDefiningOp();
    results.push_back(reshard(b, v, target, def ? phaseOf(def) : Phase::forward));
  }
  func::ReturnOp::create(b, ret->getLoc(), results);

  body.dropAllDefinedValueUses();
  body.erase();
  fn.setFunctionType(FunctionType::get(fn.getContext(), argTypes,
                                       ValueRange(results).getTypes()));
  return success();
}

LogicalResult ModuleSharder::shardFunction(func::FuncOp fn,
                                           ArrayRef<std::string> argOrigins,
                                           ArrayRef<int> argPriorities,
                                           ArrayRef<std::string> returnedNames) {
  return FunctionSharder(*this, fn).run(argOrigins, argPriorities,
                                        returnedNames);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct DistPartitionPass : dist::impl::DistPartitionBase<DistPartitionPass> {
  void runOnOperation() override {
    ModuleOp moduleOp = getOperation();
    if (moduleOp->hasAttr(kMeshAttr)) {
      moduleOp.emitError("the module is already partitioned");
      return signalPassFailure();
    }
    if (!moduleOp->hasAttr(kPlannedMeshAttr)) {
      moduleOp.emitError("--dist-partition needs the module's '")
          << kPlannedMeshAttr
          << "': run --dist-apply-spec and --dist-propagate first";
      return signalPassFailure();
    }
    FailureOr<Mesh> mesh = Mesh::of(moduleOp, kPlannedMeshAttr);
    func::FuncOp main = tg::getEntryFunction(moduleOp);
    if (failed(mesh) || !main)
      return signalPassFailure();
    ModuleSharder sharder{moduleOp, *mesh, {},
                          parametersLeadAxes(moduleOp, *mesh)};

    auto args = tg::getArgumentInfos(main);
    auto results = tg::getResultInfos(main);
    SmallVector<std::string> origins, returnedNames;
    SmallVector<int> priorities;
    for (const tg::GraphValueInfo &a : args) {
      origins.push_back(a.name);
      priorities.push_back(a.role == tg::Role::data ? kActivation : kParameter);
    }
    for (const tg::GraphValueInfo &r : results)
      returnedNames.push_back(r.name);

    // Without a partition, the loss's inputs are the forward.
    Value loss;
    for (auto [i, r] : llvm::enumerate(results))
      if (r.role == tg::Role::loss)
        loss = main.getBody().front().getTerminator()->getOperand(i);
    SmallVector<Value> work;
    if (loss)
      work.push_back(loss);
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (def && sharder.forwardOps.insert(def).second)
        work.append(def->operand_begin(), def->operand_end());
    }

    FunctionType logicalType = main.getFunctionType();
    if (failed(sharder.shardFunction(main, origins, priorities,
                                     returnedNames)))
      return signalPassFailure();

    // Only @main's boundary keeps its shardings (without their origins):
    // they say how each rank's tensor is a block of the logical one, whose
    // shape they give where a dim is padded.
    MLIRContext *ctx = &getContext();
    auto boundary = [&](func::FuncOp fn, ShardingAttr attr,
                        Type logical) -> Attribute {
      if (fn != main || !attr)
        return nullptr;
      ArrayRef<int64_t> shape = cast<RankedTensorType>(logical).getShape();
      TensorSharding s =
          *TensorSharding::fromAttr(attr, *mesh, shape.size());
      s.padUneven(shape, *mesh);
      bool padded = llvm::any_of(s.padded, [](int64_t p) { return p != 0; });
      return ShardingAttr::get(ctx, attr.getDims(), attr.getPartial(),
                               padded ? shape : ArrayRef<int64_t>(), {},
                               attr.getParts());
    };
    for (auto fn : moduleOp.getOps<func::FuncOp>()) {
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        if (Attribute attr = boundary(
                fn, fn.getArgAttrOfType<ShardingAttr>(i, kShardingAttr),
                fn == main ? logicalType.getInput(i) : Type()))
          fn.setArgAttr(i, kShardingAttr, attr);
        else
          fn.removeArgAttr(i, kShardingAttr);
      for (unsigned i = 0; i < fn.getNumResults(); ++i)
        if (Attribute attr = boundary(
                fn, fn.getResultAttrOfType<ShardingAttr>(i, kShardingAttr),
                fn == main ? logicalType.getResult(i) : Type()))
          fn.setResultAttr(i, kShardingAttr, attr);
        else
          fn.removeResultAttr(i, StringAttr::get(ctx, kShardingAttr));
    }
    moduleOp->setAttr(kMeshAttr, moduleOp->getAttr(kPlannedMeshAttr));
    moduleOp->removeAttr(kPlannedMeshAttr);
    moduleOp->removeAttr(kParametersLeadAttr);
  }
};

} // namespace
