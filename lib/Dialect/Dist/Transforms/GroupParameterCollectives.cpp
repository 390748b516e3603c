//===- GroupParameterCollectives.cpp - FSDP's groups (--dist-fsdp-group) --===//
//
// ZeRO-3 as FSDP runs it: the parameters of one group are gathered by one
// all-gather and their gradients scattered by one reduce-scatter, over a
// flat buffer of the group's shards, rather than one collective per tensor.
// With `by=layer` (FSDP2's wrapping of each block) a group is the tensors
// whose names share the path up to its first numeric part
// (`h.0.attn.q_proj.weight` is in `h.0`); the rest (embeddings, the final
// norm) form the model's own group. With `by=MiB` (FSDP1's size-based
// wrapping, DDP's buckets) a group is a bucket of consecutive tensors, in
// the order the forward first gathers them, closed once its full bytes
// reach the size.
//
// The gathered buffer holds rank 0's shards of every member, then rank 1's,
// and so on; each member's logical tensor is its rank chunks sliced out and
// concatenated. The scattered buffer is built the same way from the full
// gradients, so each rank receives its chunk of every member. Those are
// copies of every byte, so a large tensor (`alone-mb`) keeps its own
// collectives: split on dim 0, its shard and its whole are the
// collective's buffers as they are.
//
//===----------------------------------------------------------------------===//

#include "FlatBuffers.h"

#include "spmdc/Dialect/Dist/Transforms/Passes.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

#include <functional>
#include <map>

