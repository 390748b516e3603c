//===- AllReduceInPlace.cpp - an all-reduce over its dead input -----------===//
//
// --all-reduce-in-place: on buffers, after one-shot bufferization. A
// collective becomes a runtime call on its input's buffer and a fresh
// output buffer (--convert-dist-to-runtime), and the runtime's all-reduce
// copies the input into the output before reducing there. Where the input
// is read by nothing after the call, the output is the input's buffer: the
// copy goes, and so does a buffer of the input's size (DDP's gradient
// buckets: the whole model a step on every rank, in fresh memory on the
// first). A started all-reduce (--overlap) goes in place the same way
// when the input is touched by nothing but its wait after the start, and
// the output by nothing but its start before the wait.
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

/// The runtime's collective, `spmd_collective_<dtype>(kind, dim, dim2,
/// axes, in, out)`, or its start `spmd_collective_start_<dtype>` with the
/// same operands, whose wait takes its handle and both buffers again: the
/// positions of its kind and buffers.
constexpr unsigned kKindOperand = 0, kInOperand = 4, kOutOperand = 5;

/// An all-reduce: the call that starts it and the one that ends it (the
/// same call where it blocks).
struct AllReduce {
  func::CallOp start, end;
};

std::optional<AllReduce> allReduceOf(func::CallOp call) {
  StringRef callee = call.getCallee();
  if (!callee.consume_front("spmd_collective_") || call.getNumOperands() != 6)
    return std::nullopt;
  bool started = callee.consume_front("start_");
  std::optional<int64_t> kind =
      getConstantIntValue(call.getOperand(kKindOperand));
  if (callee.contains('_') || !kind ||
      (*kind != SPMD_COLLECTIVE_ALL_REDUCE &&
       *kind != SPMD_COLLECTIVE_ALL_REDUCE_MAX))
    return std::nullopt;
  if (!started)
    return AllReduce{call, call};
  if (call.getNumResults() != 1 || !call.getResult(0).hasOneUse())
    return std::nullopt;
  auto wait = dyn_cast<func::CallOp>(*call.getResult(0).getUsers().begin());
  if (!wait || !wait.getCallee().starts_with("spmd_collective_wait_") ||
      wait->getBlock() != call->getBlock())
    return std::nullopt;
  return AllReduce{call, wait};
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

std::optional<InPlace> inPlaceOf(AllReduce reduce) {
  func::CallOp call = reduce.start;
  memref::AllocOp input = wholeAllocation(call.getOperand(kInOperand));
  memref::AllocOp output = wholeAllocation(call.getOperand(kOutOperand));
  Block *block = call->getBlock();
  if (!input || !output || input == output ||
      input.getType() != output.getType() || input->getBlock() != block ||
      output->getBlock() != block || !input->isBeforeInBlock(output))
    return std::nullopt;
  // The input's last use is the start (its wait aside), the output's first
  // the end (its start aside): in between the reduction has both to
  // itself.
  DenseSet<Operation *> end, start;
  if (reduce.end != reduce.start) {
    end.insert(reduce.end);
    start.insert(reduce.start);
  }
  spmdc::BufferSpan in =
      spmdc::spanOf(input, block, end, /*viewsAreUses=*/false);
  spmdc::BufferSpan out =
      spmdc::spanOf(output, block, start, /*viewsAreUses=*/false);
  if (in.escapes || out.escapes || in.last != reduce.start.getOperation() ||
      out.first != reduce.end.getOperation())
    return std::nullopt;
  return InPlace{input, output};
}

struct AllReduceInPlacePass
    : spmdc::impl::AllReduceInPlaceBase<AllReduceInPlacePass> {
  void runOnOperation() override {
    SmallVector<AllReduce> allReduces;
    getOperation().walk([&](func::CallOp call) {
      if (std::optional<AllReduce> reduce = allReduceOf(call))
        allReduces.push_back(*reduce);
    });
    // One at a time, on the IR as the last left it: an all-reduce's input
    // may be an earlier one's output.
    for (AllReduce reduce : allReduces)
      if (std::optional<InPlace> inPlace = inPlaceOf(reduce)) {
        inPlace->output.getResult().replaceAllUsesWith(
            inPlace->input.getResult());
        inPlace->output.erase();
      }
  }
};

} // namespace
