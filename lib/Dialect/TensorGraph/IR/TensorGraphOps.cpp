//===- TensorGraphOps.cpp - shape rules and verifiers of tg ops -----------===//
//
// Each op's `inferReturnTypes` is the one statement of its shape rule: the
// importers build ops without result types through it, and the verifier
// checks written result types against it.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace spmdc::tg {

FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return failure();
    result[i] = da == 1 ? db : da;
  }
  return result;
}

FailureOr<int64_t> normalizeDim(int64_t dim, int64_t rank) {
  if (dim < -rank || dim >= std::max<int64_t>(rank, 1))
    return failure();
  return dim < 0 ? dim + rank : dim;
}

namespace {
std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

/// The ranked tensor type of an operand. The parser runs the shape rules
/// before the verifier has checked operand types, so an operand written
/// with another type (`i64`) reads as a rank-0 tensor of i1: the rule
/// refuses it or the verifier's operand check does, a diagnostic at the op
/// instead of a crash (found by fuzz/mlir-import-fuzzer.cpp).
RankedTensorType tensorOf(Value v) {
  if (auto tensor = llvm::dyn_cast<RankedTensorType>(v.getType()))
    return tensor;
  return RankedTensorType::get({}, IntegerType::get(v.getContext(), 1));
}
} // namespace

/// Broadcast of all `operands`; the element type is the first operand's
/// unless `elementType` is given (compare gives i1).
static LogicalResult inferBroadcastResult(std::optional<Location> loc,
                                          ArrayRef<Value> operands,
                                          Type elementType,
                                          SmallVectorImpl<Type> &types) {
  Type operandElement = tensorOf(operands.front()).getElementType();
  SmallVector<int64_t> shape;
  for (Value operand : operands) {
    RankedTensorType type = tensorOf(operand);
    if (type.getElementType() != operandElement)
      return emitOptionalError(loc, "operand element types differ: ",
                               operandElement, " vs ", type.getElementType());
    auto broadcast = broadcastShapes(shape, type.getShape());
    if (failed(broadcast))
      return emitOptionalError(loc, "shapes ", shapeString(shape), " and ",
                               shapeString(type.getShape()),
                               " do not broadcast");
    shape = *broadcast;
  }
  types.push_back(RankedTensorType::get(
      shape, elementType ? elementType : operandElement));
  return success();
}

