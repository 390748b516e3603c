//===- ShardingRules.cpp - how each tg op's dims map to factors -----------===//
//
// The sharding rule of every op (ShardingRuleOpInterface): which dims of
// operands and result share a factor, which factors are contractions (their
// sharding leaves a partial sum) and which must stay unsharded. Composites
// keep everything replicated: they are decomposed before sharding.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include <numeric>

using namespace mlir;

namespace spmdc::tg {

int ShardingRule::addFactor(int64_t size, bool onlyReplicated) {
  factorSizes.push_back(size);
  replicatedOnly.push_back(onlyReplicated);
  return factorSizes.size() - 1;
}

bool ShardingRule::isContraction(int factor) const {
  for (const auto &result : results)
    for (const auto &dim : result)
      if (llvm::is_contained(dim, factor))
        return false;
  return true;
}

int ShardingRule::indexOperandOf(int factor) const {
  for (auto [f, operand] : indexed)
    if (f == factor)
      return operand;
  return -1;
}

namespace {
using Dims = SmallVector<SmallVector<int>>;

ArrayRef<int64_t> shapeOf(Value v) { return typeOf(v).getShape(); }

/// A rule whose partial sums pass through operand `linear` only.
void linearIn(ShardingRule &rule, ArrayRef<int> operands) {
  rule.partial = ShardingRule::Partial::Each;
  rule.linearIn.assign(rule.operands.size(), false);
  for (int i : operands)
    rule.linearIn[i] = true;
}

/// One factor per result dim; each operand's dims right-aligned against the
/// result's, a broadcast dim of size 1 spanning no factor.
ShardingRule broadcastingRule(Operation *op) {
  ShardingRule rule;
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  for (int64_t size : out)
    rule.result().push_back({rule.addFactor(size)});
  for (Value operand : op->getOperands()) {
    ArrayRef<int64_t> in = shapeOf(operand);
    Dims dims(in.size());
    int64_t lead = out.size() - in.size();
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i] == out[lead + i])
        dims[i] = rule.result()[lead + i];
    rule.operands.push_back(dims);
  }
  return rule;
}
} // namespace

ShardingRule replicatedShardingRule(Operation *op) {
  ShardingRule rule;
  for (Value operand : op->getOperands()) {
    Dims dims;
    for (int64_t size : shapeOf(operand))
      dims.push_back({rule.addFactor(size, /*replicatedOnly=*/true)});
    rule.operands.push_back(dims);
  }
  for (int64_t size : shapeOf(op->getResult(0)))
    rule.result().push_back({rule.addFactor(size, /*replicatedOnly=*/true)});
  return rule;
}

ShardingRule elementwiseShardingRule(Operation *op, bool linearInAll,
                                     ArrayRef<int> linear) {
  ShardingRule rule = broadcastingRule(op);
  if (linearInAll)
    rule.partial = ShardingRule::Partial::All;
  else if (!linear.empty())
    linearIn(rule, linear);
  return rule;
}

ShardingRule reductionShardingRule(Operation *op, ArrayRef<int64_t> dims,
                                   bool keepDim) {
  ShardingRule rule;
  Value input = op->getOperand(0);
  SmallVector<int64_t> reduced =
      normalizedDims(dims, typeOf(input).getRank());
  // Sums leave a partial sum to reduce later; a max over a sharded dim is
  // all-reduced by max at once.
  bool sum = !isa<MaxOp>(op);
  if (!sum)
    rule.combine = ShardingRule::Combine::Max;
  Dims in;
  for (auto [i, size] : llvm::enumerate(shapeOf(input))) {
    bool isReduced = llvm::is_contained(reduced, static_cast<int64_t>(i));
    int f = rule.addFactor(size);
    in.push_back({f});
    if (!isReduced)
      rule.result().push_back({f});
    else if (keepDim)
      rule.result().push_back({});
  }
  rule.operands.push_back(in);
  if (sum)
    linearIn(rule, {0});
  return rule;
}

//===--- Elementwise ops outside the unary/binary families ----------------===//

