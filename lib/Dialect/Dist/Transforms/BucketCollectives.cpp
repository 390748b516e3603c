//===- BucketCollectives.cpp - DDP's buckets (--dist-bucket-collectives) --===//
//
// Data parallelism as DDP and PyTorch's _spmd (comm_fusion_with_concat) run
// it: the gradients' collectives go in buckets of a few MiB rather than one
// per tensor, so the step pays the latency of a handful of messages instead
// of one per parameter. The gradient all-reduces (ddp), the gradient
// reduce-scatters of the parameters @main takes whole (zero1, zero2) and
// the all-gathers of those parameters after the update are cut, in program
// order (the backward's order of the gradients: the reverse of their use),
// into buckets: the first closed once its full bytes reach `first-mb`,
// each later one once they reach `mb`. A bucket flattens its tensors,
// concatenates them, runs one collective over the same axes, element type
// and reduction, and slices and reshapes each tensor back out.
//
// A reduce-scatter's or all-gather's buffer is laid out rank-major, as
// --dist-fsdp-group lays out its groups: rank 0's chunk of every member,
// then rank 1's, so each rank's chunk of the buffer holds its chunk of
// every member, whatever dim a member is split on. Each member's chunks
// are then copied in and out apart, so a large one (`alone-mb`) keeps its
// own collective, which reads the gradient and writes the shard in place.
//
//===----------------------------------------------------------------------===//

#include "FlatBuffers.h"

#include "spmdc/Dialect/Dist/Transforms/Passes.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <map>

