//===- ElideSliceCopies.cpp - one buffer where a slice was copied ---------===//
//
// --elide-slice-copies: on buffers, after one-shot bufferization. A
// concatenation bufferizes to a fresh buffer and one copy into it per
// input; taking a slice of it back out, reshaped, to a copy out of it. DDP's
// gradient buckets (--dist-bucket-collectives) are both: each gradient is
// copied into the bucket before its all-reduce and out of the result after
// it, GPT-2 small's whole model twice a step on every rank. Where nothing
// else touches the slice while the other buffer lives, the other buffer
// becomes a view of the slice and the copy goes:
//
// - into: a fresh buffer copied whole into a contiguous slice of another,
//   and not used after the copy, is allocated in that slice; nothing may
//   use the host buffer whole before the copy. A loop that hands the
//   buffer through (an embedding's scatter-add) is the buffer.
// - out of: a fresh buffer filled by a copy of a contiguous slice of
//   another, its first use, is that slice; nothing may use the host
//   buffer whole after the copy.
//
// Other slices of the host (static subviews that do not overlap the
// slice) may be used anywhere. The host is allocated as bytes and every
// buffer in it is a `memref.view`, whose layout stays the identity (the
// vectorizer and the calls between functions want identity layouts).
//
//===----------------------------------------------------------------------===//

#include "BufferOrigins.h"

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace spmdc {
#define GEN_PASS_DEF_ELIDESLICECOPIES
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

/// An interval of elements of a host buffer.
struct Region {
  int64_t begin = 0, end = 0;
  bool overlaps(Region o) const { return begin < o.end && o.begin < end; }
};

/// The elements a static subview of an identity-layout buffer covers, if
/// they are contiguous.
std::optional<Region> contiguousRegion(memref::SubViewOp subview) {
  MemRefType type = subview.getType();
  if (!memref::isStaticShapeAndContiguousRowMajor(type))
    return std::nullopt;
  auto [strides, offset] = type.getStridesAndOffset();
  if (ShapedType::isDynamic(offset))
    return std::nullopt;
  return Region{offset, offset + type.getNumElements()};
}

/// A fresh buffer a slice copy may be folded into or out of: a static
/// `memref.alloc` with the identity layout, of whole-byte numbers, that
/// asks for no alignment of its own (a view of another keeps only the
/// element's).
memref::AllocOp freshBuffer(Value v) {
  auto alloc = v.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc.getAlignment())
    return {};
  MemRefType type = alloc.getType();
  Type element = type.getElementType();
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
      type.getMemorySpace() || !element.isIntOrFloat() ||
      element.getIntOrFloatBitWidth() % 8 != 0)
    return {};
  return alloc;
}

/// The bytes of one element of `type`.
int64_t elementBytes(MemRefType type) {
  return type.getElementType().getIntOrFloatBitWidth() / 8;
}

/// The buffer a loop hands through unchanged: the initial value of an
/// `scf.for` iteration argument whose every iteration yields the buffer it
/// got (itself, or through a loop nested in it that does the same), as an
/// in-place scatter-add bufferizes. Null for any other value.
Value loopCarriedBuffer(Value v) {
  auto result = dyn_cast<OpResult>(v);
  auto loop = result ? dyn_cast<scf::ForOp>(result.getOwner()) : nullptr;
  if (!loop)
    return {};
  unsigned index = result.getResultNumber();
  Value iterationArgument = loop.getRegionIterArgs()[index];
  Value yielded = loop.getYieldedValues()[index];
  while (yielded != iterationArgument) {
    yielded = loopCarriedBuffer(yielded);
    if (!yielded)
      return {};
  }
  return loop.getInitArgs()[index];
}

