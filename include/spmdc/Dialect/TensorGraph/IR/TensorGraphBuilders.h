//===- TensorGraphBuilders.h - small builders of tg subgraphs ---*- C++ -*-===//
//
// The few constructions that derivative rules, decompositions and the
// optimizer all need: scalar constants that broadcast, and reducing a
// broadcast gradient back to its operand's shape.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_DIALECT_TENSORGRAPH_IR_TENSORGRAPHBUILDERS_H
#define SPMDC_DIALECT_TENSORGRAPH_IR_TENSORGRAPHBUILDERS_H

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

#include "mlir/IR/Builders.h"

namespace spmdc::tg {

/// The static type of a tg value.
inline mlir::RankedTensorType typeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

/// The kinds of work a location can name (a NameLoc around it), for the
/// names of the loop nests that do it and the profile that reads them:
/// attention's ops (the decomposed tg.scaled_dot_product_attention and their
/// gradients) and the optimizer's update.
inline constexpr llvm::StringLiteral kAttentionWork = "attention";
inline constexpr llvm::StringLiteral kOptimizerWork = "optimizer";

/// `loc` named as doing `work` (one of the kinds above).
inline mlir::Location workLoc(llvm::StringRef work, mlir::Location loc) {
  return mlir::NameLoc::get(mlir::StringAttr::get(loc->getContext(), work),
                            loc);
}

/// A rank-0 `tg.full` of `elementType`: broadcasts against any tensor.
mlir::Value buildScalar(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Type elementType, double value);

/// A rank-0 `tg.full` of `like`'s element type.
mlir::Value buildScalarLike(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value like, double value);

/// Zeros of `type`.
mlir::Value buildZeros(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::RankedTensorType type);

/// Sums `grad` over the dims NumPy broadcasting added or stretched, so that
/// the result has `target`'s shape (the adjoint of broadcasting).
mlir::Value sumToShape(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value grad, mlir::RankedTensorType target);

/// `value` reshaped to `type`'s shape when the shapes differ.
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value value, mlir::RankedTensorType type);

/// `value` with its last two dims swapped (rank >= 2).
mlir::Value transposeLastTwo(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Value value);

/// True for a transpose that swaps the last two dims and nothing else.
bool swapsLastTwo(TransposeOp transpose);

/// `value` without the transposes of its last two dims on top, and whether
/// an odd number of them was peeled: a GEMM reads an operand transposed for
/// free, and a transpose of a transpose is no transpose.
std::pair<mlir::Value, bool> peelTransposes(mlir::Value value);

/// Erases the transposes that define `values` and that nothing uses, then
/// the transposes feeding those that nothing else uses.
void eraseDeadTransposes(llvm::ArrayRef<mlir::Value> values);

/// `value` with `before` and `after` elements of `fill` added on either side
/// of `dim` (a concat with `tg.full` blocks; no op where both are 0).
mlir::Value padAlongDim(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value value, int64_t dim, int64_t before,
                        int64_t after, double fill = 0.0);

/// `value` with `step - 1` zeros after each element along `dim` but the
/// last: element i lands at i * step, the result has (size - 1) * step + 1
/// elements there. The adjoint of a strided slice's gather, built from
/// reshape, concat and slice so that every stage handles it.
mlir::Value spreadAlongDim(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value value, int64_t dim, int64_t step);

/// Dims of `value` made non-negative.
llvm::SmallVector<int64_t> normalizedDims(llvm::ArrayRef<int64_t> dims,
                                          int64_t rank);

/// `input`'s shape with the `dims` set to 1 (the keepdim shape of a
/// reduction over `dims`).
mlir::RankedTensorType keepDimType(mlir::RankedTensorType input,
                                   llvm::ArrayRef<int64_t> dims);

/// Arithmetic on tg values at one location: what derivative rules,
/// decompositions and the optimizer write their formulas with.
struct GraphMath {
  mlir::OpBuilder &b;
  mlir::Location loc;

  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, mlir::Value y);
  mlir::Value div(mlir::Value x, mlir::Value y);
  mlir::Value neg(mlir::Value x);
  /// A rank-0 constant of `like`'s element type.
  mlir::Value scalar(mlir::Value like, double value);
  mlir::Value compare(ComparePredicate predicate, mlir::Value x,
                      mlir::Value y);
  mlir::Value select(mlir::Value condition, mlir::Value x, mlir::Value y);
  mlir::Value sum(mlir::Value x, llvm::ArrayRef<int64_t> dims, bool keepDim);
  mlir::Value max(mlir::Value x, llvm::ArrayRef<int64_t> dims, bool keepDim);
  /// Mean over `dims` as a sum times 1/n.
  mlir::Value mean(mlir::Value x, llvm::ArrayRef<int64_t> dims, bool keepDim);
};

} // namespace spmdc::tg

#endif // SPMDC_DIALECT_TENSORGRAPH_IR_TENSORGRAPHBUILDERS_H
