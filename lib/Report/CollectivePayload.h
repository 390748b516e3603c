//===- CollectivePayload.h - what a collective moves, for the report -----===//
//
// The report's collectives and the network estimate's schedule both name a
// collective by its kind and size it by its payload: the full buffer
// across the group (the all-reduce's buffer, the gathered output, the
// reduce-scatter's input; for an all-to-all the local buffer).
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_LIB_REPORT_COLLECTIVEPAYLOAD_H
#define SPMDC_LIB_REPORT_COLLECTIVEPAYLOAD_H

#include "spmdc/Dialect/Dist/IR/Dist.h"

namespace spmdc {

struct CollectivePayload {
  /// "all_reduce", "all_gather", "reduce_scatter", "all_to_all"; empty for
  /// an op that is not a blocking collective.
  llvm::StringRef kind;
  mlir::Value payload;
};

inline CollectivePayload collectivePayload(mlir::Operation &op) {
  if (auto c = llvm::dyn_cast<dist::AllReduceOp>(op))
    return {"all_reduce", c.getInput()};
  if (auto c = llvm::dyn_cast<dist::AllGatherOp>(op))
    return {"all_gather", c.getResult()};
  if (auto c = llvm::dyn_cast<dist::ReduceScatterOp>(op))
    return {"reduce_scatter", c.getInput()};
  if (auto c = llvm::dyn_cast<dist::AllToAllOp>(op))
    return {"all_to_all", c.getInput()};
  return {};
}

} // namespace spmdc

#endif // SPMDC_LIB_REPORT_COLLECTIVEPAYLOAD_H