ShardingRule CompareOp::getShardingRule() {
  return elementwiseShardingRule(*this);
}

ShardingRule SelectOp::getShardingRule() {
  return elementwiseShardingRule(*this);
}

ShardingRule ConvertOp::getShardingRule() {
  ShardingRule rule = elementwiseShardingRule(*this);
  if (isa<FloatType>(getInput().getType().getElementType()) &&
      isa<FloatType>(getType().getElementType()))
    linearIn(rule, {0});
  return rule;
}

ShardingRule GeluOp::getShardingRule() {
  return elementwiseShardingRule(*this);
}

ShardingRule DropoutOp::getShardingRule() {
  // The mask is a function of the logical index: keep it whole.
  return replicatedShardingRule(*this);
}

//===--- Linear algebra ---------------------------------------------------===//

ShardingRule MatmulOp::getShardingRule() {
  ShardingRule rule;
  ArrayRef<int64_t> lhs = shapeOf(getLhs()), rhs = shapeOf(getRhs()),
                    out = shapeOf(getResult());
  int64_t batchRank = out.size() - 2;
  for (int64_t i = 0; i < batchRank; ++i)
    rule.result().push_back({rule.addFactor(out[i])});
  int m = rule.addFactor(out[batchRank]);
  int n = rule.addFactor(out[batchRank + 1]);
  int k = rule.addFactor(lhs.back());
  rule.result().push_back({m});
  rule.result().push_back({n});
  auto batchDims = [&](ArrayRef<int64_t> shape) {
    Dims dims;
    int64_t rank = shape.size() - 2, lead = batchRank - rank;
    for (int64_t i = 0; i < rank; ++i)
      dims.push_back(shape[i] == out[lead + i] ? rule.result()[lead + i]
                                               : SmallVector<int>{});
    return dims;
  };
  Dims l = batchDims(lhs);
  l.push_back({m});
  l.push_back({k});
  Dims r = batchDims(rhs);
  r.push_back({k});
  r.push_back({n});
  rule.operands = {l, r};
  linearIn(rule, {0, 1});
  return rule;
}

//===--- Shape and data movement ------------------------------------------===//

ShardingRule ReshapeOp::getShardingRule() {
  // Match dims into groups of equal product. A dim split into several (or
  // several merged into one) spans their factors, major first; only the
  // major factor of such a dim may then be sharded.
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  Dims inDims(in.size()), outDims(out.size());
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    if (i < in.size() && in[i] == 1) {
      ++i;
      continue;
    }
    if (j < out.size() && out[j] == 1) {
      ++j;
      continue;
    }
    size_t i0 = i, j0 = j;
    int64_t pin = i < in.size() ? in[i++] : 1;
    int64_t pout = j < out.size() ? out[j++] : 1;
    while (pin != pout) {
      if (pin < pout && i < in.size())
        pin *= in[i++];
      else if (j < out.size())
        pout *= out[j++];
      else
        break;
    }
    size_t nIn = i - i0, nOut = j - j0;
    if (nIn == 1 && nOut >= 1) {
      // One dim into one or more: the outer dims' factors.
      for (size_t d = j0; d < j; ++d) {
        int f = rule.addFactor(out[d], /*replicatedOnly=*/d != j0);
        outDims[d] = {f};
        inDims[i0].push_back(f);
      }
    } else if (nOut == 1) {
      for (size_t d = i0; d < i; ++d) {
        int f = rule.addFactor(in[d], /*replicatedOnly=*/d != i0);
        inDims[d] = {f};
        outDims[j0].push_back(f);
      }
    } else {
      for (size_t d = i0; d < i; ++d)
        inDims[d] = {rule.addFactor(in[d], true)};
      for (size_t d = j0; d < j; ++d)
        outDims[d] = {rule.addFactor(out[d], true)};
    }
  }
  rule.operands = {inDims};
  rule.result() = outDims;
  linearIn(rule, {0});
  return rule;
}

ShardingRule TransposeOp::getShardingRule() {
  ShardingRule rule;
  Dims in;
  for (int64_t size : shapeOf(getInput()))
    in.push_back({rule.addFactor(size)});
  for (int64_t p : getPermutation())
    rule.result().push_back(in[p]);
  rule.operands = {in};
  linearIn(rule, {0});
  return rule;
}

