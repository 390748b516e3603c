//===- DistToRuntime.cpp - dist collectives to runtime calls --------------===//
//
// --convert-dist-to-runtime: each dist collective becomes a call of the
// runtime's spmd_collective_<dtype> (Collectives.h) on the input's buffer
// and a fresh output buffer. The call's constants are the whole contract:
// kind, two dims, and the mesh axes packed as spmd_collective documents.
// A started collective (dist.start_*) becomes spmd_collective_start_<dtype>,
// which returns a handle, its dist.wait spmd_collective_wait_<dtype>, and
// each tg op between them is followed by spmd_collective_progress.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCall.h"

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Runtime/CollectiveKind.h"

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/SetVector.h"

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
  // A start is its blocking form's collective.
  if (auto reduce = dyn_cast<dist::StartAllReduceOp>(op))
    return Collective{reduce.getReduction() == dist::Reduction::max
                          ? SPMD_COLLECTIVE_ALL_REDUCE_MAX
                          : SPMD_COLLECTIVE_ALL_REDUCE};
  if (auto gather = dyn_cast<dist::StartAllGatherOp>(op))
    return Collective{SPMD_COLLECTIVE_ALL_GATHER,
                      static_cast<int64_t>(gather.getDim())};
  if (auto scatter = dyn_cast<dist::StartReduceScatterOp>(op))
    return Collective{SPMD_COLLECTIVE_REDUCE_SCATTER,
                      static_cast<int64_t>(scatter.getDim())};
  if (auto a2a = dyn_cast<dist::StartAllToAllOp>(op))
    return Collective{SPMD_COLLECTIVE_ALL_TO_ALL,
                      static_cast<int64_t>(a2a.getSplitDim()),
                      static_cast<int64_t>(a2a.getConcatDim())};
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

/// A started collective's pieces that its wait needs.
struct Started {
  Value handle, input, out;
  func::FuncOp wait;
};

/// The tensor a collective yields (a start's once it is waited for).
RankedTensorType resultTypeOf(Operation *op) {
  Type type = op->getResult(0).getType();
  if (auto pending = dyn_cast<dist::PendingType>(type))
    return pending.getResult();
  return cast<RankedTensorType>(type);
}

/// `buffer` as the unranked memref the runtime's functions take.
Value unranked(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  return memref::CastOp::create(
      b, loc, UnrankedMemRefType::get(type.getElementType(), 0), buffer);
}

/// `tensor`'s buffer, read only.
Value readBuffer(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()), tensor,
      /*read_only=*/true);
}

/// `name(scalars..., buffers...) -> results` in `module`, declared on first
/// use.
func::FuncOp declare(ModuleOp module, StringRef name, TypeRange inputs,
                     TypeRange results) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto function = func::FuncOp::create(b, module.getLoc(), name,
                                       b.getFunctionType(inputs, results));
  function.setPrivate();
  return function;
}

/// Calls spmd_collective_progress after each tg op of a block that runs
/// while one of the block's started collectives is under way, so MPI
/// advances them while the step computes (between its loop nests).
void insertProgressCalls(ModuleOp module, ArrayRef<Operation *> starts) {
  llvm::SetVector<Operation *> marked;
  for (Operation *start : starts) {
    Operation *wait = *start->getResult(0).getUsers().begin();
    for (Operation *op = start->getNextNode(); op && op != wait;
         op = op->getNextNode())
      if (isa<tg::TensorGraphDialect>(op->getDialect()))
        marked.insert(op);
  }
  if (marked.empty())
    return;
  func::FuncOp progress =
      declare(module, "spmd_collective_progress", {}, {});
  for (Operation *op : marked) {
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    func::CallOp::create(b, op->getLoc(), progress, ValueRange{});
  }
}

struct ConvertDistToRuntimePass
    : spmdc::impl::ConvertDistToRuntimeBase<ConvertDistToRuntimePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> collectives, starts;
    module.walk([&](Operation *op) {
      if (describe(op))
        collectives.push_back(op);
      if (op->getNumResults() == 1 &&
          isa<dist::PendingType>(op->getResult(0).getType()))
        starts.push_back(op);
    });
    if (collectives.empty())
      return;
    FailureOr<dist::Mesh> mesh = dist::Mesh::of(module);
    if (failed(mesh))
      return signalPassFailure();
    insertProgressCalls(module, starts);

    OpBuilder b(module.getContext());
    for (Operation *op : collectives) {
      Collective collective = *describe(op);
      Value input = op->getOperand(0);
      auto inputType = cast<RankedTensorType>(input.getType());
      auto resultType = resultTypeOf(op);
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
      auto i64 = [&](int64_t v) {
        return arith::ConstantIntOp::create(b, loc, v, 64).getResult();
      };
      if (isa<dist::PendingType>(op->getResult(0).getType())) {
        // start: the call issues it on the input's buffer and a fresh
        // output buffer and returns a handle; wait: the call blocks on the
        // handle, with both buffers again (so bufferization keeps the
        // input unwritten and both alive until then), and the output
        // becomes the result.
        Type element = inputType.getElementType();
        Type buffer = UnrankedMemRefType::get(element, 0);
        Type i64Type = b.getI64Type();
        func::FuncOp start = declare(
            module, "spmd_collective_start_" + *suffix,
            {b.getI32Type(), i64Type, i64Type, i64Type, buffer, buffer},
            {i64Type});
        func::FuncOp waitFn =
            declare(module, "spmd_collective_wait_" + *suffix,
                    {i64Type, buffer, buffer}, {});
        b.setInsertionPoint(op);
        Value kind = arith::ConstantIntOp::create(b, loc, collective.kind, 32);
        Value out = memref::AllocOp::create(
            b, loc, MemRefType::get(resultType.getShape(), element));
        Value handle =
            func::CallOp::create(
                b, loc, start,
                ValueRange{kind, i64(collective.dim), i64(collective.dim2),
                           i64(axesCode), unranked(b, loc, readBuffer(b, loc, input)),
                           unranked(b, loc, out)})
                .getResult(0);
        auto wait = cast<dist::WaitOp>(*op->getResult(0).getUsers().begin());
        b.setInsertionPoint(wait);
        Location waitLoc = wait.getLoc();
        func::CallOp::create(
            b, waitLoc, waitFn,
            ValueRange{handle, unranked(b, waitLoc, readBuffer(b, waitLoc, input)),
                       unranked(b, waitLoc, out)});
        Value result = bufferization::ToTensorOp::create(
            b, waitLoc, resultType, out, /*restrict=*/true, /*writable=*/true);
        wait.getResult().replaceAllUsesWith(result);
        wait.erase();
        op->erase();
        continue;
      }
      func::FuncOp callee = getOrDeclareRuntimeFunction(
          module, "spmd_collective_" + *suffix,
          {b.getI32Type(), b.getI64Type(), b.getI64Type(), b.getI64Type()},
          inputType.getElementType(), /*numBuffers=*/2);
      b.setInsertionPoint(op);
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
