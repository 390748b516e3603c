//===- Passes.h - conversions out of the tg dialect -------------*- C++ -*-===//

#ifndef SPMDC_CONVERSION_PASSES_H
#define SPMDC_CONVERSION_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace spmdc {

/// Marks an argument of an entry point whose buffer the step may take for
/// its result (--mark-donated-arguments); --return-donated-arguments
/// removes it once the buffers are placed.
inline constexpr llvm::StringLiteral kDonatedAttr = "spmdc.donated";

#define GEN_PASS_DECL
#include "spmdc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "spmdc/Conversion/Passes.h.inc"

} // namespace spmdc

#endif // SPMDC_CONVERSION_PASSES_H
