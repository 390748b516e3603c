//===- RearrangeProducts.cpp - products laid out for the GEMM ------------===//
//
// --tg-rearrange-products: matmuls rearranged so that a GEMM reads its
// operands in place and writes no batch of products only to sum it. Algebra
// on the per-rank program, before anything converts the operands (bf16) or
// turns the matmuls into runtime calls (--convert-tg-matmul-to-blas, which
// reads a transpose of the last two dims as a flag).
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace spmdc::tg {
#define GEN_PASS_DEF_TGREARRANGEPRODUCTS
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h.inc"
} // namespace spmdc::tg

using namespace mlir;
using namespace spmdc;

namespace {

/// True for a reshape that only drops leading dims of size 1.
bool dropsLeadingUnitDims(tg::ReshapeOp reshape) {
  ArrayRef<int64_t> from =
      cast<RankedTensorType>(reshape.getInput().getType()).getShape();
  ArrayRef<int64_t> to = reshape.getType().getShape();
  if (from.size() < to.size() || from.take_back(to.size()) != to)
    return false;
  return llvm::all_of(from.drop_back(to.size()),
                      [](int64_t size) { return size == 1; });
}

/// The number of elements of `value`'s tensor.
int64_t elementsOf(Value value) { return tg::typeOf(value).getNumElements(); }

/// `value` with its dims in `order`, or `value` itself for the identity.
Value permuted(OpBuilder &b, Location loc, Value value,
               ArrayRef<int64_t> order) {
  if (llvm::equal(order, llvm::seq<int64_t>(0, order.size())))
    return value;
  return tg::TransposeOp::create(b, loc, value, order);
}

/// A sum over batch dims of a batched product, sum_b A_b B_b, is one product
/// that contracts over (b, k) together: [m, (b k)] x [(b k), n]. This is the
/// gradient of a weight shared by every batch index (each linear layer's),
/// which the matmul VJP writes as a batch of products summed afterwards; the
/// one GEMM skips writing and re-reading the batch of products. Grouping
/// (b, k) is free where the operands are laid out [b..., k, ...] already (B
/// as it comes, A as the transpose of an activation [b..., k, m], which the
/// GEMM reads in place); elsewhere it costs a copy, made only when smaller
/// than the batch of products. Done here, on each rank's local shapes, since
/// merging a sharded batch dim into a contraction before the shard stage
/// would change what the collectives move.
void contractSummedBatchDims(ModuleOp module) {
  SmallVector<tg::SumOp> sums;
  module.walk([&](tg::SumOp op) { sums.push_back(op); });
  OpBuilder b(module.getContext());
  for (tg::SumOp sum : sums) {
    auto matmul = sum.getInput().getDefiningOp<tg::MatmulOp>();
    if (!matmul || !matmul->hasOneUse())
      continue;
    Value lhs = matmul.getLhs(), rhs = matmul.getRhs();
    RankedTensorType lhsType = tg::typeOf(lhs), rhsType = tg::typeOf(rhs);
    int64_t rank = matmul.getType().getRank();
    if (lhsType.getRank() != rank || rhsType.getRank() != rank)
      continue;
    SmallVector<int64_t> summed = tg::normalizedDims(sum.getDims(), rank);
    llvm::sort(summed);
    // Only batch dims both operands carry contract; a broadcast one would
    // sum one operand alone.
    if (summed.empty() || llvm::any_of(summed, [&](int64_t d) {
          return d >= rank - 2 ||
                 lhsType.getDimSize(d) != rhsType.getDimSize(d);
        }))
      continue;
    // Dims in the order [kept batch..., summed..., k, m|n].
    SmallVector<int64_t> order;
    for (int64_t d = 0; d < rank - 2; ++d)
      if (!llvm::is_contained(summed, d))
        order.push_back(d);
    int64_t kept = static_cast<int64_t>(order.size());
    llvm::append_range(order, summed);
    order.append({rank - 2, rank - 1});
    bool reordered = !llvm::equal(order, llvm::seq<int64_t>(0, rank));

    auto [lhsSource, lhsTransposed] = tg::peelTransposes(lhs);
    int64_t copied = (lhsTransposed && !reordered ? 0 : elementsOf(lhs)) +
                     (reordered ? elementsOf(rhs) : 0);
    if (copied > elementsOf(matmul))
      continue;

    b.setInsertionPoint(sum);
    Location loc = sum.getLoc();
    // [kept..., summed..., k, x] -> [kept..., (summed k), x], from `value`
    // with its dims in `perm`.
    auto grouped = [&](Value value, ArrayRef<int64_t> perm) {
      Value inOrder = permuted(b, loc, value, perm);
      RankedTensorType type = tg::typeOf(inOrder);
      SmallVector<int64_t> shape(type.getShape().take_front(kept));
      int64_t contracted = 1;
      for (int64_t size : type.getShape().slice(kept, summed.size() + 1))
        contracted *= size;
      shape.append({contracted, type.getDimSize(rank - 1)});
      return tg::reshapeTo(b, loc, inOrder,
                           RankedTensorType::get(shape, type.getElementType()));
    };
    // A as [..., k, m]: the activation under its transpose, or A permuted
    // with its last two dims swapped.
    SmallVector<int64_t> lhsOrder(order);
    std::swap(lhsOrder[rank - 2], lhsOrder[rank - 1]);
    Value lhsByK =
        lhsTransposed ? grouped(lhsSource, order) : grouped(lhs, lhsOrder);
    Value product = tg::MatmulOp::create(
        b, loc, tg::transposeLastTwo(b, loc, lhsByK), grouped(rhs, order));
    // A reshape of the sum reshapes the product instead.
    for (OpOperand &use : llvm::make_early_inc_range(sum->getUses())) {
      auto reshape = dyn_cast<tg::ReshapeOp>(use.getOwner());
      if (!reshape)
        continue;
      if (reshape.getType() == product.getType()) {
        reshape.getResult().replaceAllUsesWith(product);
        reshape.erase();
      } else {
        use.set(product);
      }
    }
    if (!sum->use_empty())
      sum.getResult().replaceAllUsesWith(
          tg::reshapeTo(b, loc, product, sum.getType()));
    sum.erase();
    matmul.erase();
    tg::eraseDeadTransposes({lhs});
  }
}

/// (A B)^T = B^T A^T: a transposed product is computed as the product of
/// transposed operands, which the GEMM then reads in place. A reshape that
/// only drops leading unit dims may sit between them (a weight's gradient
/// summed over a batch of one).
void transposeProducts(ModuleOp module) {
  SmallVector<tg::TransposeOp> transposes;
  module.walk([&](tg::TransposeOp op) {
    if (tg::swapsLastTwo(op))
      transposes.push_back(op);
  });
  OpBuilder b(module.getContext());
  for (tg::TransposeOp op : transposes) {
    Value source = op.getInput();
    auto drop = source.getDefiningOp<tg::ReshapeOp>();
    if (drop && dropsLeadingUnitDims(drop) && drop->hasOneUse())
      source = drop.getInput();
    else
      drop = nullptr;
    auto matmul = source.getDefiningOp<tg::MatmulOp>();
    if (!matmul || !matmul->hasOneUse())
      continue;
    b.setInsertionPoint(op);
    Location loc = op.getLoc();
    Value product = tg::MatmulOp::create(
        b, loc, tg::transposeLastTwo(b, loc, matmul.getRhs()),
        tg::transposeLastTwo(b, loc, matmul.getLhs()));
    if (drop)
      product = tg::reshapeTo(b, op.getLoc(), product, op.getType());
    op.getResult().replaceAllUsesWith(product);
    op.erase();
    if (drop)
      drop.erase();
    matmul.erase();
  }
}

struct TgRearrangeProductsPass
    : spmdc::tg::impl::TgRearrangeProductsBase<TgRearrangeProductsPass> {
  void runOnOperation() override {
    contractSummedBatchDims(getOperation());
    transposeProducts(getOperation());
  }
};

} // namespace
