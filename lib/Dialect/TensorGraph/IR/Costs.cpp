//===- Costs.cpp - the ops' flops and bytes (CostOpInterface) -------------===//
//
// An op's cost on the shapes it has. The interface's defaults cover the
// elementwise ops (one operation per result element) and the ops that move
// or make values (none); the reductions (one operation per input element,
// in TG_ReductionOp) and the ops below count their own.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Support/Bytes.h"

using namespace mlir;

namespace spmdc::tg {

static int64_t elementsOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getNumElements();
}

static int64_t bytesOf(Value v) { return storageBytes(v.getType()); }

int64_t defaultFlops(Operation *op) {
  if (!op->hasTrait<OpTrait::Elementwise>() || op->getNumResults() == 0)
    return 0;
  return elementsOf(op->getResult(0));
}

int64_t operandAndResultBytes(Operation *op) {
  int64_t bytes = 0;
  for (Value v : op->getOperands())
    bytes += bytesOf(v);
  for (Value v : op->getResults())
    bytes += bytesOf(v);
  return bytes;
}

/// A multiply-add per (result element, contracted element).
static int64_t contractionFlops(Value result, int64_t contracted) {
  return 2 * elementsOf(result) * contracted;
}

int64_t MatmulOp::getFlops() {
  return contractionFlops(getResult(), getLhs().getType().getShape().back());
}

int64_t LinearOp::getFlops() {
  int64_t flops = contractionFlops(getResult(),
                                   getWeight().getType().getShape().back());
  return getBias() ? flops + elementsOf(getResult()) : flops;
}

int64_t ScaledDotProductAttentionOp::getFlops() {
  // q k^T, then the scores times v; the softmax is a few operations per
  // score.
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  int64_t keys = getKey().getType().getShape()[2];
  int64_t scores = elementsOf(getQuery()) / q.back() * keys;
  constexpr int64_t kSoftmaxFlopsPerScore = 5;
  return 2 * scores * q.back() + contractionFlops(getResult(), keys) +
         kSoftmaxFlopsPerScore * scores;
}

int64_t elementsOfInput(Operation *op) {
  return elementsOf(op->getOperand(0));
}

int64_t ScatterAddOp::getFlops() { return elementsOf(getSource()); }

int64_t EmbeddingBackwardOp::getFlops() { return elementsOf(getGrad()); }

} // namespace spmdc::tg
