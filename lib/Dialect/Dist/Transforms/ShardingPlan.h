//===- ShardingPlan.h - what propagation and partitioning share -*- C++ -*-===//
//
// The planned shardings as the IR carries them between --dist-propagate and
// --dist-partition, and the one choice both make: which mesh axes an op's
// factors take from the shardings offered by its operands and result.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_LIB_DIALECT_DIST_TRANSFORMS_SHARDINGPLAN_H
#define SPMDC_LIB_DIALECT_DIST_TRANSFORMS_SHARDINGPLAN_H

#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace spmdc::dist {

using Axes = llvm::SmallVector<int>;
/// Axes per factor of a rule.
using FactorAxes = llvm::SmallVector<Axes>;
/// Per factor of a rule, the parts its split is strided in (1: contiguous
/// chunks; see TensorSharding::parts).
using FactorParts = llvm::SmallVector<int64_t>;

/// Where the split of a dim in `dimParts` parts lands among the factors the
/// dim spans (major first): the first factor that the parts do not cover
/// whole, and the parts left within it. A contiguous split lands on the
/// leading factor. nullopt if the parts cut a factor unevenly.
std::optional<std::pair<int, int64_t>>
factorOfDim(llvm::ArrayRef<int> factors, int64_t dimParts,
            const tg::ShardingRule &rule);

/// Who leads when shardings disagree: lower goes first.
enum SourcePriority : int {
  /// The result, seen from its consumers (the backward sweep).
  kResultLeading = -1,
  /// Anything computed from data.
  kActivation = 0,
  /// Parameters, optimizer state and constants.
  kParameter = 1,
  /// The result's planned sharding, for factors the operands leave whole.
  kResultTrailing = 2,
};

/// A known sharding of one side of an op, offered to its factors.
struct Source {
  const llvm::SmallVector<llvm::SmallVector<int>> *factorsPerDim;
  const TensorSharding *sharding;
  int priority;
  int64_t bytes;
};

int64_t bytesOf(mlir::Value v);

/// Gives factors the axes their sources are sharded on, first source first.
/// A source extends what a factor already has (the same axes, then more)
/// and contributes the longest prefix of its axes that no other factor
/// uses and that divides the factor; a factor that must stay whole gets
/// nothing. Factors the result keeps are settled before contracted ones.
/// Axes in `parametersLead` are settled first, with parameters ahead of
/// activations.
///
/// A source's dim in parts offers its axes to the factor factorOfDim
/// names, in the parts left there; a factor keeps the parts of the source
/// that gave it its first axis, and later sources must agree. A factor
/// split in parts, or one a dim spans after another factor, is split only
/// where its group divides each part (never padded). `parts`, when given,
/// receives each factor's parts.
FactorAxes assignFactors(const tg::ShardingRule &rule,
                         llvm::SmallVector<Source> sources, const Mesh &mesh,
                         const llvm::DenseSet<int> &parametersLead,
                         FactorParts *parts = nullptr);

/// The sharding of a value whose dims span `factorsPerDim`, under
/// `assigned`: each dim split as the first of its factors that has axes,
/// in the parts that the factors before it (whole) and its own make.
TensorSharding
shardingFromFactors(const llvm::SmallVector<llvm::SmallVector<int>> &factorsPerDim,
                    const FactorAxes &assigned, const tg::ShardingRule &rule,
                    llvm::ArrayRef<int64_t> parts);

/// The same, with the dims whose leading factor is padded (a size per
/// factor, 0 where it is not) padded to match: the factor's padded size
/// times the dim's other factors.
TensorSharding
shardingFromFactors(const llvm::SmallVector<llvm::SmallVector<int>> &factorsPerDim,
                    const FactorAxes &assigned, const tg::ShardingRule &rule,
                    llvm::ArrayRef<int64_t> parts,
                    llvm::ArrayRef<int64_t> paddedFactors);

/// Each value's priority: an argument's as given, an op result the lowest
/// of its operands' (kParameter for ops without operands).
void assignPriorities(mlir::Block &body, llvm::ArrayRef<int> argPriorities,
                      llvm::DenseMap<mlir::Value, int> &priority);

/// The mesh axes of the module's dist.parameters_lead.
llvm::DenseSet<int> parametersLeadAxes(mlir::ModuleOp module,
                                       const Mesh &mesh);

/// The #dist.sharding a function argument or an op's result carries.
ShardingAttr plannedShardingAttr(mlir::Value value);

} // namespace spmdc::dist

#endif // SPMDC_LIB_DIALECT_DIST_TRANSFORMS_SHARDINGPLAN_H
