//===- TensorGraph.h - the tensor-graph dialect -----------------*- C++ -*-===//
//
// Declares the `tg` dialect and its ops (generated from TensorGraphOps.td),
// plus the names of the function attributes that tie a graph to the user's
// tensors.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_DIALECT_TENSORGRAPH_IR_TENSORGRAPH_H
#define SPMDC_DIALECT_TENSORGRAPH_IR_TENSORGRAPH_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "spmdc/Dialect/TensorGraph/IR/TensorGraphOpsDialect.h.inc"

namespace spmdc::tg {

class ShardingRuleAttr;

/// An op's dims as shared factors (see ShardingRuleOpInterface).
struct ShardingRule {
  ShardingRule() : results(1) {}

  /// The size of each factor.
  llvm::SmallVector<int64_t> factorSizes;
  /// Per operand, per dim: the factors the dim spans, major first; empty for
  /// a broadcast dim of size 1.
  llvm::SmallVector<llvm::SmallVector<llvm::SmallVector<int>>> operands;
  /// Per result, per dim: the factors it spans (one result unless the op
  /// has several).
  llvm::SmallVector<llvm::SmallVector<llvm::SmallVector<int>>> results;
  /// Factors that must not be sharded (a sliced dim, a max-reduced dim).
  llvm::SmallVector<bool> replicatedOnly;
  /// How partial sums pass: None (never), Each (the result is linear in
  /// each operand separately: at most one partial operand), All (linear in
  /// all together: every operand partial alike, as in add).
  enum class Partial { None, Each, All } partial = Partial::None;
  /// With Partial::Each: the operands the result is linear in.
  llvm::SmallVector<bool> linearIn;
  /// How the shards of a contraction combine: Sum leaves a partial sum to
  /// reduce later; Max (a max-reduction) is all-reduced by max at once.
  enum class Combine { Sum, Max } combine = Combine::Sum;
  /// Factors whose positions the values of an index operand address (a
  /// gather's table rows, a scatter's target dim), with that operand.
  /// Sharding one makes each rank serve the indices of its own block.
  llvm::SmallVector<std::pair<int, int>> indexed;

  /// The dims of the (first) result.
  llvm::SmallVector<llvm::SmallVector<int>> &result() { return results[0]; }
  const llvm::SmallVector<llvm::SmallVector<int>> &result() const {
    return results[0];
  }
  /// A new factor of `size`.
  int addFactor(int64_t size, bool replicatedOnly = false);
  /// True if `factor` is a contraction (in no result).
  bool isContraction(int factor) const;
  /// The index operand addressing `factor`, or -1.
  int indexOperandOf(int factor) const;

  /// As a printable, parsable #tg.sharding_rule, and back.
  ShardingRuleAttr toAttr(mlir::MLIRContext *context) const;
  static ShardingRule fromAttr(ShardingRuleAttr attr);
  /// `([i, k], [k, j])->([i, j]) {i=8, j=2, k=4} reduction={k} ...`
  void print(llvm::raw_ostream &os) const;
};

/// Rules shared by op families: elementwise with broadcasting (partial sums
/// pass through all operands together where `linearInAll`, else through
/// each operand of `linearIn` alone), reductions over `dims`, and
/// everything replicated.
ShardingRule elementwiseShardingRule(mlir::Operation *op,
                                     bool linearInAll = false,
                                     llvm::ArrayRef<int> linearIn = {});
ShardingRule reductionShardingRule(mlir::Operation *op,
                                   llvm::ArrayRef<int64_t> dims, bool keepDim);
ShardingRule replicatedShardingRule(mlir::Operation *op);

/// The cost interface's defaults (Costs.cpp): one operation per result
/// element of an elementwise op, none otherwise; each operand and result's
/// bytes once.
int64_t defaultFlops(mlir::Operation *op);
int64_t operandAndResultBytes(mlir::Operation *op);
/// The elements of the op's first operand (a reduction's flops).
int64_t elementsOfInput(mlir::Operation *op);

} // namespace spmdc::tg

#include "spmdc/Dialect/TensorGraph/IR/TensorGraphEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphAttrs.h.inc"

#include "spmdc/Dialect/TensorGraph/IR/TensorGraphInterfaces.h.inc"

