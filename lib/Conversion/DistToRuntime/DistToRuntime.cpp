//===- DistToRuntime.cpp - dist collectives to runtime calls --------------===//
//
// --convert-dist-to-runtime: each dist collective becomes a call of the
// runtime's spmd_collective_<dtype> (Collectives.h) on the input's buffer
// and a fresh output buffer. The call's constants are the whole contract:
// kind, two dims, and the mesh axes packed as spmd_collective documents.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Dialect/Dist/IR/Dist.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

namespace spmdc {
#define GEN_PASS_DEF_CONVERTDISTTORUNTIME
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;
using namespace spmdc;

namespace {

/// The runtime's codes for the collectives (spmd_collective in
/// Collectives.h).
enum CollectiveKind : int32_t {
  kAllReduce = 0,
  kAllGather = 1,
  kReduceScatter = 2,
  kAllToAll = 3,
  kLocalSlice = 4,
};

struct Collective {
  CollectiveKind kind;
  int64_t dim = 0, dim2 = 0;
};

std::optional<Collective> describe(Operation *op) {
  if (isa<dist::AllReduceOp>(op))
    return Collective{kAllReduce};
  if (auto gather = dyn_cast<dist::AllGatherOp>(op))
    return Collective{kAllGather, static_cast<int64_t>(gather.getDim())};
  if (auto scatter = dyn_cast<dist::ReduceScatterOp>(op))
    return Collective{kReduceScatter, static_cast<int64_t>(scatter.getDim())};
  if (auto a2a = dyn_cast<dist::AllToAllOp>(op))
    return Collective{kAllToAll, static_cast<int64_t>(a2a.getSplitDim()),
                      static_cast<int64_t>(a2a.getConcatDim())};
  if (auto slice = dyn_cast<dist::LocalSliceOp>(op))
    return Collective{kLocalSlice, static_cast<int64_t>(slice.getDim())};
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
    SymbolTable symbols(module);
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
      Type element = inputType.getElementType();
      auto unranked = UnrankedMemRefType::get(element, 0);
      std::string name = "spmd_collective_" + *suffix;
      auto callee = symbols.lookup<func::FuncOp>(name);
      if (!callee) {
        b.setInsertionPointToEnd(module.getBody());
        callee = func::FuncOp::create(
            b, module.getLoc(), name,
            b.getFunctionType({b.getI32Type(), b.getI64Type(), b.getI64Type(),
                               b.getI64Type(), unranked, unranked},
                              {}));
        callee.setPrivate();
        symbols.insert(callee);
      }

      b.setInsertionPoint(op);
      auto i32 = [&](int64_t v) {
        return arith::ConstantIntOp::create(b, loc, v, 32).getResult();
      };
      auto i64 = [&](int64_t v) {
        return arith::ConstantIntOp::create(b, loc, v, 64).getResult();
      };
      Value kind = i32(collective.kind), dim = i64(collective.dim),
            dim2 = i64(collective.dim2), axes = i64(axesCode);
      auto inType = MemRefType::get(inputType.getShape(), element);
      auto outType = MemRefType::get(resultType.getShape(), element);
      Value in = bufferization::ToBufferOp::create(b, loc, inType, input,
                                                   /*read_only=*/true);
      Value out = memref::AllocOp::create(b, loc, outType);
      func::CallOp::create(
          b, loc, callee,
          ValueRange{kind, dim, dim2, axes,
                     memref::CastOp::create(b, loc, unranked, in),
                     memref::CastOp::create(b, loc, unranked, out)});
      Value result = bufferization::ToTensorOp::create(
          b, loc, resultType, out, /*restrict=*/true, /*writable=*/true);
      op->getResult(0).replaceAllUsesWith(result);
      op->erase();
    }
  }
};

} // namespace
