//===- DistDialect.cpp - the dist dialect and its verifiers ---------------===//

#include "spmdc/Dialect/Dist/IR/Dist.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace spmdc::dist;

#include "spmdc/Dialect/Dist/IR/DistOpsDialect.cpp.inc"
#include "spmdc/Dialect/Dist/IR/DistEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "spmdc/Dialect/Dist/IR/DistAttrs.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "spmdc/Dialect/Dist/IR/DistOpsTypes.cpp.inc"

void DistDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "spmdc/Dialect/Dist/IR/DistOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "spmdc/Dialect/Dist/IR/DistAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "spmdc/Dialect/Dist/IR/DistOpsTypes.cpp.inc"
      >();
}

/// Axis names: a list of strings, none twice.
static bool isAxisList(Attribute attr, llvm::StringSet<> &seen) {
  auto list = llvm::dyn_cast<ArrayAttr>(attr);
  if (!list)
    return false;
  for (Attribute a : list) {
    auto name = llvm::dyn_cast<StringAttr>(a);
    if (!name || !seen.insert(name.getValue()).second)
      return false;
  }
  return true;
}

LogicalResult
ShardingAttr::verify(llvm::function_ref<InFlightDiagnostic()> emitError,
                     ArrayAttr dims, ArrayAttr partial,
                     ArrayRef<int64_t> logical, StringAttr origin,
                     ArrayRef<int64_t> parts) {
  llvm::StringSet<> seen;
  for (Attribute d : dims)
    if (!isAxisList(d, seen))
      return emitError() << "expects dims as lists of mesh axis names, each "
                            "axis used once, got "
                         << dims;
  if (partial && !isAxisList(partial, seen))
    return emitError() << "expects partial as a list of mesh axis names "
                          "that no dim uses, got "
                       << partial;
  if (!logical.empty() && logical.size() != dims.size())
    return emitError() << "expects a logical shape of " << dims.size()
                       << " dims, got " << logical.size();
  if (llvm::any_of(logical, [](int64_t size) { return size < 0; }))
    return emitError() << "expects a logical shape of sizes >= 0";
  if (!parts.empty() && parts.size() != dims.size())
    return emitError() << "expects parts for each of the " << dims.size()
                       << " dims, got " << parts.size();
  if (llvm::any_of(parts, [](int64_t p) { return p < 1; }))
    return emitError() << "expects parts >= 1";
  return success();
}

/// The group size of `axes` in the op's mesh, or failure with an error.
static FailureOr<int64_t> groupSizeOf(Operation *op, ArrayAttr axes) {
  FailureOr<Mesh> mesh = Mesh::of(op);
  if (failed(mesh))
    return failure();
  auto indices = mesh->axisIndices(axes);
  if (failed(indices) || indices->empty())
    return op->emitOpError("needs a non-empty list of mesh axes, got ")
           << axes;
  return mesh->groupSize(*indices);
}

/// Checks `result` = `input` with dim `dim` multiplied (or divided, when
/// `grows` is false) by the group size.
static LogicalResult verifyResize(Operation *op, ArrayAttr axes, int64_t dim,
                                  RankedTensorType input,
                                  RankedTensorType result, bool grows) {
  FailureOr<int64_t> group = groupSizeOf(op, axes);
  if (failed(group))
    return failure();
  if (input.getElementType() != result.getElementType() ||
      input.getRank() != result.getRank())
    return op->emitOpError("changes the rank or element type");
  if (dim < 0 || dim >= input.getRank())
    return op->emitOpError("dim ") << dim << " is out of range";
  for (int64_t i = 0; i < input.getRank(); ++i) {
    int64_t in = input.getDimSize(i), out = result.getDimSize(i);
    bool ok = i != dim ? in == out
                       : (grows ? out == in * *group : in == out * *group);
    if (!ok)
      return op->emitOpError("expects dim ")
             << i << " to be " << (i != dim ? "unchanged" : grows ? "multiplied" : "divided")
             << (i != dim ? "" : " by the group size ")
             << (i != dim ? "" : std::to_string(*group)) << ", got " << in
             << " -> " << out;
  }
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (failed(groupSizeOf(*this, getAxes())))
    return failure();
  if (getInput().getType() != getType())
    return emitOpError("changes the type");
  return success();
}

