//===- Passes.h - sharding passes -------------------------------*- C++ -*-===//

#ifndef SPMDC_DIALECT_DIST_TRANSFORMS_PASSES_H
#define SPMDC_DIALECT_DIST_TRANSFORMS_PASSES_H

#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/Dist/Transforms/PassOptions.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Sharding/ShardSpec.h"

#include "mlir/Pass/Pass.h"

namespace spmdc::dist {

#define GEN_PASS_DECL
#include "spmdc/Dialect/Dist/Transforms/Passes.h.inc"

/// --dist-apply-spec with an already parsed spec (the driver's way).
std::unique_ptr<mlir::Pass> createDistApplySpec(ShardSpec spec);

/// The shard stage: apply the spec, propagate, and (unless `partition` is
/// false: --emit=propagate) partition and group the parameters'
/// collectives.
void addShardPasses(mlir::OpPassManager &pm, ShardSpec spec,
                    bool partition = true,
                    FsdpGroup fsdpGroup = FsdpGroup::Layer);

#define GEN_PASS_REGISTRATION
#include "spmdc/Dialect/Dist/Transforms/Passes.h.inc"

} // namespace spmdc::dist

#endif // SPMDC_DIALECT_DIST_TRANSFORMS_PASSES_H
