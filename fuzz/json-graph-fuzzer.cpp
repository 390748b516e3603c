//===- json-graph-fuzzer.cpp - fuzz the JSON graph importer ---------------===//
//
// Bytes as a graph in the project's JSON format (docs/graph-format.md),
// through importJsonGraph and the graph-signature check spmdc applies.
//
//===----------------------------------------------------------------------===//

#include "MlirFuzzSupport.h"

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Import/Import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      spmdc::importJsonGraph(text, "fuzz.json", spmdc::fuzz::context());
  if (module)
    (void)spmdc::tg::verifyGraphSignature(*module);
  return 0;
}