/// The buffer `v` reshapes (through memref.reshape, collapse_shape,
/// expand_shape and cast of identity layouts, which keep the elements'
/// order, and loops that hand a buffer through), or `v`.
Value reshapedBuffer(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (Value carried = loopCarriedBuffer(v)) {
      v = carried;
      continue;
    }
    if (!isa<memref::ReshapeOp, memref::CollapseShapeOp, memref::ExpandShapeOp,
             memref::CastOp>(def))
      break;
    auto type = dyn_cast<MemRefType>(def->getOperand(0).getType());
    if (!type || !type.getLayout().isIdentity())
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// A slice copy that can go: `buffer`, a fresh buffer, becomes the elements
/// `region` of `host`.
struct Fold {
  memref::CopyOp copy;
  memref::AllocOp host, buffer;
  Region region;
  bool into; ///< the copy was into the host (else out of it)
};

/// Whether `host`'s uses other than `slice` stay out of `region` (static
/// subviews that do not overlap it) or lie wholly before (`before`) or
/// after `copy`.
bool hostFreeAround(memref::AllocOp host, memref::SubViewOp slice,
                    Region region, memref::CopyOp copy, bool before) {
  DenseSet<Operation *> elsewhere{slice};
  for (Operation *user : host->getUsers())
    if (auto other = dyn_cast<memref::SubViewOp>(user))
      if (std::optional<Region> r = contiguousRegion(other);
          r && !r->overlaps(region))
        elsewhere.insert(other);
  spmdc::BufferSpan span = spmdc::spanOf(host, copy->getBlock(), elsewhere);
  if (span.escapes)
    return false;
  if (!span.first)
    return true;
  return before ? span.last->isBeforeInBlock(copy)
                : copy->isBeforeInBlock(span.first);
}

/// The fold `copy` allows, if any.
std::optional<Fold> foldOf(memref::CopyOp copy) {
  Block *block = copy->getBlock();
  for (bool into : {true, false}) {
    Value sliceSide = into ? copy.getTarget() : copy.getSource();
    Value freshSide = into ? copy.getSource() : copy.getTarget();
    auto slice = sliceSide.getDefiningOp<memref::SubViewOp>();
    if (!slice || !slice->hasOneUse())
      continue;
    memref::AllocOp host = freshBuffer(slice.getSource());
    memref::AllocOp buffer = freshBuffer(reshapedBuffer(freshSide));
    std::optional<Region> region = contiguousRegion(slice);
    if (!host || !buffer || host == buffer || !region ||
        host->getBlock() != block || buffer->getBlock() != block ||
        buffer.getType().getElementType() !=
            host.getType().getElementType() ||
        buffer.getType().getNumElements() != region->end - region->begin)
      continue;
    spmdc::BufferSpan span = spmdc::spanOf(buffer, block);
    if (span.escapes ||
        (into ? span.last != copy.getOperation()
              : span.first != copy.getOperation()))
      continue;
    if (!hostFreeAround(host, slice, *region, copy, /*before=*/!into))
      continue;
    return Fold{copy, host, buffer, *region, into};
  }
  return std::nullopt;
}

/// `host` as bytes, allocated where `at` is, and itself a view of them.
Value hostBytes(memref::AllocOp host, Operation *at) {
  OpBuilder b(at);
  MemRefType type = host.getType();
  int64_t bytes = type.getNumElements() * elementBytes(type);
  auto bytesType = MemRefType::get({bytes}, b.getI8Type());
  Value raw = memref::AllocOp::create(b, host.getLoc(), bytesType);
  b.setInsertionPoint(host);
  Value zero = arith::ConstantIndexOp::create(b, host.getLoc(), 0);
  Value whole =
      memref::ViewOp::create(b, host.getLoc(), type, raw, zero, ValueRange{});
  host.getResult().replaceAllUsesWith(whole);
  host.erase();
  return raw;
}

struct ElideSliceCopiesPass
    : spmdc::impl::ElideSliceCopiesBase<ElideSliceCopiesPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    // Decided on the IR as it is, done after. A buffer is folded into one
    // host at most and is then no host itself.
    SmallVector<Fold> folds;
    DenseSet<Operation *> folded, hosts;
    fn.walk([&](memref::CopyOp copy) {
      std::optional<Fold> fold = foldOf(copy);
      if (!fold || folded.contains(fold->buffer) ||
          folded.contains(fold->host) || hosts.contains(fold->buffer))
        return;
      folds.push_back(*fold);
      folded.insert(fold->buffer);
      hosts.insert(fold->host);
    });
    // Each host's bytes, allocated before the first buffer folded into it.
    llvm::MapVector<Operation *, Operation *> firstUse;
    for (Fold fold : folds) {
      Operation *at = fold.into ? fold.buffer.getOperation()
                                : fold.host.getOperation();
      Operation *&first = firstUse[fold.host];
      if (!first)
        first = fold.host;
      if (at->isBeforeInBlock(first))
        first = at;
    }
    DenseMap<Operation *, Value> bytesOf;
    for (auto [host, at] : firstUse)
      bytesOf[host] = hostBytes(cast<memref::AllocOp>(host), at);
    for (Fold fold : folds) {
      // Into: where the buffer was allocated; out of: at the copy, which
      // comes before any other use of the buffer.
      Operation *at = fold.into ? fold.buffer.getOperation()
                                : fold.copy.getOperation();
      OpBuilder b(at);
      MemRefType type = fold.buffer.getType();
      int64_t shift = fold.region.begin * elementBytes(type);
      Value offset = arith::ConstantIndexOp::create(b, fold.copy.getLoc(),
                                                     shift);
      Value view = memref::ViewOp::create(b, fold.buffer.getLoc(), type,
                                          bytesOf[fold.host], offset,
                                          ValueRange{});
      Value slice = fold.into ? fold.copy.getTarget() : fold.copy.getSource();
      fold.copy.erase();
      slice.getDefiningOp()->erase();
      fold.buffer.getResult().replaceAllUsesWith(view);
      fold.buffer.erase();
    }
  }
};

} // namespace
