//===- TorchExport.h - torch.export nodes into tg ops -----------*- C++ -*-===//
//
// Private to the importer: the view of one ExportedProgram node that the
// ATen op mappings (AtenOps.cpp) work with, and the mapping table.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_LIB_IMPORT_TORCHEXPORT_H
#define SPMDC_LIB_IMPORT_TORCHEXPORT_H

#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "llvm/ADT/STLForwardCompat.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

namespace spmdc::torch_export {

/// The element type of a torch ScalarType enum value (schema.py), or null.
mlir::Type scalarType(mlir::MLIRContext *context, int64_t code);

namespace detail {
/// `OpT::build` taking result types before `Args` (the generated builders
/// all have this form; a custom builder may not).
template <typename OpT, typename... Args>
using BuildWithTypes = decltype(OpT::build(
    std::declval<mlir::OpBuilder &>(), std::declval<mlir::OperationState &>(),
    std::declval<mlir::TypeRange>(), std::declval<Args>()...));
/// `OpT`'s shape rule (InferTypeOpInterface's inferReturnTypes).
template <typename OpT>
using ShapeRule = decltype(OpT::inferReturnTypes(
    std::declval<mlir::MLIRContext *>(),
    std::declval<std::optional<mlir::Location>>(),
    std::declval<mlir::ValueRange>(), std::declval<mlir::DictionaryAttr>(),
    std::declval<mlir::OpaqueProperties>(), std::declval<mlir::RegionRange>(),
    std::declval<llvm::SmallVectorImpl<mlir::Type> &>()));
/// True where `Node::create<OpT>(Args...)` can run the shape rule before
/// building.
template <typename OpT, typename... Args>
inline constexpr bool hasCheckedBuild =
    std::conjunction_v<llvm::is_detected<BuildWithTypes, OpT, Args...>,
                       llvm::is_detected<ShapeRule, OpT>>;
} // namespace detail

/// One node being imported: its arguments by schema name (omitted ones take
/// their defaults), its declared outputs, and a place for errors.
class Node {
public:
  Node(const nlohmann::json &node, mlir::OpBuilder &builder,
       mlir::Location loc,
       std::function<mlir::Value(const std::string &)> lookup,
       std::function<mlir::RankedTensorType(const std::string &)> metaType)
      : node(node), b(builder), loc(loc), lookup(std::move(lookup)),
        metaType(std::move(metaType)) {}

  const nlohmann::json &node;
  /// The node's position in the graph.
  int64_t index = 0;
  mlir::OpBuilder &b;
  mlir::Location loc;

  tg::GraphMath math() { return {b, loc}; }
  /// An error at the node; the caller returns failure.
  mlir::InFlightDiagnostic error() { return mlir::emitError(loc); }

  /// Builds `OpT` at the node from `args` (`OpT::create`'s, less the builder
  /// and location) and gives its result, typed by the op's shape rule run
  /// first: where the rule refuses the operands (metadata that gets shapes
  /// or element types wrong), failure with the rule's error at the node,
  /// where `OpT::create` would end the process ("Failed to infer result
  /// type(s)"; found by fuzz/pt2-fuzzer.cpp). An op without a shape rule
  /// (given its result type: reshape, full, ...) or without a builder that
  /// takes result types before these arguments (a custom one) is built by
  /// `OpT::create` as it is, chosen at compile time.
  template <typename OpT, typename... Args>
  mlir::FailureOr<mlir::Value> create(Args &&...args) {
    if constexpr (detail::hasCheckedBuild<OpT, Args...>) {
      mlir::OperationState state(loc, OpT::getOperationName());
      if (failed(buildChecked<OpT>(state, std::forward<Args>(args)...)))
        return mlir::failure();
      return b.create(state)->getResult(0);
    } else {
      return OpT::create(b, loc, std::forward<Args>(args)...)
          .getOperation()
          ->getResult(0);
    }
  }

  /// Runs the shape rule `create<OpT>(args...)` runs, building nothing: for
  /// a formula of GraphMath ops whose operands one rule vets.
  template <typename OpT, typename... Args>
  mlir::LogicalResult check(Args &&...args) {
    static_assert(detail::hasCheckedBuild<OpT, Args...>,
                  "check<OpT> needs an op with a shape rule");
    mlir::OperationState state(loc, OpT::getOperationName());
    return buildChecked<OpT>(state, std::forward<Args>(args)...);
  }

  /// The argument `name` (or positional `index` when the schema names none),
  /// null if omitted or None.
  const nlohmann::json *arg(llvm::StringRef name) const;
  bool has(llvm::StringRef name) const { return arg(name) != nullptr; }

  /// A tensor argument; failure (with an error) if absent or not a tensor.
  mlir::FailureOr<mlir::Value> tensor(llvm::StringRef name);
  /// A tensor argument or nothing.
  std::optional<mlir::Value> optionalTensor(llvm::StringRef name);
  /// The tensors of a list argument.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> tensors(llvm::StringRef name);
  /// The entries of an optional-tensor list argument (null for None).
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  optionalTensors(llvm::StringRef name);
  mlir::FailureOr<int64_t> integer(llvm::StringRef name,
                                   std::optional<int64_t> defaultValue = {});
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  integers(llvm::StringRef name,
           std::optional<llvm::SmallVector<int64_t>> defaultValue = {});

