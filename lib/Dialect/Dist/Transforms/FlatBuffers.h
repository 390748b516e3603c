//===- FlatBuffers.h - fusing collectives over flat buffers -----*- C++ -*-===//
//
// What --dist-fsdp-group and --dist-bucket-collectives share: which
// parameters @main takes split (FSDP's) or whole (DDP's buckets), which
// collectives are too large to share a buffer, the
// flattening, slicing and concatenation that pack several tensors into one
// buffer, and where a fused collective can go.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_LIB_DIALECT_DIST_TRANSFORMS_FLATBUFFERS_H
#define SPMDC_LIB_DIALECT_DIST_TRANSFORMS_FLATBUFFERS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

namespace spmdc::dist {

/// @main's parameters by name: true for those it takes split over some
/// mesh axis (ZeRO-3's, explicit `S(d)` placements), false for those it
/// takes whole on every rank (DDP's, ZeRO-1's and ZeRO-2's). Empty
/// without a @main.
llvm::StringMap<bool> mainParameters(mlir::ModuleOp module);

/// The bytes of the full (unsharded) tensor a collective moves (the
/// report's payload_bytes): an all-reduce's, an all-gather's result, a
/// reduce-scatter's input.
int64_t fullBytes(mlir::Operation *op);

/// Whether a reduce-scatter or all-gather keeps its own collective rather
/// than a rank-major buffer's, which copies each member's rank chunks in
/// and out apart: its full bytes reach `aloneMiB` MiB (0: none does).
bool staysAlone(mlir::Operation *op, double aloneMiB);

/// Where a fused collective and its buffer are: the first member's place,
/// named for what the buffer is ("gradient bucket"), so that the report's
/// peak_buffers tells a bucket from its first member.
mlir::Location bucketLoc(mlir::Operation *first, llvm::StringRef what);

/// `v` reshaped to one dim.
mlir::Value flatten(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v);

/// Elements [start, end) of `v` along `dim`.
mlir::Value sliceAlong(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                       int64_t dim, int64_t start, int64_t end);

/// `parts` concatenated along `dim` (the part itself when there is one).
mlir::Value concatAlong(mlir::OpBuilder &b, mlir::Location loc,
                        llvm::ArrayRef<mlir::Value> parts, int64_t dim = 0);

/// Where one collective that replaces `members` (collectives of one block)
/// can go: after the last of their inputs. Members with a use before that
/// point stay alone (removed from `members`). Null: at the start of the
/// block.
mlir::Operation *
placeAfterInputs(llvm::SmallVectorImpl<mlir::Operation *> &members);

/// A builder just after `after`, or at the start of `block` when null.
mlir::OpBuilder builderAfter(mlir::Operation *after, mlir::Block &block);

/// The members' `origin`s, for a fused collective's `tensors`.
mlir::ArrayAttr memberNames(mlir::OpBuilder &b,
                            llvm::ArrayRef<mlir::Operation *> members);

} // namespace spmdc::dist

#endif // SPMDC_LIB_DIALECT_DIST_TRANSFORMS_FLATBUFFERS_H