LogicalResult AllGatherOp::verify() {
  return verifyResize(*this, getAxes(), getDim(), getInput().getType(),
                      getType(), /*grows=*/true);
}

LogicalResult ReduceScatterOp::verify() {
  return verifyResize(*this, getAxes(), getDim(), getInput().getType(),
                      getType(), /*grows=*/false);
}

LogicalResult LocalSliceOp::verify() {
  return verifyResize(*this, getAxes(), getDim(), getInput().getType(),
                      getType(), /*grows=*/false);
}

/// An all-to-all's types: `split` divided by the group, `concat` multiplied.
static LogicalResult verifyExchange(Operation *op, ArrayAttr axes,
                                    int64_t split, int64_t concat,
                                    RankedTensorType in, RankedTensorType out) {
  FailureOr<int64_t> group = groupSizeOf(op, axes);
  if (failed(group))
    return failure();
  if (split < 0 || split >= in.getRank() || concat < 0 ||
      concat >= in.getRank() || split == concat)
    return op->emitOpError("needs two different dims in range");
  SmallVector<int64_t> expected(in.getShape());
  if (expected[split] % *group != 0)
    return op->emitOpError("split dim does not divide by the group size");
  expected[split] /= *group;
  expected[concat] *= *group;
  if (out.getShape() != ArrayRef<int64_t>(expected) ||
      out.getElementType() != in.getElementType())
    return op->emitOpError("result type does not match the exchange");
  return success();
}

LogicalResult AllToAllOp::verify() {
  return verifyExchange(*this, getAxes(), getSplitDim(), getConcatDim(),
                        getInput().getType(), getType());
}

// The starts check what their blocking forms check, against the pending
// result type, and that one dist.wait takes what they start.

static LogicalResult verifyWaitedOnce(Operation *start) {
  if (!start->getResult(0).hasOneUse())
    return start->emitOpError("expects one dist.wait of what it starts");
  return success();
}

LogicalResult StartAllReduceOp::verify() {
  if (failed(verifyWaitedOnce(*this)))
    return failure();
  if (failed(groupSizeOf(*this, getAxes())))
    return failure();
  if (getInput().getType() != getResultType())
    return emitOpError("changes the type");
  return success();
}

LogicalResult StartAllGatherOp::verify() {
  if (failed(verifyWaitedOnce(*this)))
    return failure();
  return verifyResize(*this, getAxes(), getDim(), getInput().getType(),
                      getResultType(), /*grows=*/true);
}

LogicalResult StartReduceScatterOp::verify() {
  if (failed(verifyWaitedOnce(*this)))
    return failure();
  return verifyResize(*this, getAxes(), getDim(), getInput().getType(),
                      getResultType(), /*grows=*/false);
}

LogicalResult StartAllToAllOp::verify() {
  if (failed(verifyWaitedOnce(*this)))
    return failure();
  return verifyExchange(*this, getAxes(), getSplitDim(), getConcatDim(),
                        getInput().getType(), getResultType());
}

/// A pending collective is waited for once, in the block that started it
/// (so every path through the program waits for what it started).
LogicalResult WaitOp::verify() {
  Value pending = getPending();
  Operation *start = pending.getDefiningOp();
  if (!start || start->getBlock() != (*this)->getBlock())
    return emitOpError("expects a collective started in the same block");
  if (!pending.hasOneUse())
    return emitOpError("expects the only use of its pending collective");
  return success();
}

#define GET_OP_CLASSES
#include "spmdc/Dialect/Dist/IR/DistOps.cpp.inc"