namespace spmdc::dist {
#define GEN_PASS_DEF_DISTBUCKETCOLLECTIVES
#include "spmdc/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace spmdc::dist

using namespace mlir;
using namespace spmdc;
using namespace spmdc::dist;
using tg::typeOf;

namespace {

/// The tensor a collective the pass buckets carries, or null: a gradient's
/// all-reduce (backward), the reduce-scatter of the gradient of a
/// parameter @main takes whole (backward) and that parameter's all-gather
/// after the update (optimizer). ZeRO-3's parameters (those @main takes
/// split) and groups --dist-fsdp-group formed stay as they are. Without a
/// @main, any collective whose origin is not an activation, the loss or
/// the gradients' norm counts as a parameter's.
StringAttr bucketedTensor(Operation *op,
                          const llvm::StringMap<bool> &parameters) {
  auto origin = op->getAttrOfType<StringAttr>("origin");
  auto phase = op->getAttrOfType<PhaseAttr>("phase");
  if (!origin || !phase || op->hasAttr("tensors"))
    return {};
  StringRef name = origin.getValue();
  auto it = parameters.find(name);
  if (parameters.empty()
          ? (name == "activation" || name == "loss" || name == "grad_norm")
          : it == parameters.end())
    return {};
  bool split = it != parameters.end() && it->second;
  if (isa<AllReduceOp>(op))
    return phase.getValue() == Phase::backward ? origin : StringAttr();
  if (isa<ReduceScatterOp>(op))
    return !split && phase.getValue() == Phase::backward ? origin
                                                         : StringAttr();
  if (isa<AllGatherOp>(op))
    return !split && phase.getValue() == Phase::optimizer ? origin
                                                          : StringAttr();
  return {};
}

/// Collectives that may share a bucket: same kind, axes, phase, element
/// type and reduction.
std::string bucketKey(Operation *op) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op->getName() << "|" << op->getAttr("axes") << "|"
     << op->getAttr("phase") << "|"
     << typeOf(op->getOperand(0)).getElementType();
  if (auto reduce = dyn_cast<AllReduceOp>(op))
    os << "|" << stringifyReduction(reduce.getReduction());
  return key;
}

/// The dim a reduce-scatter or all-gather splits, and its group size.
std::pair<int64_t, int64_t> splitOf(Operation *op) {
  if (auto s = dyn_cast<ReduceScatterOp>(op))
    return {s.getDim(), typeOf(s.getInput()).getDimSize(s.getDim()) /
                            typeOf(s.getResult()).getDimSize(s.getDim())};
  auto g = cast<AllGatherOp>(op);
  return {g.getDim(), typeOf(g.getResult()).getDimSize(g.getDim()) /
                          typeOf(g.getInput()).getDimSize(g.getDim())};
}

/// `members` cut into buckets in order: the first closed once its bytes
/// reach `firstBytes`, each later one once they reach `bytes`.
SmallVector<SmallVector<Operation *>>
cutBuckets(ArrayRef<Operation *> members, double firstBytes, double bytes) {
  SmallVector<SmallVector<Operation *>> buckets(1);
  double budget = firstBytes;
  int64_t filled = 0;
  for (Operation *m : members) {
    buckets.back().push_back(m);
    filled += fullBytes(m);
    if (filled >= budget) {
      buckets.emplace_back();
      budget = bytes;
      filled = 0;
    }
  }
  if (buckets.back().empty())
    buckets.pop_back();
  return buckets;
}

/// Erases `members`, which `fused` replaces; its `tensors` names them.
Operation *finish(Operation *fused, ArrayRef<Operation *> members,
                  OpBuilder &b) {
  fused->setAttr("tensors", memberNames(b, members));
  for (Operation *m : members)
    m->erase();
  return fused;
}

/// Gives each member's result its run of `fused`, a flat buffer of the
/// members' results in order, reshaped back.
void splitBack(Value fused, ArrayRef<Operation *> members, OpBuilder &b,
               Location loc) {
  int64_t offset = 0;
  for (Operation *m : members) {
    RankedTensorType type = typeOf(m->getResult(0));
    m->getResult(0).replaceAllUsesWith(tg::reshapeTo(
        b, loc,
        sliceAlong(b, loc, fused, 0, offset, offset + type.getNumElements()),
        type));
    offset += type.getNumElements();
  }
}

/// One all-reduce of the members' flattened inputs.
Operation *fuseAllReduces(ArrayRef<Operation *> members, OpBuilder b) {
  auto first = cast<AllReduceOp>(members.front());
  Location loc = bucketLoc(first, "gradient bucket");
  SmallVector<Value> flat;
  for (Operation *m : members)
    flat.push_back(flatten(b, loc, m->getOperand(0)));
  Value buffer = concatAlong(b, loc, flat);
  auto reduced = AllReduceOp::create(
      b, loc, buffer.getType(), buffer, first.getAxes(), first.getPhaseAttr(),
      first.getOriginAttr(), first.getReductionAttr());
  splitBack(reduced, members, b, loc);
  return finish(reduced, members, b);
}

/// One reduce-scatter over dim 0 of the members' rank chunks, rank-major.
Operation *fuseReduceScatters(ArrayRef<Operation *> members, OpBuilder b) {
  auto first = cast<ReduceScatterOp>(members.front());
  Location loc = bucketLoc(first, "gradient bucket");
  int64_t parts = splitOf(first).second;
  SmallVector<Value> pieces;
  int64_t total = 0;
  for (Operation *m : members)
    total += typeOf(m->getResult(0)).getNumElements();
  for (int64_t r = 0; r < parts; ++r)
    for (Operation *m : members) {
      int64_t dim = splitOf(m).first;
      int64_t chunk = typeOf(m->getResult(0)).getDimSize(dim);
      pieces.push_back(flatten(b, loc,
                               sliceAlong(b, loc, m->getOperand(0), dim,
                                          r * chunk, (r + 1) * chunk)));
    }
  Type element = typeOf(first.getInput()).getElementType();
  auto scattered =
      ReduceScatterOp::create(b, loc, RankedTensorType::get({total}, element),
                              concatAlong(b, loc, pieces), first.getAxes(), 0,
                              first.getPhaseAttr(), first.getOriginAttr());
  splitBack(scattered, members, b, loc);
  return finish(scattered, members, b);
}

/// One all-gather over dim 0 of the members' flattened shards; each
/// member is its rank chunks sliced out, reshaped and concatenated along
/// its own dim.
Operation *fuseAllGathers(ArrayRef<Operation *> members, OpBuilder b) {
  auto first = cast<AllGatherOp>(members.front());
  Location loc = bucketLoc(first, "parameter bucket");
  int64_t parts = splitOf(first).second;
  SmallVector<Value> flat;
  SmallVector<int64_t> offsets;
  int64_t total = 0;
  for (Operation *m : members) {
    offsets.push_back(total);
    total += typeOf(m->getOperand(0)).getNumElements();
    flat.push_back(flatten(b, loc, m->getOperand(0)));
  }
  Type element = typeOf(first.getInput()).getElementType();
  auto gathered = AllGatherOp::create(
      b, loc, RankedTensorType::get({parts * total}, element),
      concatAlong(b, loc, flat), first.getAxes(), 0, first.getPhaseAttr(),
      first.getOriginAttr());
  for (auto [m, offset] : llvm::zip(members, offsets)) {
    RankedTensorType shard = typeOf(m->getOperand(0));
    SmallVector<Value> chunks;
    for (int64_t r = 0; r < parts; ++r) {
      int64_t start = r * total + offset;
      chunks.push_back(tg::reshapeTo(b, loc,
                                     sliceAlong(b, loc, gathered, 0, start,
                                                start + shard.getNumElements()),
                                     shard));
    }
    m->getResult(0).replaceAllUsesWith(
        concatAlong(b, loc, chunks, splitOf(m).first));
  }
  return finish(gathered, members, b);
}

/// A reduce-scatter or all-gather whose split dim its group does not
/// divide exactly (never made by --dist-partition, which pads) stays alone.
bool evenlySplit(Operation *op) {
  if (isa<AllReduceOp>(op))
    return true;
  auto [dim, parts] = splitOf(op);
  RankedTensorType full = isa<AllGatherOp>(op) ? typeOf(op->getResult(0))
                                               : typeOf(op->getOperand(0));
  RankedTensorType local = isa<AllGatherOp>(op) ? typeOf(op->getOperand(0))
                                                : typeOf(op->getResult(0));
  return parts > 0 && full.getDimSize(dim) == parts * local.getDimSize(dim);
}

struct DistBucketCollectivesPass
    : dist::impl::DistBucketCollectivesBase<DistBucketCollectivesPass> {
  using DistBucketCollectivesBase::DistBucketCollectivesBase;

  void runOnOperation() override {
    if (bucketMiB <= 0)
      return;
    const double mib = 1024.0 * 1024.0;
    // The first bucket is small so that the first reduction starts early
    // (DDP's and _spmd's 1 MiB); never larger than the others.
    double firstBytes = std::min(firstBucketMiB, bucketMiB) * mib;
    double bytes = bucketMiB * mib;
    llvm::StringMap<bool> parameters = mainParameters(getOperation());
    llvm::SmallPtrSet<Operation *, 8> fused;
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      Block &body = fn.getBody().front();
      llvm::MapVector<std::string, SmallVector<Operation *>,
                      std::map<std::string, unsigned>>
          streams;
      for (Operation &op : body)
        if (bucketedTensor(&op, parameters) && evenlySplit(&op) &&
            !staysAlone(&op, aloneMiB))
          streams[bucketKey(&op)].push_back(&op);
      for (auto &[key, members] : streams)
        for (SmallVector<Operation *> &bucket :
             cutBuckets(members, firstBytes, bytes)) {
          Operation *after = placeAfterInputs(bucket);
          if (bucket.size() < 2)
            continue;
          // No earlier than the first member: buckets keep the order of
          // their collectives.
          Operation *first = bucket.front();
          OpBuilder b = after && first->isBeforeInBlock(after)
                            ? builderAfter(after, body)
                            : OpBuilder(first);
          if (isa<AllReduceOp>(bucket.front()))
            fused.insert(fuseAllReduces(bucket, b));
          else if (isa<ReduceScatterOp>(bucket.front()))
            fused.insert(fuseReduceScatters(bucket, b));
          else
            fused.insert(fuseAllGathers(bucket, b));
        }
    }
    // Named per phase in the order the step runs them: `gradient bucket 0`,
    // ... in the backward, `parameter bucket 0`, ... after the update.
    std::map<Phase, int> numbered;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal())
        for (Operation &op : fn.getBody().front())
          if (fused.contains(&op)) {
            Phase phase = op.getAttrOfType<PhaseAttr>("phase").getValue();
            op.setAttr("origin",
                       StringAttr::get(&getContext(),
                                       (phase == Phase::optimizer
                                            ? "parameter bucket "
                                            : "gradient bucket ") +
                                           std::to_string(numbered[phase]++)));
          }
  }
};

} // namespace