static LogicalResult inferReductionResult(std::optional<Location> loc,
                                          Value input, ArrayRef<int64_t> dims,
                                          bool keepDim,
                                          SmallVectorImpl<Type> &types) {
  RankedTensorType type = tensorOf(input);
  int64_t rank = type.getRank();
  SmallVector<bool> reduced(rank, false);
  for (int64_t dim : dims) {
    auto d = normalizeDim(dim, rank);
    if (failed(d) || rank == 0)
      return emitOptionalError(loc, "reduction dim ", dim,
                               " is out of range for rank ", rank);
    if (reduced[*d])
      return emitOptionalError(loc, "reduction dim ", dim, " is repeated");
    reduced[*d] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      shape.push_back(type.getDimSize(i));
    else if (keepDim)
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

static LogicalResult inferSameAsInputWithDim(std::optional<Location> loc,
                                             Value input, int64_t dim,
                                             SmallVectorImpl<Type> &types) {
  RankedTensorType type = tensorOf(input);
  if (failed(normalizeDim(dim, type.getRank())) || type.getRank() == 0)
    return emitOptionalError(loc, "dim ", dim, " is out of range for rank ",
                             type.getRank());
  types.push_back(type);
  return success();
}

/// Checks that `weight` matches the trailing dims of `input` (norm ops).
static LogicalResult checkTrailingShape(std::optional<Location> loc,
                                        RankedTensorType input,
                                        RankedTensorType weight,
                                        StringRef what) {
  if (weight.getElementType() != input.getElementType())
    return emitOptionalError(loc, what, " element type ",
                             weight.getElementType(), " differs from input ",
                             input.getElementType());
  if (weight.getRank() > input.getRank() || weight.getRank() == 0 ||
      input.getShape().take_back(weight.getRank()) != weight.getShape())
    return emitOptionalError(loc, what, " shape ",
                             shapeString(weight.getShape()),
                             " is not a trailing part of input shape ",
                             shapeString(input.getShape()));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape rules
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  if (!adaptor.getPredicateAttr())
    return emitOptionalError(loc, "requires attribute 'predicate'");
  return inferBroadcastResult(loc, {adaptor.getLhs(), adaptor.getRhs()},
                              IntegerType::get(context, 1), types);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  SmallVector<Type> valueTypes;
  if (failed(inferBroadcastResult(
          loc, {adaptor.getOnTrue(), adaptor.getOnFalse()}, nullptr,
          valueTypes)))
    return failure();
  auto shape = broadcastShapes(
      llvm::cast<RankedTensorType>(valueTypes[0]).getShape(),
      tensorOf(adaptor.getCondition()).getShape());
  if (failed(shape))
    return emitOptionalError(loc, "condition shape does not broadcast with "
                                  "the values");
  types.push_back(RankedTensorType::get(
      *shape, tensorOf(adaptor.getOnTrue()).getElementType()));
  return success();
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  RankedTensorType lhs = tensorOf(adaptor.getLhs());
  RankedTensorType rhs = tensorOf(adaptor.getRhs());
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "matmul operands need rank >= 2, got ",
                             lhs.getRank(), " and ", rhs.getRank());
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "matmul element types differ: ",
                             lhs.getElementType(), " vs ",
                             rhs.getElementType());
  int64_t k = lhs.getShape().back();
  int64_t k2 = rhs.getShape()[rhs.getRank() - 2];
  if (k != k2)
    return emitOptionalError(loc, "matmul contracting dims differ: lhs ",
                             shapeString(lhs.getShape()), " rhs ",
                             shapeString(rhs.getShape()));
  auto batch = broadcastShapes(lhs.getShape().drop_back(2),
                               rhs.getShape().drop_back(2));
  if (failed(batch))
    return emitOptionalError(loc, "matmul batch dims do not broadcast");
  SmallVector<int64_t> shape = *batch;
  shape.push_back(lhs.getShape()[lhs.getRank() - 2]);
  shape.push_back(rhs.getShape().back());
  types.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (!adaptor.getPermutationAttr())
    return emitOptionalError(loc, "requires attribute 'permutation'");
  RankedTensorType type = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if (static_cast<int64_t>(perm.size()) != type.getRank())
    return emitOptionalError(loc, "permutation has ", perm.size(),
                             " entries for rank ", type.getRank());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= type.getRank() || seen[p])
      return emitOptionalError(loc, "permutation ", shapeString(perm),
                               " is not a permutation of 0..",
                               type.getRank() - 1);
    seen[p] = true;
    shape.push_back(type.getDimSize(p));
  }
  types.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  // Looked up by name first: the adaptor's getters find a required
  // attribute by its position among all four, and read out of range when
  // some are missing (a node without them; found by fuzzing).
  DictionaryAttr attrs = adaptor.getAttributes();
  if (!attrs || !attrs.get("dim") || !attrs.get("start") || !attrs.get("end") ||
      !attrs.get("step") || !adaptor.getDimAttr() || !adaptor.getStartAttr() ||
      !adaptor.getEndAttr() || !adaptor.getStepAttr())
    return emitOptionalError(loc, "requires attributes 'dim', 'start', 'end' "
                                  "and 'step'");
  RankedTensorType type = tensorOf(adaptor.getInput());
  auto dim = normalizeDim(adaptor.getDim(), type.getRank());
  if (failed(dim) || type.getRank() == 0)
    return emitOptionalError(loc, "slice dim ", adaptor.getDim(),
                             " is out of range for rank ", type.getRank());
  int64_t size = type.getDimSize(*dim);
  int64_t start = adaptor.getStart(), end = adaptor.getEnd(),
          step = adaptor.getStep();
  if (step < 1 || start < 0 || start > end || end > size)
    return emitOptionalError(loc, "slice [", start, ":", end, ":", step,
                             "] is invalid for a dim of size ", size);
  SmallVector<int64_t> shape(type.getShape());
  shape[*dim] = (end - start + step - 1) / step;
  types.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (!adaptor.getDimAttr())
    return emitOptionalError(loc, "requires attribute 'dim'");
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "concat needs at least one input");
  RankedTensorType first = tensorOf(adaptor.getInputs().front());
  auto dim = normalizeDim(adaptor.getDim(), first.getRank());
  if (failed(dim) || first.getRank() == 0)
    return emitOptionalError(loc, "concat dim ", adaptor.getDim(),
                             " is out of range for rank ", first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  shape[*dim] = 0;
  for (Value input : adaptor.getInputs()) {
    RankedTensorType type = tensorOf(input);
    if (type.getElementType() != first.getElementType() ||
        type.getRank() != first.getRank())
      return emitOptionalError(loc, "concat inputs differ in rank or "
                                    "element type");
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (i != *dim && type.getDimSize(i) != first.getDimSize(i))
        return emitOptionalError(loc, "concat inputs differ in dim ", i,
                                 ": ", shapeString(first.getShape()), " vs ",
                                 shapeString(type.getShape()));
    shape[*dim] += type.getDimSize(*dim);
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType weight = tensorOf(adaptor.getWeight());
  if (weight.getRank() != 2)
    return emitOptionalError(loc, "embedding weight must be [V, D], got ",
                             shapeString(weight.getShape()));
  SmallVector<int64_t> shape(tensorOf(adaptor.getIndices()).getShape());
  shape.push_back(weight.getDimSize(1));
  types.push_back(RankedTensorType::get(shape, weight.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (!adaptor.getDimAttr())
    return emitOptionalError(loc, "requires attribute 'dim'");
  RankedTensorType input = tensorOf(adaptor.getInput());
  RankedTensorType index = tensorOf(adaptor.getIndex());
  auto dim = normalizeDim(adaptor.getDim(), input.getRank());
  if (failed(dim) || input.getRank() == 0)
    return emitOptionalError(loc, "gather dim ", adaptor.getDim(),
                             " is out of range for rank ", input.getRank());
  if (index.getRank() != input.getRank())
    return emitOptionalError(loc, "gather index rank ", index.getRank(),
                             " differs from input rank ", input.getRank());
  for (int64_t i = 0; i < input.getRank(); ++i)
    if (i != *dim && index.getDimSize(i) > input.getDimSize(i))
      return emitOptionalError(loc, "gather index dim ", i,
                               " is larger than the input's");
  types.push_back(
      RankedTensorType::get(index.getShape(), input.getElementType()));
  return success();
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  if (!adaptor.getValueAttr())
    return emitOptionalError(loc, "requires attribute 'value'");
  types.push_back(adaptor.getValue().getType());
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  RankedTensorType weight = tensorOf(adaptor.getWeight());
  if (input.getRank() < 1 || weight.getRank() != 2)
    return emitOptionalError(loc, "linear needs input [..., in] and weight "
                                  "[out, in], got ",
                             shapeString(input.getShape()), " and ",
                             shapeString(weight.getShape()));
  if (input.getShape().back() != weight.getDimSize(1))
    return emitOptionalError(loc, "linear input features ",
                             input.getShape().back(),
                             " differ from weight in-features ",
                             weight.getDimSize(1));
  if (input.getElementType() != weight.getElementType())
    return emitOptionalError(loc, "linear element types differ");
  if (Value bias = adaptor.getBias()) {
    RankedTensorType b = tensorOf(bias);
    if (b.getRank() != 1 || b.getDimSize(0) != weight.getDimSize(0) ||
        b.getElementType() != input.getElementType())
      return emitOptionalError(loc, "linear bias must be [",
                               weight.getDimSize(0), "], got ",
                               shapeString(b.getShape()));
  }
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = weight.getDimSize(0);
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  if (failed(checkTrailingShape(loc, input, tensorOf(adaptor.getWeight()),
                                "layer_norm weight")) ||
      failed(checkTrailingShape(loc, input, tensorOf(adaptor.getBias()),
                                "layer_norm bias")))
    return failure();
  if (tensorOf(adaptor.getBias()).getShape() !=
      tensorOf(adaptor.getWeight()).getShape())
    return emitOptionalError(loc, "layer_norm weight and bias shapes differ");
  types.push_back(input);
  return success();
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  if (failed(checkTrailingShape(loc, input, tensorOf(adaptor.getWeight()),
                                "rms_norm weight")))
    return failure();
  types.push_back(input);
  return success();
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  RankedTensorType logits = tensorOf(adaptor.getLogits());
  RankedTensorType labels = tensorOf(adaptor.getLabels());
  if (logits.getRank() < 1 ||
      logits.getShape().drop_back() != labels.getShape())
    return emitOptionalError(loc, "cross_entropy labels shape ",
                             shapeString(labels.getShape()),
                             " must be the logits shape ",
                             shapeString(logits.getShape()),
                             " without its last (class) dim");
  types.push_back(RankedTensorType::get({}, logits.getElementType()));
  return success();
}

LogicalResult ScaledDotProductAttentionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  RankedTensorType q = tensorOf(adaptor.getQuery());
  RankedTensorType k = tensorOf(adaptor.getKey());
  RankedTensorType v = tensorOf(adaptor.getValue());
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4)
    return emitOptionalError(loc, "sdpa operands must be [B, H, S, D]");
  if (q.getElementType() != k.getElementType() ||
      q.getElementType() != v.getElementType())
    return emitOptionalError(loc, "sdpa element types differ");
  int64_t heads = q.getDimSize(1), kvHeads = k.getDimSize(1);
  if (k.getDimSize(0) != q.getDimSize(0) || v.getDimSize(0) != q.getDimSize(0))
    return emitOptionalError(loc, "sdpa batch sizes differ");
  if (v.getDimSize(1) != kvHeads || kvHeads == 0 || heads % kvHeads != 0)
    return emitOptionalError(loc, "sdpa key/value heads (", kvHeads,
                             ") must be equal and divide query heads (",
                             heads, ")");
  if (k.getDimSize(3) != q.getDimSize(3))
    return emitOptionalError(loc, "sdpa query and key head dims differ");
  if (k.getDimSize(2) != v.getDimSize(2))
    return emitOptionalError(loc, "sdpa key and value lengths differ");
  if (adaptor.getMask()) {
    // The mask broadcasts NumPy-style to the scores [B, H, S, S2].
    RankedTensorType mask = tensorOf(adaptor.getMask());
    SmallVector<int64_t> scores = {q.getDimSize(0), heads, q.getDimSize(2),
                                   k.getDimSize(2)};
    bool fits = mask.getRank() <= 4;
    for (int64_t i = 0; fits && i < mask.getRank(); ++i) {
      int64_t m = mask.getDimSize(mask.getRank() - 1 - i);
      fits = m == 1 || m == scores[3 - i];
    }
    if (!fits)
      return emitOptionalError(
          loc, "sdpa mask of shape ", shapeString(mask.getShape()),
          " does not broadcast to the scores ", shapeString(scores));
    if (!mask.getElementType().isInteger(1) &&
        mask.getElementType() != q.getElementType())
      return emitOptionalError(loc, "sdpa mask must be i1 or the query's "
                                    "element type");
  }
  types.push_back(RankedTensorType::get(
      {q.getDimSize(0), heads, q.getDimSize(2), v.getDimSize(3)},
      q.getElementType()));
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Verifiers of ops with a written result type
//===----------------------------------------------------------------------===//

LogicalResult ConvertOp::verify() {
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError("changes the shape from ")
           << shapeString(getInput().getType().getShape()) << " to "
           << shapeString(getType().getShape());
  return success();
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("changes the element type");
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("from ") << shapeString(in.getShape()) << " to "
                                << shapeString(out.getShape())
                                << " changes the element count";
  return success();
}

LogicalResult BroadcastOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("changes the element type");
  auto shape = broadcastShapes(in.getShape(), out.getShape());
  if (failed(shape) || ArrayRef<int64_t>(*shape) != out.getShape())
    return emitOpError("cannot broadcast ")
           << shapeString(in.getShape()) << " to "
           << shapeString(out.getShape());
  return success();
}

LogicalResult ScatterAddOp::verify() {
  RankedTensorType index = getIndex().getType(), source = getSource().getType(),
                   out = getType();
  if (index.getShape() != source.getShape() ||
      index.getRank() != out.getRank())
    return emitOpError("needs index and source of one shape and the "
                       "result's rank");
  if (failed(normalizeDim(getDim(), out.getRank())) || out.getRank() == 0)
    return emitOpError("dim ") << getDim() << " is out of range";
  if (source.getElementType() != out.getElementType())
    return emitOpError("changes the element type");
  return success();
}

LogicalResult EmbeddingBackwardOp::verify() {
  RankedTensorType grad = getGrad().getType(), out = getType();
  ArrayRef<int64_t> indices = getIndices().getType().getShape();
  if (out.getRank() != 2 || grad.getShape().drop_back() != indices ||
      grad.getShape().back() != out.getDimSize(1))
    return emitOpError("needs grad of indices.shape + [D] and a [V, D] "
                       "result");
  return success();
}

LogicalResult IotaOp::verify() {
  if (failed(normalizeDim(getDim(), getType().getRank())) ||
      getType().getRank() == 0)
    return emitOpError("dim ") << getDim() << " is out of range for rank "
                               << getType().getRank();
  return success();
}

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

LogicalResult DropoutOp::verify() {
  if (getP().convertToDouble() < 0.0 || getP().convertToDouble() >= 1.0)
    return emitOpError("p must be in [0, 1), got ")
           << getP().convertToDouble();
  return success();
}

} // namespace spmdc::tg

#define GET_OP_CLASSES
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphOps.cpp.inc"
