//===- Diagnostics.cpp - how the tools print errors -----------------------===//

#include "spmdc/Support/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
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

/// `file: place` for a NameLoc over a line-0 file location (a JSON pointer
/// or node name), empty otherwise.
static std::string documentPlace(Location loc) {
  auto named = llvm::dyn_cast<NameLoc>(loc);
  if (!named)
    return "";
  auto file = llvm::dyn_cast<FileLineColLoc>(named.getChildLoc());
  if (!file || file.getLine() != 0)
    return "";
  std::string place = named.getName().str();
  return file.getFilename().str() + ": " + (place.empty() ? "/" : place);
}

ToolDiagnosticHandler::ToolDiagnosticHandler(llvm::SourceMgr &sourceMgr,
                                             MLIRContext &context,
                                             llvm::raw_ostream &os)
    : sourceHandler(sourceMgr, &context, os), context(context), os(os) {
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
