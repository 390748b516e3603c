//===- pt2-fuzzer.cpp - fuzz the torch.export reader ----------------------===//
//
// Bytes as a `.pt2` archive (a zip: libzip, and the importer's own reading
// of the central directory for weights read in place) or, when they start
// with '{', as a bare ExportedProgram JSON, through importTorchExport.
//
//===----------------------------------------------------------------------===//

#include "MlirFuzzSupport.h"

#include "spmdc/Import/Import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  spmdc::ImportOptions options;
  // Half the inputs append the cross-entropy loss, as --loss does.
  if (size % 2)
    options.appendLoss = "cross_entropy";
  (void)spmdc::importTorchExport(bytes, "fuzz.pt2", spmdc::fuzz::context(),
                                 options);
  return 0;
}
