//===- CollectivePayload.h - what a collective moves, for the report -----===//
//
// The report's collectives and the network estimate's schedule both name a
// collective by its kind and size it by its payload: the full buffer
// across the group (the all-reduce's buffer, the gathered output, the
// reduce-scatter's input; for an all-to-all the local buffer), blocking or
// started (`--overlap`).
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_LIB_REPORT_COLLECTIVEPAYLOAD_H
#define SPMDC_LIB_REPORT_COLLECTIVEPAYLOAD_H

#include "spmdc/Dialect/Dist/IR/Dist.h"

namespace spmdc {

struct CollectivePayload {
  /// "all_reduce", "all_gather", "reduce_scatter", "all_to_all"; empty for
  /// an op that is not a collective.
  llvm::StringRef kind;
  /// The payload's type (the full buffer across the group, as above).
  mlir::RankedTensorType payload;
  /// A dist.start_* op: issued here, its result waited for by dist.wait.
  bool started = false;
};

inline CollectivePayload collectivePayload(mlir::Operation &op) {
  auto type = [](mlir::Value v) {
    return llvm::cast<mlir::RankedTensorType>(v.getType());
  };
  if (auto c = llvm::dyn_cast<dist::AllReduceOp>(op))
    return {"all_reduce", type(c.getInput())};
  if (auto c = llvm::dyn_cast<dist::AllGatherOp>(op))
    return {"all_gather", type(c.getResult())};
  if (auto c = llvm::dyn_cast<dist::ReduceScatterOp>(op))
    return {"reduce_scatter", type(c.getInput())};
  if (auto c = llvm::dyn_cast<dist::AllToAllOp>(op))
    return {"all_to_all", type(c.getInput())};
  if (auto c = llvm::dyn_cast<dist::StartAllReduceOp>(op))
    return {"all_reduce", type(c.getInput()), true};
  if (auto c = llvm::dyn_cast<dist::StartAllGatherOp>(op))
    return {"all_gather", c.getResultType(), true};
  if (auto c = llvm::dyn_cast<dist::StartReduceScatterOp>(op))
    return {"reduce_scatter", type(c.getInput()), true};
  if (auto c = llvm::dyn_cast<dist::StartAllToAllOp>(op))
    return {"all_to_all", type(c.getInput()), true};
  return {};
}

} // namespace spmdc

#endif // SPMDC_LIB_REPORT_COLLECTIVEPAYLOAD_H
