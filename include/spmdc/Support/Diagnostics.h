//===- Diagnostics.h - how the tools print errors ---------------*- C++ -*-===//
//
// One clear message per error: `file:line:col: error: ...` with the source
// line for MLIR and JSON syntax, `file: /json/pointer: error: ...` for places
// in a JSON document (a NameLoc over a file location with line 0).
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_SUPPORT_DIAGNOSTICS_H
#define SPMDC_SUPPORT_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"

namespace llvm {
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace spmdc {

/// Reads `path` ('-' is stdin) into the main buffer of `sourceMgr`; false,
/// with `error` saying why, if it cannot.
bool loadMainFile(llvm::SourceMgr &sourceMgr, llvm::StringRef path,
                  std::string &error);

/// Prints the context's diagnostics to `os` in the format above and counts
/// errors.
class ToolDiagnosticHandler {
public:
  ToolDiagnosticHandler(llvm::SourceMgr &sourceMgr, mlir::MLIRContext &context,
                        llvm::raw_ostream &os);
  ~ToolDiagnosticHandler();
  unsigned errorCount() const { return errors; }

private:
  mlir::SourceMgrDiagnosticHandler sourceHandler;
  mlir::MLIRContext &context;
  mlir::DiagnosticEngine::HandlerID id;
  llvm::raw_ostream &os;
  unsigned errors = 0;
};

} // namespace spmdc

#endif // SPMDC_SUPPORT_DIAGNOSTICS_H
