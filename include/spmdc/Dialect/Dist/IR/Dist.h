//===- Dist.h - the distribution dialect, mesh and shardings ----*- C++ -*-===//
//
// The dist dialect's collectives, the device mesh (a module attribute) and a
// tensor's sharding over it (an attribute on @main's arguments and results),
// with the arithmetic of groups and shards that the shard pass, the
// interpreter and the runner share.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_DIALECT_DIST_IR_DIST_H
#define SPMDC_DIALECT_DIST_IR_DIST_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <string>

#include "spmdc/Dialect/Dist/IR/DistOpsDialect.h.inc"

#include "spmdc/Dialect/Dist/IR/DistEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "spmdc/Dialect/Dist/IR/DistAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "spmdc/Dialect/Dist/IR/DistOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "spmdc/Dialect/Dist/IR/DistOps.h.inc"

namespace spmdc::dist {

/// Module attribute: the device mesh of a partitioned (per-rank) program.
inline constexpr llvm::StringLiteral kMeshAttr = "dist.mesh";
/// Module attribute: the mesh a program not yet partitioned is planned for
/// (--dist-apply-spec sets it, --dist-partition turns it into dist.mesh).
inline constexpr llvm::StringLiteral kPlannedMeshAttr = "dist.planned_mesh";
/// Module attribute: mesh axes where parameters' shardings lead
/// activations' (sequence parallelism: the weights stay put, activations
/// move).
inline constexpr llvm::StringLiteral kParametersLeadAttr =
    "dist.parameters_lead";
/// A #dist.sharding: on @main's arguments and results; before partitioning
/// also on every op (its result's planned sharding) and function argument.
inline constexpr llvm::StringLiteral kShardingAttr = "dist.sharding";

/// A named N-D device mesh; rank r sits at the row-major multi-index.
struct Mesh {
  llvm::SmallVector<std::string> axes;
  llvm::SmallVector<int64_t> shape;

  int64_t numRanks() const;
  int axisIndex(llvm::StringRef name) const;
  llvm::SmallVector<int64_t> coordinates(int64_t rank) const;
  int64_t rankAt(llvm::ArrayRef<int64_t> coordinates) const;
  /// The number of ranks in a group over `axes`.
  int64_t groupSize(llvm::ArrayRef<int> axes) const;
  /// `rank`'s index in its group over `axes` (first axis most significant).
  int64_t groupIndex(int64_t rank, llvm::ArrayRef<int> axes) const;
  /// The ranks of `rank`'s group over `axes`, in group order.
  llvm::SmallVector<int64_t> groupMembers(int64_t rank,
                                         llvm::ArrayRef<int> axes) const;
  /// Axis indices of axis names; failure for an unknown name.
  mlir::FailureOr<llvm::SmallVector<int>> axisIndices(mlir::ArrayAttr names) const;
  mlir::ArrayAttr axisNames(mlir::MLIRContext *context,
                            llvm::ArrayRef<int> axes) const;

  mlir::DictionaryAttr toAttr(mlir::MLIRContext *context) const;
  /// The mesh of the module `op` is in (its `attrName`: dist.mesh or
  /// dist.planned_mesh), or failure (with an error at `op`).
  static mlir::FailureOr<Mesh> of(mlir::Operation *op,
                                  llvm::StringRef attrName = kMeshAttr);
};

/// How a logical tensor is spread over the mesh: each dim split over a list
/// of axes (first most significant), and summed over the partial axes.
///
/// A dim whose size the group does not divide is padded at its end to the
/// next multiple (GSPMD's pad and mask): every rank holds an equal chunk of
/// the padded dim, and the positions past the logical size hold values no
/// result depends on (the shard stage masks them before any sum over the
/// dim).
///
/// A split dim may be viewed as `parts` equal parts, each cut into the
/// group's chunks (a strided layout, DTensor's _StridedShard): rank i holds
/// chunk i of every part, the parts one after another. A fused QKV weight
/// [3d, d] in 3 parts gives each rank its rows of q, then of k, then of v,
/// so that slicing q, k or v out of it needs no communication. A dim in
/// parts is never padded: its group divides each part.
struct TensorSharding {
  llvm::SmallVector<llvm::SmallVector<int>> dims;
  llvm::SmallVector<int> partial;
  /// Per dim, the size it is padded to; 0 (or absent) where it is not.
  llvm::SmallVector<int64_t, 0> padded;
  /// Per dim, the parts it is viewed as; 0, 1 (or absent) where it is cut
  /// into contiguous chunks. Meaningful only for a split dim.
  llvm::SmallVector<int64_t, 0> parts;

