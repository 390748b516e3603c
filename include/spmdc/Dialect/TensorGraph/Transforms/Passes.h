//===- Passes.h - passes over the tensor-graph dialect ----------*- C++ -*-===//

#ifndef SPMDC_DIALECT_TENSORGRAPH_TRANSFORMS_PASSES_H
#define SPMDC_DIALECT_TENSORGRAPH_TRANSFORMS_PASSES_H

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/Transforms/PassOptions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace spmdc::tg {

#define GEN_PASS_DECL
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h.inc"

} // namespace spmdc::tg

#endif // SPMDC_DIALECT_TENSORGRAPH_TRANSFORMS_PASSES_H