ShardingRule BroadcastOp::getShardingRule() {
  ShardingRule rule = broadcastingRule(*this);
  linearIn(rule, {0});
  return rule;
}

/// The largest size that cuts a dim of `size` at every one of `cuts`: a
/// slice or concat at those positions keeps whole parts of that size.
static int64_t partSize(int64_t size, ArrayRef<int64_t> cuts) {
  int64_t part = size;
  for (int64_t cut : cuts)
    part = std::gcd(part, cut);
  return part;
}

/// The factors of a dim of `count` parts of the factor `part`: the part
/// alone for one part, else a count that must stay whole, then the part.
static SmallVector<int> inParts(ShardingRule &rule, int64_t count, int part) {
  if (count == 1)
    return {part};
  return {rule.addFactor(count, true), part};
}

ShardingRule SliceOp::getShardingRule() {
  ShardingRule rule;
  int64_t dim = *normalizeDim(getDim(), getType().getRank());
  Dims in;
  for (auto [i, size] : llvm::enumerate(shapeOf(getInput()))) {
    if (static_cast<int64_t>(i) == dim) {
      // A slice of whole parts (q, k or v of a fused projection): the dim
      // is [parts, part size], the part size shared with the result, and
      // split it is served locally (the operand in parts, see
      // TensorSharding). Otherwise the sliced dim stays whole.
      int64_t length = getType().getDimSize(i);
      int64_t start = static_cast<int64_t>(getStart());
      int64_t part =
          getStep() == 1 && start >= 0 ? partSize(size, {start, length}) : 1;
      if (part > 1 && part < size) {
        int shared = rule.addFactor(part);
        in.push_back(inParts(rule, size / part, shared));
        rule.result().push_back(inParts(rule, length / part, shared));
        continue;
      }
      in.push_back({rule.addFactor(size, true)});
      rule.result().push_back({rule.addFactor(getType().getDimSize(i), true)});
      continue;
    }
    in.push_back({rule.addFactor(size)});
    rule.result().push_back(in.back());
  }
  rule.operands = {in};
  linearIn(rule, {0});
  return rule;
}

ShardingRule ConcatOp::getShardingRule() {
  ShardingRule rule;
  int64_t dim = *normalizeDim(getDim(), getType().getRank());
  // Inputs of whole parts of one size (a slice's gradient: zeros around
  // it): the dim is [parts, part size] throughout, the part size shared,
  // and split it is concatenated locally (in parts, see TensorSharding).
  SmallVector<int64_t> sizes;
  for (Value input : getInputs())
    sizes.push_back(typeOf(input).getDimSize(dim));
  int64_t total = getType().getDimSize(dim);
  int64_t part = partSize(total, sizes);
  int shared = part > 1 && part < total ? rule.addFactor(part) : -1;
  for (auto [i, size] : llvm::enumerate(getType().getShape())) {
    if (static_cast<int64_t>(i) == dim && shared >= 0)
      rule.result().push_back(inParts(rule, total / part, shared));
    else
      rule.result().push_back(
          {rule.addFactor(size, static_cast<int64_t>(i) == dim)});
  }
  for (int64_t size : sizes) {
    Dims dims = rule.result();
    dims[dim] = shared >= 0 ? inParts(rule, size / part, shared)
                            : SmallVector<int>{rule.addFactor(size, true)};
    rule.operands.push_back(dims);
  }
  rule.partial = ShardingRule::Partial::All;
  return rule;
}

ShardingRule EmbeddingOp::getShardingRule() {
  ShardingRule rule;
  // A table split by rows (a vocabulary-parallel embedding): each rank
  // looks up the indices in its rows, and the rows sum.
  int rows = rule.addFactor(getWeight().getType().getDimSize(0));
  int features = rule.addFactor(getWeight().getType().getDimSize(1));
  Dims indices;
  for (int64_t size : shapeOf(getIndices()))
    indices.push_back({rule.addFactor(size)});
  rule.result() = indices;
  rule.result().push_back({features});
  rule.operands = {{{rows}, {features}}, indices};
  rule.indexed = {{rows, 1}};
  linearIn(rule, {0});
  return rule;
}

