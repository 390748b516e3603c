//===- Import.cpp - pick the importer for a graph file --------------------===//

#include "spmdc/Import/Import.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Runtime/Limits.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

namespace spmdc {

std::optional<InputFormat> parseInputFormat(llvm::StringRef text) {
  return llvm::StringSwitch<std::optional<InputFormat>>(text)
      .Case("auto", InputFormat::Auto)
      .Case("mlir", InputFormat::Mlir)
      .Case("json", InputFormat::Json)
      .Case("pt2", InputFormat::Pt2)
      .Default(std::nullopt);
}

/// By extension first, then by the first bytes of the file.
static InputFormat detectFormat(llvm::StringRef fileName,
                                llvm::StringRef text) {
  // A bare ExportedProgram is JSON too: it has a graph_module.
  bool exportedProgram = text.ltrim().starts_with("{") &&
                         text.contains("\"graph_module\"");
  if (fileName.ends_with(".json"))
    return exportedProgram ? InputFormat::Pt2 : InputFormat::Json;
  if (fileName.ends_with(".mlir") || fileName.ends_with(".mlirbc"))
    return InputFormat::Mlir;
  if (fileName.ends_with(".pt2"))
    return InputFormat::Pt2;
  if (text.starts_with("PK"))
    return InputFormat::Pt2;
  if (text.ltrim().starts_with("{"))
    return exportedProgram ? InputFormat::Pt2 : InputFormat::Json;
  return InputFormat::Mlir;
}

/// Every argument and result of @main within --max-tensor-bytes: the
/// runner makes each of them, and a graph that claims more is refused here,
/// whatever its format.
static LogicalResult checkTensorLimits(ModuleOp module) {
  func::FuncOp entry = tg::getEntryFunction(module);
  if (!entry)
    return success();
  auto check = [&](Type type, Location loc, StringRef what, unsigned index,
                   StringAttr name) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape() ||
        !tensor.getElementType().isIntOrFloat())
      return success();
    uint64_t bytes;
    std::string error;
    std::vector<int64_t> shape(tensor.getShape().begin(),
                               tensor.getShape().end());
    unsigned bits = tensor.getElementType().getIntOrFloatBitWidth();
    if (rt::checkTensorSize(shape, std::max(1u, bits / 8), bytes, error))
      return success();
    InFlightDiagnostic diag = emitError(loc) << "@main's " << what << " ";
    if (name)
      diag << "'" << name.getValue() << "'";
    else
      diag << "#" << index;
    return diag << " (" << type << "): " << error;
  };
  for (auto [i, type] : llvm::enumerate(entry.getArgumentTypes()))
    if (failed(check(type, entry.getArgument(i).getLoc(), "argument", i,
                     entry.getArgAttrOfType<StringAttr>(i, tg::kNameAttr))))
      return failure();
  for (auto [i, type] : llvm::enumerate(entry.getResultTypes()))
    if (failed(check(type, entry.getLoc(), "result", i,
                     entry.getResultAttrOfType<StringAttr>(i, tg::kNameAttr))))
      return failure();
  return success();
}

OwningOpRef<ModuleOp> importGraph(llvm::SourceMgr &sourceMgr,
                                  InputFormat format, MLIRContext &context,
                                  const ImportOptions &options) {
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  llvm::StringRef fileName = buffer->getBufferIdentifier();
  llvm::StringRef text = buffer->getBuffer();
  if (format == InputFormat::Auto)
    format = detectFormat(fileName, text);

  if (!options.appendLoss.empty() && format != InputFormat::Pt2) {
    emitError(FileLineColLoc::get(&context, fileName, 0, 0))
        << "--loss applies to torch.export input; a JSON or MLIR graph "
           "states its own loss";
    return nullptr;
  }
  OwningOpRef<ModuleOp> module;
  switch (format) {
  case InputFormat::Json:
    module = importJsonGraph(text, fileName, context);
    break;
  case InputFormat::Mlir:
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (module)
      if (func::FuncOp entry = tg::getEntryFunction(*module))
        tg::annotateIndexBounds(entry);
    break;
  case InputFormat::Pt2:
  case InputFormat::Auto:
    module = importTorchExport(text, fileName, context, options);
    break;
  }
  if (!module || failed(tg::verifyGraphSignature(*module)) ||
      failed(checkTensorLimits(*module)))
    return nullptr;
  return module;
}

} // namespace spmdc
