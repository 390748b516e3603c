//===- Import.h - read graph files into the tensor-graph dialect -*- C++ -*-===//
//
// The front door of the compiler: a graph file (MLIR text or bytecode, or the
// project's JSON graph format) becomes a module holding `func.func @main` in
// the tg dialect, with a checked signature. Errors are reported through the
// context's diagnostic handler, located at file:line:col (MLIR, JSON syntax)
// or at a JSON pointer (JSON structure).
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_IMPORT_IMPORT_H
#define SPMDC_IMPORT_IMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace spmdc {

enum class InputFormat { Auto, Mlir, Json, Pt2 };

/// Choices the user makes about an import.
struct ImportOptions {
  /// For a torch.export model that returns logits: the loss to append
  /// ("cross_entropy", against a new int64 `labels` input); empty: none.
  std::string appendLoss;
};

/// Parses "auto", "mlir", "json" or "pt2".
std::optional<InputFormat> parseInputFormat(llvm::StringRef text);

/// Imports the graph in `sourceMgr`'s main buffer (named after its file).
/// `Auto` picks by extension, then by content.
mlir::OwningOpRef<mlir::ModuleOp> importGraph(llvm::SourceMgr &sourceMgr,
                                              InputFormat format,
                                              mlir::MLIRContext &context,
                                              const ImportOptions &options = {});

/// Imports a graph in the project's JSON format (docs/graph-format.md).
mlir::OwningOpRef<mlir::ModuleOp>
importJsonGraph(llvm::StringRef text, llvm::StringRef fileName,
                mlir::MLIRContext &context);

/// Imports a torch.export program: a `.pt2` archive or a bare
/// ExportedProgram JSON file (docs/pytorch.md).
mlir::OwningOpRef<mlir::ModuleOp>
importTorchExport(llvm::StringRef bytes, llvm::StringRef fileName,
                  mlir::MLIRContext &context, const ImportOptions &options);

} // namespace spmdc

#endif // SPMDC_IMPORT_IMPORT_H