  /// What a -1 in a size list stands for.
  enum class MinusOne {
    /// Nothing: every size is given (repeat's repeats, split sizes, full).
    Refused,
    /// view/reshape: the one dim that gives the input's element count.
    Inferred,
    /// expand: the input's size of that dim (of an existing dim only).
    Kept,
  };
  /// The size list argument `name` (shape, repeats, split sizes, ...) as a
  /// shape a tensor can have, or failure with one error at the node that
  /// says what is wrong: a negative size (a -1 aside, where `minusOne`
  /// gives it a meaning: then resolved against `input`, the shape of the
  /// tensor the node reads), a -1 that cannot be resolved, a shape whose
  /// element count differs from `input`'s (Inferred) or that `input` does
  /// not expand to (Kept), or one too large to count (checkShape). An
  /// archive's sizes are claims: unvetted, a negative or overflowing one
  /// reached tensor types (found by fuzz/pt2-fuzzer.cpp).
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  sizes(llvm::StringRef name, MinusOne minusOne = MinusOne::Refused,
        llvm::ArrayRef<int64_t> input = {});
  /// Fails, with an error at the node naming `what`, unless `shape` is one
  /// a tensor of `elementType` can have: no dim negative, an element count
  /// and a byte size that int64 holds, within --max-tensor-bytes (the limit
  /// the archive's own tensors meet). For shapes mappings compute from the
  /// node's arguments.
  mlir::LogicalResult checkShape(llvm::ArrayRef<int64_t> shape,
                                 mlir::Type elementType,
                                 const llvm::Twine &what);
  /// A number (int, float, bool; "Infinity"/"-Infinity"/"NaN" allowed).
  mlir::FailureOr<double> number(llvm::StringRef name,
                                 std::optional<double> defaultValue = {});
  mlir::FailureOr<bool> boolean(llvm::StringRef name, bool defaultValue);
  mlir::FailureOr<std::string> string(llvm::StringRef name,
                                      std::string defaultValue);
  /// True if the argument is a Python float (not a tensor).
  bool isFloatScalar(llvm::StringRef name) const;
  /// A tensor argument, or a scalar argument made a rank-0 tensor of
  /// `elementType`.
  mlir::FailureOr<mlir::Value> tensorOrScalar(llvm::StringRef name,
                                              mlir::Type elementType);

  /// The number of outputs the node declares.
  size_t numOutputs() const;
  /// True if output `i` exists and has a name (a later node may use it).
  bool hasOutput(size_t i) const { return !outputName(i).empty(); }
  /// The declared type of output `i`.
  mlir::RankedTensorType outputType(size_t i = 0);
  /// Defines output `i` (converted to its declared element type when the
  /// mapping computed it in another one).
  mlir::LogicalResult define(size_t i, mlir::Value value);
  /// Defines output `i` as a value `create` built, or fails where it did
  /// not (its diagnostic is out already).
  mlir::LogicalResult define(size_t i, mlir::FailureOr<mlir::Value> value) {
    return failed(value) ? mlir::failure() : define(i, *value);
  }
  llvm::SmallVector<std::pair<std::string, mlir::Value>> defined;

  /// Converts `value` to `elementType` if it differs.
  mlir::Value cast(mlir::Value value, mlir::Type elementType);

  /// The memory layout the archive records for tensor argument `name`: its
  /// strides and storage offset in tensor_values (nothing where it records
  /// none or a malformed one).
  struct Layout {
    llvm::SmallVector<int64_t> strides;
    int64_t storageOffset = 0;
  };
  std::optional<Layout> recordedLayout(llvm::StringRef name) const;
  /// A value's tensor_values entry, or null; set by the importer.
  std::function<const nlohmann::json *(const std::string &)> metaEntry;

private:
  std::string outputName(size_t i) const;
  /// `state` for `OpT` from `args`, with the result types its shape rule
  /// gives; failure where the rule refuses them.
  template <typename OpT, typename... Args>
  mlir::LogicalResult buildChecked(mlir::OperationState &state,
                                   Args &&...args) {
    OpT::build(b, state, mlir::TypeRange(), std::forward<Args>(args)...);
    mlir::MLIRContext *context = b.getContext();
    return addInferredTypes(
        state, [&](llvm::SmallVectorImpl<mlir::Type> &types) {
          return OpT::inferReturnTypes(context, loc, state.operands,
                                       state.attributes.getDictionary(context),
                                       state.getRawProperties(), state.regions,
                                       types);
        });
  }
  /// Adds the types `rule` infers to `state`. A rule that fails reports why
  /// at the node; should one fail without a word, the error names the op.
  mlir::LogicalResult addInferredTypes(mlir::OperationState &state,
                                       llvm::function_ref<mlir::LogicalResult(
                                           llvm::SmallVectorImpl<mlir::Type> &)>
                                           rule);
  std::function<mlir::Value(const std::string &)> lookup;
  std::function<mlir::RankedTensorType(const std::string &)> metaType;
};

using Mapping = std::function<mlir::LogicalResult(Node &)>;

/// The ATen targets spmdc maps ("torch.ops.aten.addmm.default", ...).
const llvm::StringMap<Mapping> &atenMappings();

} // namespace spmdc::torch_export

#endif // SPMDC_LIB_IMPORT_TORCHEXPORT_H