/// The traits of TensorGraphInterfaces.td: marks passes ask an op for.
namespace spmdc::tg::OpTrait {
template <typename ConcreteType>
class Elementwise
    : public mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {};
template <typename ConcreteType>
class Recomputable
    : public mlir::OpTrait::TraitBase<ConcreteType, Recomputable> {};
template <typename ConcreteType>
class MovesValues
    : public mlir::OpTrait::TraitBase<ConcreteType, MovesValues> {};
template <typename ConcreteType>
class NoDerivative
    : public mlir::OpTrait::TraitBase<ConcreteType, NoDerivative> {};
template <typename ConcreteType>
class Composite : public mlir::OpTrait::TraitBase<ConcreteType, Composite> {};
} // namespace spmdc::tg::OpTrait

#define GET_OP_CLASSES
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphOps.h.inc"

namespace spmdc::tg {

/// Argument/result attribute: the user's name of the tensor.
inline constexpr llvm::StringLiteral kNameAttr = "tg.name";
/// Argument/result attribute, a #tg.role: param, data, state, hyper (args);
/// loss, output, param, state, grad (results). A `hyper` argument is a
/// scalar hyperparameter the runner feeds every step (the optimizer's
/// `lr`), so that changing it needs no new compile.
inline constexpr llvm::StringLiteral kRoleAttr = "tg.role";
/// Argument attribute on integer data: values lie in [0, bound).
inline constexpr llvm::StringLiteral kIndexBoundAttr = "tg.index_bound";
/// Argument attribute of a parameter: its initial value (the weights a
/// torch.export archive carries), a logical tensor.
inline constexpr llvm::StringLiteral kInitAttr = "tg.init";
/// Argument attribute of a parameter or state: where its initial value lives
/// in a file, read in place rather than carried in the IR (a torch.export
/// archive's weights): {file = path, entry = name in the archive, offset =
/// byte offset of the storage in the file, bytes = storage bytes,
/// storage_offset = elements, strides = array<i64: per dim, elements>}; the
/// values have the argument's element type and logical shape.
inline constexpr llvm::StringLiteral kInitRefAttr = "tg.init_ref";
/// Argument attribute of a `hyper` argument: the value the runner feeds
/// when told no other (a float; spmdc's --lr for `lr`).
inline constexpr llvm::StringLiteral kDefaultAttr = "tg.default";
/// Argument attribute of a `state`: the tensor is model state (a buffer the
/// model updates, as BatchNorm's running statistics), saved with the
/// parameters, rather than optimizer state.
inline constexpr llvm::StringLiteral kBufferAttr = "tg.buffer";
/// Argument attribute of a parameter: other names of the same tensor (tied
/// weights), which --save-params writes too.
inline constexpr llvm::StringLiteral kAliasesAttr = "tg.aliases";
/// Module attribute: persistent buffers the step only reads (constants of
/// the graph), which are in the model's state dict:
/// [{name, type, init_ref}], written by --save-params unchanged.
inline constexpr llvm::StringLiteral kConstantBuffersAttr =
    "tg.constant_buffers";
/// Module attribute: the model's name.
inline constexpr llvm::StringLiteral kModelAttr = "tg.model";
/// Op attribute (unit): the op belongs to the optimizer update, which runs
/// after the backward (--early-optimizer-updates moves each update to where
/// its gradient is final).
inline constexpr llvm::StringLiteral kUpdateAttr = "tg.update";
/// Op attribute (unit): autodiff treats the op's result as a constant,
/// because the loss does not depend on it (a softmax's stabilizing max).
inline constexpr llvm::StringLiteral kConstantToDerivativeAttr =
    "tg.constant_to_derivative";
/// Op attribute: the op computes the gradient of the named parameter.
inline constexpr llvm::StringLiteral kGradOfAttr = "tg.grad_of";
/// Op attribute: what the op's result serves, for the compile report's
/// `origin` of a collective that reduces it ("grad_norm": the gradients'
/// global norm that --tg-optimizer's clip-grad-norm computes).
inline constexpr llvm::StringLiteral kOriginAttr = "tg.origin";
/// The name of a graph's entry function.
inline constexpr llvm::StringLiteral kEntryName = "main";

/// True if `role` is a valid role of a function argument (param, data,
/// state, hyper).
bool isArgumentRole(Role role);
/// True if `role` is a valid role of a function result (loss, output,
/// param, state, grad).
bool isResultRole(Role role);

/// NumPy broadcast of two static shapes; failure if incompatible.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Normalizes a possibly negative dim against `rank`; failure if out of
/// range.
mlir::FailureOr<int64_t> normalizeDim(int64_t dim, int64_t rank);

} // namespace spmdc::tg

#endif // SPMDC_DIALECT_TENSORGRAPH_IR_TENSORGRAPH_H
