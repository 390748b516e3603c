//===- Diagnostics.cpp - how the tools print errors -----------------------===//

#include "spmdc/Support/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace spmdc {

static StringRef severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

/// `file: place` for a place in a document that has no line numbers: a
/// NameLoc over a line-0 file location names a JSON pointer ("/nodes/3") or
/// a node ("node 'fc1'"); a bare line-0 file location names the file.
/// Empty for anything else.
static std::string documentPlace(Location loc) {
  auto file = llvm::dyn_cast<FileLineColLoc>(loc);
  if (file && file.getLine() == 0)
    return file.getFilename().str();
  auto named = llvm::dyn_cast<NameLoc>(loc);
  if (!named)
    return "";
  file = llvm::dyn_cast<FileLineColLoc>(named.getChildLoc());
  if (!file || file.getLine() != 0)
    return "";
  StringRef name = named.getName().getValue();
  std::string place = name.starts_with("/") ? name.str()
                      : name.empty()       ? std::string("/")
                                           : "node '" + name.str() + "'";
  return file.getFilename().str() + ": " + place;
}

bool loadMainFile(llvm::SourceMgr &sourceMgr, StringRef path,
                  std::string &error) {
  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(path, &message);
  if (!input) {
    error = (path + ": " + message).str();
    return false;
  }
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  return true;
}

ToolDiagnosticHandler::ToolDiagnosticHandler(llvm::SourceMgr &sourceMgr,
                                             MLIRContext &context,
                                             llvm::raw_ostream &os)
    : sourceHandler(sourceMgr, &context, os), context(context), os(os) {
  // One message per error: the IR of the failing op is noise to a user.
  context.printOpOnDiagnostic(false);
  // Registered after the source handler, so it runs first.
  id = context.getDiagEngine().registerHandler([this](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      ++errors;
    std::string place = documentPlace(diag.getLocation());
    if (place.empty())
      return failure(); // fall through to the source manager's printer
    this->os << place << ": " << severityName(diag.getSeverity()) << ": "
             << diag << "\n";
    for (const Diagnostic &note : diag.getNotes())
      this->os << place << ": note: " << note << "\n";
    return success();
  });
}

ToolDiagnosticHandler::~ToolDiagnosticHandler() {
  context.getDiagEngine().eraseHandler(id);
}

} // namespace spmdc
