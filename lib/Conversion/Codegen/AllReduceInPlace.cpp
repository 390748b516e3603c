//===- AllReduceInPlace.cpp - an all-reduce over its dead input -----------===//
//
// --all-reduce-in-place: on buffers, after one-shot bufferization. A
// collective becomes a runtime call on its input's buffer and a fresh
// output buffer (--convert-dist-to-runtime), and the runtime's all-reduce
// copies the input into the output before reducing there. Where the input
// is read by nothing after the call, the output is the input's buffer: the
// copy goes, and so does a buffer of the input's size (DDP's gradient
// buckets: the whole model a step on every rank, in fresh memory on the
// first).
//
//===----------------------------------------------------------------------===//

#include "BufferOrigins.h"

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Runtime/CollectiveKind.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace spmdc {
#define GEN_PASS_DEF_ALLREDUCEINPLACE
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

/// The runtime's blocking collective, `spmd_collective_<dtype>(kind, dim,
/// dim2, axes, in, out)`: its kind's operand and its buffers' positions.
constexpr unsigned kKindOperand = 0, kInOperand = 4, kOutOperand = 5;

bool isAllReduce(func::CallOp call) {
  StringRef callee = call.getCallee();
  if (!callee.consume_front("spmd_collective_") || callee.contains('_') ||
      call.getNumOperands() != 6)
    return false;
  std::optional<int64_t> kind =
      getConstantIntValue(call.getOperand(kKindOperand));
  return kind && (*kind == SPMD_COLLECTIVE_ALL_REDUCE ||
                  *kind == SPMD_COLLECTIVE_ALL_REDUCE_MAX);
}

/// The allocation `v` is all of: a static identity-layout `memref.alloc`,
/// through casts and views of all its bytes from the first.
memref::AllocOp wholeAllocation(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto cast = dyn_cast<memref::CastOp>(def)) {
      v = cast.getSource();
      continue;
    }
    auto view = dyn_cast<memref::ViewOp>(def);
    if (!view)
      break;
    std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
    MemRefType type = view.getType();
    if (!shift || *shift != 0 || !type.hasStaticShape() ||
        type.getNumElements() * type.getElementTypeBitWidth() !=
            view.getSource().getType().getNumElements() * 8)
      return {};
    v = view.getSource();
  }
  auto alloc = v.getDefiningOp<memref::AllocOp>();
  if (!alloc || !alloc.getType().hasStaticShape() ||
      !alloc.getType().getLayout().isIdentity() ||
      alloc.getType().getMemorySpace())
    return {};
  return alloc;
}

/// The output allocation of `call` that its input's can replace, if any:
/// the input's memory is touched by nothing after the call, the output's
/// by nothing before it, and the input's allocation comes first.
struct InPlace {
  memref::AllocOp input, output;
};

std::optional<InPlace> inPlaceOf(func::CallOp call) {
  memref::AllocOp input = wholeAllocation(call.getOperand(kInOperand));
  memref::AllocOp output = wholeAllocation(call.getOperand(kOutOperand));
  Block *block = call->getBlock();
  if (!input || !output || input == output ||
      input.getType() != output.getType() || input->getBlock() != block ||
      output->getBlock() != block || !input->isBeforeInBlock(output))
    return std::nullopt;
  spmdc::BufferSpan in = spmdc::spanOf(input, block, {}, /*viewsAreUses=*/false);
  spmdc::BufferSpan out =
      spmdc::spanOf(output, block, {}, /*viewsAreUses=*/false);
  if (in.escapes || out.escapes || in.last != call.getOperation() ||
      out.first != call.getOperation())
    return std::nullopt;
  return InPlace{input, output};
}

struct AllReduceInPlacePass
    : spmdc::impl::AllReduceInPlaceBase<AllReduceInPlacePass> {
  void runOnOperation() override {
    SmallVector<func::CallOp> allReduces;
    getOperation().walk([&](func::CallOp call) {
      if (isAllReduce(call))
        allReduces.push_back(call);
    });
    // One at a time, on the IR as the last left it: an all-reduce's input
    // may be an earlier one's output.
    for (func::CallOp call : allReduces)
      if (std::optional<InPlace> inPlace = inPlaceOf(call)) {
        inPlace->output.getResult().replaceAllUsesWith(
            inPlace->input.getResult());
        inPlace->output.erase();
      }
  }
};

} // namespace
