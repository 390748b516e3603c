//===- mlir-import-fuzzer.cpp - fuzz spmdc's MLIR import path -------------===//
//
// Bytes as MLIR text or bytecode through importGraph (the parser, the
// dialects' verifiers, the graph-signature check and the index-bound
// annotation), as `spmdc model.mlir` reads them.
//
//===----------------------------------------------------------------------===//

#include "MlirFuzzSupport.h"

#include "spmdc/Import/Import.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "fuzz.mlir"), llvm::SMLoc());
  (void)spmdc::importGraph(sourceMgr, spmdc::InputFormat::Mlir,
                           spmdc::fuzz::context());
  return 0;
}