namespace spmdc::dist {
#define GEN_PASS_DEF_DISTFSDPGROUP
#include "spmdc/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace spmdc::dist

using namespace mlir;
using namespace spmdc;
using namespace spmdc::dist;
using tg::typeOf;

namespace {

/// The block a tensor belongs to: its name up to the first numeric part,
/// or "" for the model's own tensors.
std::string blockOf(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  std::string prefix;
  for (StringRef part : parts) {
    prefix += (prefix.empty() ? "" : ".") + part.str();
    if (!part.empty() && llvm::all_of(part, llvm::isDigit))
      return prefix;
  }
  return "";
}

/// A parameter's collective over dim 0, or null.
StringAttr parameterOrigin(Operation *op) {
  auto origin = op->getAttrOfType<StringAttr>("origin");
  if (!origin || origin.getValue() == "activation" ||
      origin.getValue() == "loss")
    return {};
  return origin;
}

/// The tensor a collective the pass groups carries: a parameter's
/// all-gather or its gradient's reduce-scatter, over dim 0; null otherwise.
StringAttr groupedTensor(Operation *op) {
  if (auto g = dyn_cast<AllGatherOp>(op); g && g.getDim() == 0)
    return parameterOrigin(op);
  if (auto s = dyn_cast<ReduceScatterOp>(op); s && s.getDim() == 0)
    return parameterOrigin(op);
  return {};
}

bool isForwardGather(Operation *op) {
  auto g = dyn_cast<AllGatherOp>(op);
  return g && g.getPhase() == Phase::forward;
}

/// The group of each tensor whose collectives `module` groups, as `by`
/// says; a collective's group is its tensor's. Layer: the tensor's block.
/// Size: its bucket, the tensors taken in the order the forward first
/// gathers them (then the others, in program order), each bucket closed
/// once its tensors' full bytes reach the size, and a tensor of the size
/// or more a bucket of its own; so a bucket's gathers and its gradients'
/// reduce-scatter have the same members. Tensor: none (each stays alone).
/// Under every policy a tensor that staysAlone(aloneMiB) is in none.
llvm::StringMap<std::string> assignGroups(ModuleOp module, const FsdpGroup &by,
                                          double aloneMiB) {
  // Parameters @main takes whole (DDP's, ZeRO-1's and ZeRO-2's) are
  // --dist-bucket-collectives' to bucket, not FSDP's to group.
  llvm::StringMap<bool> split = mainParameters(module);
  SmallVector<Operation *> collectives;
  for (auto fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal())
      for (Operation &op : fn.getBody().front())
        if (StringAttr tensor = groupedTensor(&op)) {
          auto it = split.find(tensor.getValue());
          if ((it == split.end() || it->second) &&
              !staysAlone(&op, aloneMiB))
            collectives.push_back(&op);
        }
  llvm::StringMap<std::string> groups;
  switch (by.policy) {
  case FsdpGroup::Policy::Tensor:
    break;
  case FsdpGroup::Policy::Layer:
    for (Operation *op : collectives) {
      StringRef tensor = groupedTensor(op).getValue();
      groups[tensor] = blockOf(tensor);
    }
    break;
  case FsdpGroup::Policy::Size: {
    llvm::MapVector<StringRef, int64_t> tensors;
    for (bool forward : {true, false})
      for (Operation *op : collectives)
        if (isForwardGather(op) == forward)
          tensors.insert({groupedTensor(op).getValue(), fullBytes(op)});
    double budget = by.bucketMiB * 1024 * 1024;
    int bucket = 0;
    int64_t filled = 0;
    for (auto [tensor, bytes] : tensors) {
      if (filled > 0 && bytes >= budget) {
        ++bucket;
        filled = 0;
      }
      groups[tensor] = "bucket " + std::to_string(bucket);
      filled += bytes;
      if (filled >= budget) {
        ++bucket;
        filled = 0;
      }
    }
    break;
  }
  }
  return groups;
}

/// Collectives that may share one: same kind, axes, phase, element type
/// and group.
std::string groupKey(Operation *op, StringRef group) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op->getName() << "|" << op->getAttr("axes") << "|"
     << op->getAttr("phase") << "|" << typeOf(op->getOperand(0)).getElementType()
     << "|" << group;
  return key;
}

/// Moves the pure ops that compute `v` from values defined before `point`
/// up to just before it; false (nothing moved) if they do not lead back to
/// such values within a few ops.
bool hoistBefore(Value v, Operation *point, int depth = 4) {
  Operation *def = v.getDefiningOp();
  if (!def || def->isBeforeInBlock(point))
    return true;
  if (depth == 0 || !isPure(def) || def->getNumRegions() != 0)
    return false;
  SmallVector<Operation *> chain;
  std::function<bool(Operation *, int)> collect = [&](Operation *op,
                                                       int left) {
    for (Value operand : op->getOperands()) {
      Operation *d = operand.getDefiningOp();
      if (!d || d->isBeforeInBlock(point) || llvm::is_contained(chain, d))
        continue;
      if (left == 0 || !isPure(d) || d->getNumRegions() != 0 ||
          !collect(d, left - 1))
        return false;
    }
    chain.push_back(op);
    return true;
  };
  if (!collect(def, depth))
    return false;
  for (Operation *op : chain)
    op->moveBefore(point);
  return true;
}

/// Where the fused all-gather of `members` goes: before the first of them,
/// which their inputs must reach. An input computed later from the
/// function's arguments alone (a weight's transpose) moves up there;
/// members whose input cannot stay alone (removed from `members`).
Operation *placeGather(SmallVector<Operation *> &members) {
  Operation *first = members.front();
  for (Operation *m : members)
    if (m->isBeforeInBlock(first))
      first = m;
  llvm::erase_if(members, [&](Operation *m) {
    return !hoistBefore(m->getOperand(0), first);
  });
  return first;
}

/// Where each member's shard (`shardOf`) starts in one rank's block of the
/// flat buffer; returns the block's size.
int64_t layOutShards(ArrayRef<Operation *> members,
                     function_ref<Value(Operation *)> shardOf,
                     SmallVectorImpl<int64_t> &offsets) {
  int64_t total = 0;
  for (Operation *m : members) {
    offsets.push_back(total);
    total += typeOf(shardOf(m)).getNumElements();
  }
  return total;
}

/// One all-gather for `members` (all-gathers over dim 0).
void fuseGathers(ArrayRef<Operation *> members, StringRef group, OpBuilder b) {
  auto first = cast<AllGatherOp>(members.front());
  Location loc = bucketLoc(first, "parameter group");
  int64_t parts = typeOf(first.getResult()).getDimSize(0) /
                  typeOf(first.getInput()).getDimSize(0);
  SmallVector<int64_t> offsets;
  int64_t total = layOutShards(
      members, [](Operation *m) { return m->getOperand(0); }, offsets);
  SmallVector<Value> flat;
  for (Operation *m : members)
    flat.push_back(flatten(b, loc, m->getOperand(0)));
  Type element = typeOf(first.getInput()).getElementType();
  auto gathered = AllGatherOp::create(
      b, loc, RankedTensorType::get({parts * total}, element),
      concatAlong(b, loc, flat), first.getAxes(), 0, first.getPhaseAttr(),
      b.getStringAttr(group.empty() ? "the model's own tensors" : group));
  gathered->setAttr("tensors", memberNames(b, members));
  for (auto [m, offset] : llvm::zip(members, offsets)) {
    RankedTensorType shard = typeOf(m->getOperand(0));
    SmallVector<Value> chunks;
    for (int64_t r = 0; r < parts; ++r) {
      int64_t start = r * total + offset;
      chunks.push_back(
          tg::ReshapeOp::create(b, loc, shard,
                                sliceAlong(b, loc, gathered, 0, start,
                                           start + shard.getNumElements())));
    }
    m->getResult(0).replaceAllUsesWith(concatAlong(b, loc, chunks));
  }
  // Erased once nothing more is built before them.
  for (Operation *m : members)
    m->erase();
}

/// One reduce-scatter for `members` (reduce-scatters over dim 0).
void fuseScatters(ArrayRef<Operation *> members, StringRef group, OpBuilder b) {
  auto last = cast<ReduceScatterOp>(members.back());
  Location loc = bucketLoc(last, "gradient group");
  int64_t parts = typeOf(last.getInput()).getDimSize(0) /
                  typeOf(last.getResult()).getDimSize(0);
  SmallVector<Value> pieces;
  SmallVector<int64_t> offsets;
  int64_t total = layOutShards(
      members, [](Operation *m) { return m->getResult(0); }, offsets);
  for (int64_t r = 0; r < parts; ++r)
    for (Operation *m : members) {
      int64_t chunk = typeOf(m->getResult(0)).getDimSize(0);
      pieces.push_back(flatten(
          b, loc,
          sliceAlong(b, loc, m->getOperand(0), 0, r * chunk, (r + 1) * chunk)));
    }
  Type element = typeOf(last.getInput()).getElementType();
  auto scattered = ReduceScatterOp::create(
      b, loc, RankedTensorType::get({total}, element),
      concatAlong(b, loc, pieces), last.getAxes(), 0, last.getPhaseAttr(),
      b.getStringAttr(group.empty() ? "the model's own tensors" : group));
  scattered->setAttr("tensors", memberNames(b, members));
  for (auto [m, offset] : llvm::zip(members, offsets)) {
    RankedTensorType local = typeOf(m->getResult(0));
    m->getResult(0).replaceAllUsesWith(
        tg::ReshapeOp::create(b, loc, local,
                              sliceAlong(b, loc, scattered, 0, offset,
                                         offset + local.getNumElements())));
  }
  for (Operation *m : members)
    m->erase();
}

struct DistFsdpGroupPass : dist::impl::DistFsdpGroupBase<DistFsdpGroupPass> {
  using DistFsdpGroupBase::DistFsdpGroupBase;

  void runOnOperation() override {
    llvm::StringMap<std::string> groupOf =
        assignGroups(getOperation(), by, aloneMiB);
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      Block &body = fn.getBody().front();
      llvm::MapVector<std::string, SmallVector<Operation *>,
                      std::map<std::string, unsigned>>
          gathers, scatters;
      llvm::StringMap<std::string> groups;
      for (Operation &op : body) {
        StringAttr tensor = groupedTensor(&op);
        auto it = tensor ? groupOf.find(tensor.getValue()) : groupOf.end();
        if (it == groupOf.end())
          continue;
        std::string key = groupKey(&op, it->second);
        (isa<AllGatherOp>(op) ? gathers : scatters)[key].push_back(&op);
        groups[key] = it->second;
      }
      for (auto *kind : {&gathers, &scatters})
        for (auto &[key, members] : *kind) {
          if (kind == &gathers) {
            Operation *first = placeGather(members);
            if (members.size() > 1)
              fuseGathers(members, groups[key], OpBuilder(first));
            continue;
          }
          Operation *after = placeAfterInputs(members);
          if (members.size() > 1)
            fuseScatters(members, groups[key], builderAfter(after, body));
        }
    }
  }
};

} // namespace
