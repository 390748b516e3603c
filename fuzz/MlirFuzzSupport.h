//===- MlirFuzzSupport.h - an MLIR context for the harnesses ----*- C++ -*-===//
//
// The readers that report through MLIR diagnostics (graphs, shard specs,
// module signatures) run in one context per process with every spmdc
// dialect loaded; diagnostics are counted and dropped, not printed, so a
// run's output stays libFuzzer's.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_FUZZ_MLIRFUZZSUPPORT_H
#define SPMDC_FUZZ_MLIRFUZZSUPPORT_H

#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdlib>

namespace spmdc::fuzz {

/// The process's context. Threading is off: one input at a time, and no
/// thread pool to start per process.
inline mlir::MLIRContext &context() {
  static mlir::MLIRContext *context = [] {
    mlir::DialectRegistry registry;
    registry.insert<tg::TensorGraphDialect, dist::DistDialect,
                    mlir::func::FuncDialect>();
    auto *c = new mlir::MLIRContext(registry,
                                    mlir::MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    // SPMDC_FUZZ_PRINT=1 prints the diagnostics (to see why an input is
    // refused).
    bool print = std::getenv("SPMDC_FUZZ_PRINT") != nullptr;
    c->getDiagEngine().registerHandler([print](mlir::Diagnostic &d) {
      if (print)
        llvm::errs() << d.getLocation() << ": " << d << "\n";
      return mlir::success();
    });
    return c;
  }();
  return *context;
}

} // namespace spmdc::fuzz

#endif // SPMDC_FUZZ_MLIRFUZZSUPPORT_H