  static TensorSharding replicated(int64_t rank);
  bool isReplicated() const;
  bool operator==(const TensorSharding &other) const;
  bool operator!=(const TensorSharding &other) const {
    return !(*this == other);
  }
  /// The size dim `d` is padded to, or 0.
  int64_t paddedSize(size_t d) const {
    return d < padded.size() ? padded[d] : 0;
  }
  void setPadded(size_t d, int64_t size);
  /// The parts dim `d` is viewed as (1: contiguous chunks, or whole).
  int64_t partsOf(size_t d) const {
    return d < parts.size() && parts[d] > 1 && !dims[d].empty() ? parts[d]
                                                                 : 1;
  }
  void setParts(size_t d, int64_t count);
  /// True if some dim is in parts.
  bool hasParts() const;
  /// Pads each split dim that its group does not divide to the next
  /// multiple of the group (the padding of every function boundary).
  void padUneven(llvm::ArrayRef<int64_t> logical, const Mesh &mesh);
  /// The mesh axes any dim uses.
  llvm::SmallVector<int> shardedAxes() const;
  /// Per-rank shape; failure if a dim (padded where it is, each part where
  /// it is in parts) does not divide evenly.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  localShape(llvm::ArrayRef<int64_t> logical, const Mesh &mesh) const;
  /// The block of the logical tensor that `rank` holds: its offsets, and
  /// its sizes within the logical tensor (short of the local shape, or 0,
  /// where the rank's chunk reaches into the padding). For a sharding with
  /// a dim in parts, the first of its pieces (see piecesOf).
  void blockOf(int64_t rank, llvm::ArrayRef<int64_t> logical, const Mesh &mesh,
               llvm::SmallVectorImpl<int64_t> &offsets,
               llvm::SmallVectorImpl<int64_t> &sizes) const;
  /// One box of the logical tensor that a rank holds, and where it sits in
  /// the rank's local tensor.
  struct Piece {
    llvm::SmallVector<int64_t> offsets, sizes, localOffsets;
  };
  /// The boxes of the logical tensor that `rank` holds: its block (one
  /// piece, at the local tensor's origin) unless a dim is in parts, where
  /// each part contributes a piece.
  llvm::SmallVector<Piece> piecesOf(int64_t rank,
                                    llvm::ArrayRef<int64_t> logical,
                                    const Mesh &mesh) const;
  /// e.g. "[S(dp), R] P(tp)", "[S(dp) padded to 8, R]", "[S(tp) in 3 parts,
  /// R]".
  std::string str(const Mesh &mesh) const;

  /// As an attribute, with where the sharding came from (empty: none).
  ShardingAttr toAttr(mlir::MLIRContext *context, const Mesh &mesh,
                      llvm::StringRef origin = "") const;
  /// Failure if an axis is not the mesh's or the rank differs.
  static mlir::FailureOr<TensorSharding>
  fromAttr(ShardingAttr attr, const Mesh &mesh, int64_t rank);
};

/// True if `logical` is the shape whose dims, each padded to the next
/// multiple of its group under `sharding`, split into `local`.
bool isValidPadding(const TensorSharding &sharding,
                    llvm::ArrayRef<int64_t> local,
                    llvm::ArrayRef<int64_t> logical, const Mesh &mesh);

} // namespace spmdc::dist

#endif // SPMDC_DIALECT_DIST_IR_DIST_H
