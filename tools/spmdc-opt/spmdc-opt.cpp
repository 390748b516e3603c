//===- spmdc-opt.cpp - mlir-opt with every spmdc dialect and pass ---------===//
//
// The tool lit tests drive passes through: the project's dialects and passes
// plus MLIR's own, so a test can run a whole lowering pipeline.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/CallOpBufferization.h"
#include "spmdc/InitAll.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  // An op keeps the interface model attached first: the project's
  // replacement for MLIR's func.call bufferization model goes before MLIR's.
  spmdc::registerCallOpBufferization(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // The CUDA path serialises kernels through LLVM IR (gpu-module-to-binary).
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::registerAllPasses();
  spmdc::registerAllDialects(registry);
  spmdc::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "spmdc optimizer driver\n", registry));
}
