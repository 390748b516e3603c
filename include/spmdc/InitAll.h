//===- InitAll.h - register every spmdc dialect and pass --------*- C++ -*-===//
//
// One place that lists what the tools register, so that spmdc, spmdc-opt and
// spmd-run accept the same IR.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_INITALL_H
#define SPMDC_INITALL_H

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/Dist/Transforms/Passes.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"
#include "spmdc/Pipeline/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace spmdc {

/// Registers the dialects every stage's IR may contain.
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<tg::TensorGraphDialect, dist::DistDialect,
                  mlir::func::FuncDialect>();
}

/// Registers the project's passes, the upstream ones its pipelines use and
/// the lower stage's pipelines (spmdc-lower-cpu, spmdc-lower-cuda).
inline void registerAllPasses() {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  tg::registerTensorGraphPasses();
  dist::registerDistPasses();
  registerConversionPasses();
  registerLoweringPipelines();
}

} // namespace spmdc

#endif // SPMDC_INITALL_H
