//===- ModuleSignature.h - a step's signature for its module ----*- C++ -*-===//
//
// Reads @main's names, roles, dtypes and shapes at the tensor-graph level,
// before lowering turns them into memref descriptors, for the module's
// header.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_MODULE_MODULESIGNATURE_H
#define SPMDC_MODULE_MODULESIGNATURE_H

#include "spmdc/Module/ModuleFile.h"

#include "mlir/IR/BuiltinOps.h"

namespace spmdc {

/// The header of the module of `module`'s step, with the initial values its
/// arguments refer to (`tg.init_ref`) to copy into the weights section;
/// failure (with an error) for `tg.init` literals, which modules do not
/// carry.
mlir::FailureOr<ModuleFile> moduleSignature(mlir::ModuleOp module);

} // namespace spmdc

#endif // SPMDC_MODULE_MODULESIGNATURE_H
