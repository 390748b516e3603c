//===- TensorGraphDialect.cpp - the tg dialect and its function attrs -----===//
//
// Registers the tg ops and checks the `tg.name` / `tg.role` attributes that
// tie a graph's arguments and results to the user's tensors.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace spmdc::tg;

#include "spmdc/Dialect/TensorGraph/IR/TensorGraphOpsDialect.cpp.inc"

#include "spmdc/Dialect/TensorGraph/IR/TensorGraphInterfaces.cpp.inc"

#include "spmdc/Dialect/TensorGraph/IR/TensorGraphEnums.cpp.inc"

// The attributes' storage and the dialect's attribute parser and printer;
// ShardingRuleAttr.cpp holds the rule's own text form.
#define GET_ATTRDEF_CLASSES
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphAttrs.cpp.inc"

void TensorGraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphAttrs.cpp.inc"
      >();
}

bool spmdc::tg::isArgumentRole(Role role) {
  return role == Role::param || role == Role::data || role == Role::state ||
         role == Role::hyper;
}

bool spmdc::tg::isResultRole(Role role) {
  return role != Role::data && role != Role::hyper;
}

/// Checks one `tg.*` attribute on a function argument or result.
static LogicalResult verifyValueAttribute(Operation *op, NamedAttribute attr,
                                          bool isArgument, unsigned index) {
  StringRef what = isArgument ? "argument" : "result";
  StringRef name = attr.getName().getValue();
  if (name == kNameAttr) {
    if (!llvm::isa<StringAttr>(attr.getValue()))
      return op->emitError() << what << " #" << index << ": '" << kNameAttr
                             << "' must be a string";
    return success();
  }
  if (name == kRoleAttr) {
    auto role = llvm::dyn_cast<RoleAttr>(attr.getValue());
    if (!role || !(isArgument ? isArgumentRole(role.getValue())
                              : isResultRole(role.getValue())))
      return op->emitError()
             << what << " #" << index << ": '" << kRoleAttr << "' must be "
             << (isArgument ? "#tg.role<param>, <data>, <state> or <hyper>"
                            : "#tg.role<loss>, <output>, <param>, <state> or "
                              "<grad>")
             << ", got " << attr.getValue();
    return success();
  }
  if (name == kAliasesAttr && isArgument) {
    auto names = llvm::dyn_cast<ArrayAttr>(attr.getValue());
    if (!names || !llvm::all_of(names, [](Attribute a) {
          return llvm::isa<StringAttr>(a);
        }))
      return op->emitError() << what << " #" << index << ": '"
                             << kAliasesAttr << "' must be a list of names";
    return success();
  }
  if (name == kInitAttr && isArgument) {
    if (!llvm::isa<ElementsAttr>(attr.getValue()))
      return op->emitError() << what << " #" << index << ": '" << kInitAttr
                             << "' must be a tensor literal";
    return success();
  }
  if (name == kInitRefAttr && isArgument) {
    auto dict = llvm::dyn_cast<DictionaryAttr>(attr.getValue());
    std::optional<InitialValueRef> ref =
        dict ? readInitialValueRef(dict) : std::nullopt;
    if (!ref)
      return op->emitError()
             << what << " #" << index << ": '" << kInitRefAttr
             << "' must be {file, entry, offset, bytes, storage_offset, "
                "strides}";
    auto fn = llvm::dyn_cast<FunctionOpInterface>(op);
    auto type =
        fn ? llvm::dyn_cast<RankedTensorType>(fn.getArgumentTypes()[index])
           : RankedTensorType();
    if (type && static_cast<int64_t>(ref->strides.size()) != type.getRank())
      return op->emitError() << what << " #" << index << ": '" << kInitRefAttr
                             << "' has " << ref->strides.size()
                             << " strides for a tensor of rank "
                             << type.getRank();
    return success();
  }
  if (name == kBufferAttr && isArgument) {
    if (!llvm::isa<UnitAttr>(attr.getValue()))
      return op->emitError() << what << " #" << index << ": '" << kBufferAttr
                             << "' is a unit attribute";
    return success();
  }
  if (name == kDefaultAttr && isArgument) {
    if (!llvm::isa<FloatAttr>(attr.getValue()))
      return op->emitError() << what << " #" << index << ": '" << kDefaultAttr
                             << "' must be a float";
    return success();
  }
  if (name == kIndexBoundAttr && isArgument) {
    auto bound = llvm::dyn_cast<IntegerAttr>(attr.getValue());
    if (!bound || bound.getInt() < 1)
      return op->emitError() << what << " #" << index << ": '"
                             << kIndexBoundAttr
                             << "' must be a positive integer";
    return success();
  }
  return op->emitError() << what << " #" << index
                         << ": unknown attribute '" << name << "'";
}

LogicalResult TensorGraphDialect::verifyRegionArgAttribute(
    Operation *op, unsigned, unsigned argIndex, NamedAttribute attr) {
  return verifyValueAttribute(op, attr, /*isArgument=*/true, argIndex);
}

LogicalResult TensorGraphDialect::verifyRegionResultAttribute(
    Operation *op, unsigned, unsigned resultIndex, NamedAttribute attr) {
  return verifyValueAttribute(op, attr, /*isArgument=*/false, resultIndex);
}
