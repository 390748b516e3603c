//===- StepSignature.h - a step's values and their shardings ----*- C++ -*-===//
//
// What the runner knows of a step before it runs it: each argument and
// result (name, role, the type a rank holds), how it is spread over the
// mesh and the logical type it is a block of. Read from a compiled
// module's header or from IR's `@main` and its `dist.*` attributes.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNNER_STEPSIGNATURE_H
#define SPMDC_RUNNER_STEPSIGNATURE_H

#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Runtime/SafeTensors.h"

#include <optional>
#include <string>
#include <vector>

namespace spmdc {
struct ModuleFile;
} // namespace spmdc

namespace spmdc::runner {

/// A value's sharding over the mesh and the logical type it is a block of.
struct Sharded {
  dist::TensorSharding sharding;
  mlir::RankedTensorType logicalType;
};

/// The step's arguments and results, in order, with their shardings.
struct StepSignature {
  std::vector<tg::GraphValueInfo> arguments, results;
  std::vector<Sharded> argumentShardings, resultShardings;
  /// The mesh the values are spread over: the module's or program's, or one
  /// rank of no axes.
  dist::Mesh mesh;
};

/// Reads the mesh of a module's header into `mesh`; false if it is
/// malformed (axes without sizes, a size below 1).
bool readModuleMesh(const ModuleFile &file, dist::Mesh &mesh);

/// Reads a module's arguments and results and their shardings on
/// `signature.mesh` (read first); false with `error` set.
bool readModuleSignature(const ModuleFile &file, mlir::MLIRContext &context,
                         StepSignature &signature, std::string &error);

/// Reads the arguments and results of a program's verified entry function
/// and their `dist.sharding`s on `signature.mesh` (`hasMesh`: the program
/// has a `dist.mesh`); false with `error` set.
bool readProgramSignature(mlir::func::FuncOp entry, bool hasMesh,
                          StepSignature &signature, std::string &error);

/// e.g. "tensor<4x2xf32> [S(dp), R]".
std::string describe(mlir::RankedTensorType type, const Sharded &sharded,
                     const dist::Mesh &mesh);

/// The runtime's dtype of tensors of `element`; nullopt if it has none.
std::optional<rt::DType> dtypeOf(mlir::Type element);

} // namespace spmdc::runner

#endif // SPMDC_RUNNER_STEPSIGNATURE_H
