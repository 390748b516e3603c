//===- PassOptions.h - the tg passes' enumerated options --------*- C++ -*-===//
//
// Plain C++ (no MLIR), so that spmdc's command line, built with exceptions
// and RTTI for CLI11, can name the values too.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_DIALECT_TENSORGRAPH_TRANSFORMS_PASSOPTIONS_H
#define SPMDC_DIALECT_TENSORGRAPH_TRANSFORMS_PASSOPTIONS_H

namespace spmdc::tg {

/// What --tg-partition saves for the backward.
enum class PartitionPolicy {
  /// Every forward value the backward uses (AOTAutograd's
  /// default_partition).
  SaveAll,
  /// A min-cut that recomputes cheap ops (AOTAutograd's
  /// min_cut_rematerialization_partition).
  MinCut
};

/// "save-all" or "min-cut", as the option and the tg.partition attribute
/// spell them.
inline const char *partitionPolicyName(PartitionPolicy policy) {
  return policy == PartitionPolicy::SaveAll ? "save-all" : "min-cut";
}

/// The update --tg-optimizer appends (torch.optim's semantics).
enum class OptimizerKind { SGD, AdamW };

/// "sgd" or "adamw", as the option, the command line and the spec spell
/// them.
inline const char *optimizerName(OptimizerKind kind) {
  return kind == OptimizerKind::SGD ? "sgd" : "adamw";
}

} // namespace spmdc::tg

#endif // SPMDC_DIALECT_TENSORGRAPH_TRANSFORMS_PASSOPTIONS_H
