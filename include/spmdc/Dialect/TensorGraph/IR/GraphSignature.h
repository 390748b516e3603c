//===- GraphSignature.h - names and roles of a graph's tensors --*- C++ -*-===//
//
// A graph is `func.func @main` whose arguments and results carry `tg.name`
// and `tg.role`. These helpers read that signature, check it, and fill in
// what the runner needs to invent inputs (the range of index inputs).
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_DIALECT_TENSORGRAPH_IR_GRAPHSIGNATURE_H
#define SPMDC_DIALECT_TENSORGRAPH_IR_GRAPHSIGNATURE_H

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace spmdc::tg {

/// Where an argument's initial value lives in a file (`tg.init_ref`).
struct InitialValueRef {
  std::string file, entry;
  /// The storage: `bytes` bytes from byte `offset` of the file.
  uint64_t offset = 0, bytes = 0;
  /// The logical tensor's view of the storage, in elements.
  int64_t storageOffset = 0;
  std::vector<int64_t> strides;
};

/// One argument or result of a graph.
struct GraphValueInfo {
  std::string name;
  /// Absent where the attribute is missing (the verifier reports it).
  std::optional<Role> role;
  mlir::RankedTensorType type;
  /// For integer data inputs: values lie in [0, indexBound).
  std::optional<int64_t> indexBound;
  /// For parameters imported with their weights: the initial value.
  mlir::ElementsAttr initialValue;
  /// For parameters and state whose initial value lives in a file.
  std::optional<InitialValueRef> initRef;
  /// For state: model state (`tg.buffer`) rather than optimizer state.
  bool buffer = false;
  /// For a hyperparameter: the value fed when the runner is told no other
  /// (`tg.default`).
  std::optional<double> defaultValue;
  /// Other names of the same tensor (tied weights).
  std::vector<std::string> aliases;
};

/// A persistent buffer the step only reads (`tg.constant_buffers`).
struct ConstantBufferInfo {
  std::string name;
  mlir::RankedTensorType type;
  InitialValueRef initRef;
};

/// The module's `tg.constant_buffers` (malformed entries are skipped).
std::vector<ConstantBufferInfo> getConstantBuffers(mlir::ModuleOp module);

/// Reads a `tg.init_ref` dictionary; nullopt if it is malformed.
std::optional<InitialValueRef> readInitialValueRef(mlir::DictionaryAttr attr);
/// The `tg.init_ref` dictionary of `ref`.
mlir::DictionaryAttr initialValueRefAttr(mlir::MLIRContext *context,
                                         const InitialValueRef &ref);

/// The graph's entry function, or null (with an error at the module) if the
/// module has none.
mlir::func::FuncOp getEntryFunction(mlir::ModuleOp module);

/// Reads the signature of `fn`; the signature must have been verified.
std::vector<GraphValueInfo> getArgumentInfos(mlir::func::FuncOp fn);
std::vector<GraphValueInfo> getResultInfos(mlir::func::FuncOp fn);

/// Whether `result` is the next step's value of `argument`: a parameter or
/// state returned under its argument's role and name. spmd-run feeds such a
/// result back, so the step may write it over the argument's buffer.
bool feedsBack(const GraphValueInfo &result, const GraphValueInfo &argument);

/// Checks a graph's signature: an entry `@main`, ranked tensor arguments and
/// results, each with a name and role, names unique per role, at most one
/// loss, which is a float scalar, hyperparameters float scalars. Errors are
/// reported at the function.
mlir::LogicalResult verifyGraphSignature(mlir::ModuleOp module);

/// Sets `tg.index_bound` on integer data arguments from their uses: the rows
/// of an embedding table, the classes of a cross_entropy, the size of a
/// gathered dim (looking through shape ops). Existing bounds are kept.
void annotateIndexBounds(mlir::func::FuncOp fn);

} // namespace spmdc::tg

#endif // SPMDC_DIALECT_TENSORGRAPH_IR_GRAPHSIGNATURE_H
