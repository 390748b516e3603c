//===- ShardSpec.h - the shard spec a user gives spmdc ----------*- C++ -*-===//
//
// The JSON file that names a device mesh and how each tensor is placed on
// it (docs/shard-spec.md): mesh axes and shape, presets per axis, explicit
// placements per tensor name or glob, batch dims, and optimizer settings.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_SHARDING_SHARDSPEC_H
#define SPMDC_SHARDING_SHARDSPEC_H

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"
#include "spmdc/Dialect/TensorGraph/Transforms/PassOptions.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace spmdc {

/// Where a tensor sits along one mesh axis.
struct Placement {
  enum class Kind { Replicate, Shard, Partial };
  Kind kind = Kind::Replicate;
  /// The sharded tensor dim (Shard only; may be negative until resolved).
  int64_t dim = 0;

  /// Parses "R", "P" or "S(d)".
  static std::optional<Placement> parse(llvm::StringRef text);
  std::string str() const;
  bool operator==(const Placement &other) const {
    return kind == other.kind && (kind != Kind::Shard || dim == other.dim);
  }
};

/// An explicit placement rule: a tensor name or glob, and a placement per
/// named mesh axis.
struct TensorRule {
  std::string pattern;
  bool isGlob = false;
  std::map<std::string, Placement> placements;
  /// Where the rule sits in the file, for errors ("/tensors/fc1.weight").
  std::string pointer;
};

/// What a preset does along its mesh axis (docs/sharding.md#what-each-preset-does).
enum class Preset { Ddp, Zero1, Zero2, Zero3, Megatron, Sequence };

/// The preset a spec names ("ddp", ..., "sequence"); nullopt if none.
std::optional<Preset> parsePreset(llvm::StringRef name);
llvm::StringRef presetName(Preset preset);
/// ddp and the ZeRO stages: the batch split over the axis.
bool isDataParallel(Preset preset);
/// ZeRO: optimizer state split over the axis (zero3: parameters too).
bool isZero(Preset preset);

/// The most ranks a mesh may have (2^20); a spec over more is refused.
constexpr int64_t kMaxMeshRanks = int64_t(1) << 20;

struct ShardSpec {
  std::string fileName;
  std::vector<std::string> axes;
  std::vector<int64_t> shape;
  /// Mesh axis -> preset.
  std::map<std::string, Preset> presets;
  std::vector<TensorRule> tensors;
  /// Data input name or glob -> its batch dim (default 0).
  std::vector<std::pair<std::string, int64_t>> batchDims;
  /// The "optimizer" object: name and hyperparameters, all optional.
  std::optional<tg::OptimizerKind> optimizer;
  std::map<std::string, double> optimizerSettings;
  /// The "network" object: the simulated cluster of the report's network
  /// estimate (alpha_us, gbps, flops, ranks), all optional.
  std::map<std::string, double> networkSettings;

  int64_t numRanks() const;
  /// The index of a mesh axis, or -1.
  int axisIndex(llvm::StringRef axis) const;
  /// The explicit rule for `name`: an exact name beats a glob, a longer
  /// glob beats a shorter one. Null if none matches.
  const TensorRule *findRule(llvm::StringRef name) const;
  /// The batch dim of data input `name`.
  int64_t batchDim(llvm::StringRef name) const;
};

/// Reads a shard spec; errors go to the context's diagnostics with the
/// file and a JSON pointer.
std::optional<ShardSpec> parseShardSpec(llvm::StringRef text,
                                        llvm::StringRef fileName,
                                        mlir::MLIRContext &context);

/// Reads the shard spec at `path` ('-' is not allowed: stdin carries the
/// graph).
std::optional<ShardSpec> readShardSpec(llvm::StringRef path,
                                       mlir::MLIRContext &context);

} // namespace spmdc

#endif // SPMDC_SHARDING_SHARDSPEC_H
