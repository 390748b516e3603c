//===- JsonDocument.h - reading the project's JSON inputs -------*- C++ -*-===//
//
// The graph format and the shard spec are JSON documents; both report
// malformed JSON at its line and column and structural errors at a JSON
// pointer, through MLIR diagnostics (see Diagnostics.h for the format).
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_SUPPORT_JSONDOCUMENT_H
#define SPMDC_SUPPORT_JSONDOCUMENT_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"

#include <nlohmann/json.hpp>

#include <optional>

namespace spmdc {

/// Parses `text`; on malformed JSON emits one error at its line:column in
/// `fileName` and returns nothing.
std::optional<nlohmann::json> parseJsonDocument(llvm::StringRef text,
                                                llvm::StringRef fileName,
                                                mlir::MLIRContext &context);

/// The location of `pointer` (e.g. "/nodes/3/inputs/1") in `fileName`.
mlir::Location jsonPointerLoc(mlir::MLIRContext &context,
                              llvm::StringRef fileName,
                              const std::string &pointer);

/// Checks that `object` is a JSON object with the `required` keys and no
/// keys outside `allowed`; emits one error at the offending pointer.
mlir::LogicalResult checkJsonKeys(mlir::MLIRContext &context,
                                  llvm::StringRef fileName,
                                  const nlohmann::json &object,
                                  const std::string &pointer,
                                  std::initializer_list<const char *> allowed,
                                  std::initializer_list<const char *> required);

} // namespace spmdc

#endif // SPMDC_SUPPORT_JSONDOCUMENT_H
