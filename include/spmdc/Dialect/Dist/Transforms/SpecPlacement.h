//===- SpecPlacement.h - a shard spec applied to a graph --------*- C++ -*-===//
//
// What the spec says about each argument of @main: presets per mesh axis,
// then explicit placements (which win), checked against the graph.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_DIALECT_DIST_TRANSFORMS_SPECPLACEMENT_H
#define SPMDC_DIALECT_DIST_TRANSFORMS_SPECPLACEMENT_H

#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Sharding/ShardSpec.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace spmdc::dist {

/// The mesh the spec names.
Mesh meshOf(const ShardSpec &spec);

/// The sharding of each argument of `main`; failure with one error naming
/// the spec entry or tensor at fault.
mlir::FailureOr<llvm::SmallVector<TensorSharding>>
placeArguments(mlir::func::FuncOp main, const ShardSpec &spec,
               const Mesh &mesh);

} // namespace spmdc::dist

#endif // SPMDC_DIALECT_DIST_TRANSFORMS_SPECPLACEMENT_H
