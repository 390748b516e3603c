//===- spmdc-opt.cpp - mlir-opt with every spmdc dialect and pass ---------===//
//
// The tool lit tests drive passes through.
//
//===----------------------------------------------------------------------===//

#include "spmdc/InitAll.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  spmdc::registerAllDialects(registry);
  spmdc::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "spmdc optimizer driver\n", registry));
}
