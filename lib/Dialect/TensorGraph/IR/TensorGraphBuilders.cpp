//===- TensorGraphBuilders.cpp - small builders of tg subgraphs -----------===//

#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

using namespace mlir;

namespace spmdc::tg {

Value buildScalar(OpBuilder &b, Location loc, Type elementType, double value) {
  return FullOp::create(b, loc, RankedTensorType::get({}, elementType),
                        b.getF64FloatAttr(value));
}

Value buildScalarLike(OpBuilder &b, Location loc, Value like, double value) {
  return buildScalar(b, loc, typeOf(like).getElementType(), value);
}

Value buildZeros(OpBuilder &b, Location loc, RankedTensorType type) {
  return FullOp::create(b, loc, type, b.getF64FloatAttr(0.0));
}

Value reshapeTo(OpBuilder &b, Location loc, Value value,
                RankedTensorType type) {
  if (typeOf(value).getShape() == type.getShape())
    return value;
  return ReshapeOp::create(
      b, loc,
      RankedTensorType::get(type.getShape(), typeOf(value).getElementType()),
      value);
}

Value transposeLastTwo(OpBuilder &b, Location loc, Value value) {
  int64_t rank = typeOf(value).getRank();
  auto perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 2], perm[rank - 1]);
  return TransposeOp::create(b, loc, value, perm);
}

bool swapsLastTwo(TransposeOp transpose) {
  ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = static_cast<int64_t>(perm.size());
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return false;
  for (int64_t d = 0; d < rank - 2; ++d)
    if (perm[d] != d)
      return false;
  return true;
}

std::pair<Value, bool> peelTransposes(Value value) {
  bool transposed = false;
  while (auto transpose = value.getDefiningOp<TransposeOp>()) {
    if (!swapsLastTwo(transpose))
      break;
    value = transpose.getInput();
    transposed = !transposed;
  }
  return {value, transposed};
}

void eraseDeadTransposes(ArrayRef<Value> values) {
  SmallVector<Operation *> work;
  for (Value value : values)
    if (Operation *def = value.getDefiningOp())
      work.push_back(def);
  // One transpose may define several of `values`, or feed another of them.
  llvm::SmallPtrSet<Operation *, 4> erased;
  while (!work.empty()) {
    Operation *dead = work.pop_back_val();
    if (erased.contains(dead) || !isa<TransposeOp>(dead) || !dead->use_empty())
      continue;
    Value input = dead->getOperand(0);
    erased.insert(dead);
    dead->erase();
    if (Operation *def = input.getDefiningOp())
      work.push_back(def);
  }
}

Value sumToShape(OpBuilder &b, Location loc, Value grad,
                 RankedTensorType target) {
  RankedTensorType type = typeOf(grad);
  if (type.getShape() == target.getShape())
    return grad;
  int64_t leading = type.getRank() - target.getRank();
  SmallVector<int64_t> dims;
  // Summing a dim of size 1 only drops it: the reshape below does that
  // without a copy.
  for (int64_t i = 0; i < type.getRank(); ++i)
    if ((i < leading && type.getDimSize(i) != 1) ||
        (i >= leading && target.getDimSize(i - leading) == 1 &&
         type.getDimSize(i) != 1))
      dims.push_back(i);
  Value summed = grad;
  // A scatter into zeros only places its source's values: summed over the
  // scattered dim, it is its source summed (a gather's gradient summed
  // over the gathered dim, as in a log-softmax's gradient, needs no pass
  // over that dim, which may be a vocabulary split over ranks).
  if (auto scatter = grad.getDefiningOp<ScatterAddOp>()) {
    RankedTensorType source = typeOf(scatter.getSource());
    int64_t scattered = *normalizeDim(scatter.getDim(), type.getRank());
    bool keptEqual = true;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (!llvm::is_contained(dims, i) &&
          source.getDimSize(i) != type.getDimSize(i))
        keptEqual = false;
    if (llvm::is_contained(dims, scattered) && keptEqual) {
      SmallVector<int64_t> sourceDims;
      for (int64_t i : dims)
        if (source.getDimSize(i) != 1)
          sourceDims.push_back(i);
      Value from = scatter.getSource();
      if (!sourceDims.empty())
        from = SumOp::create(b, loc, from, sourceDims, /*keepdim=*/true);
      return reshapeTo(b, loc, from, target);
    }
  }
  if (!dims.empty())
    summed = SumOp::create(b, loc, grad, dims, /*keepdim=*/true);
  return reshapeTo(b, loc, summed, target);
}

