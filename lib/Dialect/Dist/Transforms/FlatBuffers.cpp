//===- FlatBuffers.cpp - fusing collectives over flat buffers -------------===//

#include "FlatBuffers.h"

#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace spmdc;
using tg::typeOf;

llvm::StringMap<bool> dist::mainParameters(ModuleOp module) {
  llvm::StringMap<bool> params;
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return params;
  for (unsigned i = 0, e = main.getNumArguments(); i < e; ++i) {
    auto role = main.getArgAttrOfType<tg::RoleAttr>(i, tg::kRoleAttr);
    auto name = main.getArgAttrOfType<StringAttr>(i, tg::kNameAttr);
    if (!role || !name || role.getValue() != tg::Role::param)
      continue;
    auto sharding = main.getArgAttrOfType<ShardingAttr>(i, kShardingAttr);
    params[name.getValue()] =
        sharding && llvm::any_of(sharding.getDims(), [](Attribute axes) {
          return !cast<ArrayAttr>(axes).empty();
        });
  }
  return params;
}

int64_t dist::fullBytes(Operation *op) {
  RankedTensorType full = isa<AllGatherOp>(op) ? typeOf(op->getResult(0))
                                               : typeOf(op->getOperand(0));
  return full.getNumElements() *
         llvm::divideCeil(full.getElementTypeBitWidth(), 8);
}

bool dist::staysAlone(Operation *op, double aloneMiB) {
  return isa<ReduceScatterOp, AllGatherOp>(op) && aloneMiB > 0 &&
         fullBytes(op) >= aloneMiB * 1024 * 1024;
}

Location dist::bucketLoc(Operation *first, StringRef what) {
  return NameLoc::get(StringAttr::get(first->getContext(), what),
                      first->getLoc());
}

Value dist::flatten(OpBuilder &b, Location loc, Value v) {
  RankedTensorType type = typeOf(v);
  return tg::reshapeTo(
      b, loc, v,
      RankedTensorType::get({type.getNumElements()}, type.getElementType()));
}

Value dist::sliceAlong(OpBuilder &b, Location loc, Value v, int64_t dim,
                       int64_t start, int64_t end) {
  return tg::SliceOp::create(b, loc, v, dim, start, end, 1);
}

Value dist::concatAlong(OpBuilder &b, Location loc, ArrayRef<Value> parts,
                        int64_t dim) {
  if (parts.size() == 1)
    return parts.front();
  return tg::ConcatOp::create(b, loc, parts, dim);
}

Operation *dist::placeAfterInputs(SmallVectorImpl<Operation *> &members) {
  while (true) {
    Operation *after = nullptr;
    for (Operation *m : members)
      if (Operation *def = m->getOperand(0).getDefiningOp())
        if (!after || after->isBeforeInBlock(def))
          after = def;
    size_t before = members.size();
    llvm::erase_if(members, [&](Operation *m) {
      return after && llvm::any_of(m->getUsers(), [&](Operation *user) {
               return !after->isBeforeInBlock(user);
             });
    });
    if (members.size() == before)
      return after;
  }
}

OpBuilder dist::builderAfter(Operation *after, Block &block) {
  OpBuilder b(block.getParentOp()->getContext());
  if (after)
    b.setInsertionPointAfter(after);
  else
    b.setInsertionPointToStart(&block);
  return b;
}

ArrayAttr dist::memberNames(OpBuilder &b, ArrayRef<Operation *> members) {
  SmallVector<Attribute> names;
  for (Operation *m : members)
    names.push_back(m->getAttr("origin"));
  return b.getArrayAttr(names);
}
