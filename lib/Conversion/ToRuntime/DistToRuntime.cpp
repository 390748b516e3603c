//===- DistToRuntime.cpp - dist collectives to runtime calls --------------===//
//
// --convert-dist-to-runtime: each dist collective becomes a call of the
// runtime's spmd_collective_<dtype> (Collectives.h) on the input's buffer
// and a fresh output buffer. The call's constants are the whole contract:
// kind, two dims, and the mesh axes packed as spmd_collective documents.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCall.h"

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Runtime/CollectiveKind.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace spmdc {
#define GEN_PASS_DEF_CONVERTDISTTORUNTIME
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;
using namespace spmdc;

namespace {

/// A collective as the runtime call takes it: its kind and its dims.
struct Collective {
  spmd_collective_kind kind;
  int64_t dim = 0, dim2 = 0;
};

std::optional<Collective> describe(Operation *op) {
  if (auto reduce = dyn_cast<dist::AllReduceOp>(op))
    return Collective{reduce.getReduction() == dist::Reduction::max
                          ? SPMD_COLLECTIVE_ALL_REDUCE_MAX
                          : SPMD_COLLECTIVE_ALL_REDUCE};
  if (auto gather = dyn_cast<dist::AllGatherOp>(op))
    return Collective{SPMD_COLLECTIVE_ALL_GATHER,
                      static_cast<int64_t>(gather.getDim())};
  if (auto scatter = dyn_cast<dist::ReduceScatterOp>(op))
    return Collective{SPMD_COLLECTIVE_REDUCE_SCATTER,
                      static_cast<int64_t>(scatter.getDim())};
  if (auto a2a = dyn_cast<dist::AllToAllOp>(op))
    return Collective{SPMD_COLLECTIVE_ALL_TO_ALL,
                      static_cast<int64_t>(a2a.getSplitDim()),
                      static_cast<int64_t>(a2a.getConcatDim())};
  if (auto slice = dyn_cast<dist::LocalSliceOp>(op))
    return Collective{SPMD_COLLECTIVE_LOCAL_SLICE,
                      static_cast<int64_t>(slice.getDim())};
  return std::nullopt;
}

/// "f32" for the function name; the runtime has f32, f64, i64 and i32.
std::optional<std::string> dtypeSuffix(Type element) {
  if (element.isF32())
    return std::string("f32");
  if (element.isF64())
    return std::string("f64");
  if (element.isInteger(64))
    return std::string("i64");
  if (element.isInteger(32))
    return std::string("i32");
  return std::nullopt;
}

struct ConvertDistToRuntimePass
    : spmdc::impl::ConvertDistToRuntimeBase<ConvertDistToRuntimePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> collectives;
    module.walk([&](Operation *op) {
      if (describe(op))
        collectives.push_back(op);
    });
    if (collectives.empty())
      return;
    FailureOr<dist::Mesh> mesh = dist::Mesh::of(module);
    if (failed(mesh))
      return signalPassFailure();

    OpBuilder b(module.getContext());
    for (Operation *op : collectives) {
      Collective collective = *describe(op);
      Value input = op->getOperand(0);
      auto inputType = cast<RankedTensorType>(input.getType());
      auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
      std::optional<std::string> suffix =
          dtypeSuffix(inputType.getElementType());
      if (!suffix) {
        op->emitError() << "the runtime's collectives take f32, f64, i64 or "
                           "i32, not "
                        << inputType.getElementType();
        return signalPassFailure();
      }
      // Mesh axes, packed four bits each, first listed lowest, plus one.
      int64_t axesCode = 0;
      int shift = 0;
      for (Attribute axis : op->getAttrOfType<ArrayAttr>("axes")) {
        int index = mesh->axisIndex(cast<StringAttr>(axis).getValue());
        if (index < 0) {
          op->emitError() << "mesh axis " << axis << " is not in the mesh";
          return signalPassFailure();
        }
        axesCode |= int64_t(index + 1) << shift;
        shift += 4;
      }

      Location loc = op->getLoc();
      func::FuncOp callee = getOrDeclareRuntimeFunction(
          module, "spmd_collective_" + *suffix,
          {b.getI32Type(), b.getI64Type(), b.getI64Type(), b.getI64Type()},
          inputType.getElementType(), /*numBuffers=*/2);
      b.setInsertionPoint(op);
      auto i64 = [&](int64_t v) {
        return arith::ConstantIntOp::create(b, loc, v, 64).getResult();
      };
      Value kind = arith::ConstantIntOp::create(b, loc, collective.kind, 32);
      Value result = emitRuntimeCall(
          b, loc, callee,
          {kind, i64(collective.dim), i64(collective.dim2), i64(axesCode)},
          {input}, resultType);
      op->getResult(0).replaceAllUsesWith(result);
      op->erase();
    }
  }
};

} // namespace
