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

Value sumToShape(OpBuilder &b, Location loc, Value grad,
                 RankedTensorType target) {
  RankedTensorType type = typeOf(grad);
  if (type.getShape() == target.getShape())
    return grad;
  int64_t leading = type.getRank() - target.getRank();
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (i < leading ||
        (target.getDimSize(i - leading) == 1 && type.getDimSize(i) != 1))
      dims.push_back(i);
  Value summed = grad;
  if (!dims.empty())
    summed = SumOp::create(b, loc, grad, dims, /*keepdim=*/true);
  return reshapeTo(b, loc, summed, target);
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

} // namespace spmdc::tg