Value padAlongDim(OpBuilder &b, Location loc, Value value, int64_t dim,
                  int64_t before, int64_t after, double fill) {
  RankedTensorType type = typeOf(value);
  auto block = [&](int64_t size) -> Value {
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] = size;
    return FullOp::create(b, loc,
                          RankedTensorType::get(shape, type.getElementType()),
                          b.getF64FloatAttr(fill));
  };
  SmallVector<Value> pieces;
  if (before > 0)
    pieces.push_back(block(before));
  pieces.push_back(value);
  if (after > 0)
    pieces.push_back(block(after));
  if (pieces.size() == 1)
    return value;
  return ConcatOp::create(b, loc, pieces, dim);
}

Value spreadAlongDim(OpBuilder &b, Location loc, Value value, int64_t dim,
                     int64_t step) {
  RankedTensorType type = typeOf(value);
  int64_t size = type.getDimSize(dim);
  if (step == 1 || size == 0)
    return value;
  // [.., k, ..] -> [.., k, 1, ..] -> [.., k, step, ..] (zeros after each)
  // -> [.., k * step, ..] -> the first (k - 1) * step + 1.
  SmallVector<int64_t> split(type.getShape());
  split.insert(split.begin() + dim + 1, 1);
  Value column = ReshapeOp::create(
      b, loc, RankedTensorType::get(split, type.getElementType()), value);
  Value padded = padAlongDim(b, loc, column, dim + 1, 0, step - 1);
  SmallVector<int64_t> merged(type.getShape());
  merged[dim] = size * step;
  Value flat = ReshapeOp::create(
      b, loc, RankedTensorType::get(merged, type.getElementType()), padded);
  return SliceOp::create(b, loc, flat, dim, 0, (size - 1) * step + 1, 1);
}

SmallVector<int64_t> normalizedDims(ArrayRef<int64_t> dims, int64_t rank) {
  SmallVector<int64_t> result;
  for (int64_t d : dims)
    result.push_back(d < 0 ? d + rank : d);
  return result;
}

RankedTensorType keepDimType(RankedTensorType input, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> shape(input.getShape());
  for (int64_t d : normalizedDims(dims, input.getRank()))
    shape[d] = 1;
  return RankedTensorType::get(shape, input.getElementType());
}

Value GraphMath::add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
Value GraphMath::sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
Value GraphMath::mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
Value GraphMath::div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
Value GraphMath::neg(Value x) { return NegOp::create(b, loc, x); }

Value GraphMath::scalar(Value like, double value) {
  return buildScalarLike(b, loc, like, value);
}

Value GraphMath::compare(ComparePredicate predicate, Value x, Value y) {
  return CompareOp::create(b, loc, predicate, x, y);
}

Value GraphMath::select(Value condition, Value x, Value y) {
  return SelectOp::create(b, loc, condition, x, y);
}

Value GraphMath::sum(Value x, ArrayRef<int64_t> dims, bool keepDim) {
  return SumOp::create(b, loc, x, dims, keepDim);
}

Value GraphMath::max(Value x, ArrayRef<int64_t> dims, bool keepDim) {
  return MaxOp::create(b, loc, x, dims, keepDim);
}

Value GraphMath::mean(Value x, ArrayRef<int64_t> dims, bool keepDim) {
  int64_t count = 1;
  for (int64_t d : normalizedDims(dims, typeOf(x).getRank()))
    count *= typeOf(x).getDimSize(d);
  return mul(sum(x, dims, keepDim), scalar(x, 1.0 / count));
}

} // namespace spmdc::tg