ShardingRule EmbeddingBackwardOp::getShardingRule() {
  // Positions are contracted: sharding them leaves a partial table.
  // A table split by rows: each rank sums the positions of its rows.
  ShardingRule rule;
  int rows = rule.addFactor(getType().getDimSize(0));
  int features = rule.addFactor(getType().getDimSize(1));
  Dims indices;
  for (int64_t size : shapeOf(getIndices()))
    indices.push_back({rule.addFactor(size)});
  Dims grad = indices;
  grad.push_back({features});
  rule.operands = {grad, indices};
  rule.result() = {{rows}, {features}};
  rule.indexed = {{rows, 1}};
  linearIn(rule, {0});
  return rule;
}

ShardingRule GatherOp::getShardingRule() {
  ShardingRule rule;
  int64_t dim = *normalizeDim(getDim(), getType().getRank());
  Dims input, index;
  for (auto [i, size] : llvm::enumerate(shapeOf(getInput()))) {
    int64_t indexSize = getIndex().getType().getDimSize(i);
    if (static_cast<int64_t>(i) == dim) {
      // The gathered dim split (a vocabulary-split logit): each rank picks
      // the indices in its block, and the picks sum.
      input.push_back({rule.addFactor(size)});
      rule.indexed.push_back({input.back().front(), 1});
      index.push_back({rule.addFactor(indexSize)});
    } else if (indexSize != size) {
      input.push_back({rule.addFactor(size, true)});
      index.push_back({rule.addFactor(indexSize, true)});
    } else {
      input.push_back({rule.addFactor(size)});
      index.push_back(input.back());
    }
  }
  rule.operands = {input, index};
  rule.result() = index;
  linearIn(rule, {0});
  return rule;
}

ShardingRule ScatterAddOp::getShardingRule() {
  ShardingRule rule;
  int64_t dim = *normalizeDim(getDim(), getType().getRank());
  Dims source, result;
  for (auto [i, size] : llvm::enumerate(getType().getShape())) {
    int64_t sourceSize = getSource().getType().getDimSize(i);
    if (static_cast<int64_t>(i) == dim) {
      // The scattered dim: source positions are contracted into the result;
      // a rank holding a block of it adds the sources indexed into it.
      result.push_back({rule.addFactor(size)});
      rule.indexed.push_back({result.back().front(), 0});
      source.push_back({rule.addFactor(sourceSize)});
    } else if (sourceSize != size) {
      result.push_back({rule.addFactor(size, true)});
      source.push_back({rule.addFactor(sourceSize, true)});
    } else {
      result.push_back({rule.addFactor(size)});
      source.push_back(result.back());
    }
  }
  rule.operands = {source, source};
  rule.result() = result;
  linearIn(rule, {1});
  return rule;
}

//===--- Factories: computed whole on every rank --------------------------===//

ShardingRule IotaOp::getShardingRule() { return replicatedShardingRule(*this); }
ShardingRule FullOp::getShardingRule() { return replicatedShardingRule(*this); }
ShardingRule ConstantOp::getShardingRule() {
  return replicatedShardingRule(*this);
}
ShardingRule RandUniformOp::getShardingRule() {
  return replicatedShardingRule(*this);
}

//===--- Composites: decomposed before sharding ---------------------------===//

ShardingRule LinearOp::getShardingRule() { return replicatedShardingRule(*this); }
ShardingRule LayerNormOp::getShardingRule() {
  return replicatedShardingRule(*this);
}
ShardingRule RmsNormOp::getShardingRule() {
  return replicatedShardingRule(*this);
}
ShardingRule CrossEntropyOp::getShardingRule() {
  return replicatedShardingRule(*this);
}
ShardingRule ScaledDotProductAttentionOp::getShardingRule() {
  return replicatedShardingRule(*this);
}

} // namespace spmdc::tg
