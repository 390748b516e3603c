//===- MatmulToBlas.cpp - matmuls to BLAS calls ---------------------------===//
//
// --convert-tg-matmul-to-blas: each tg.matmul of f32, f64 or bf16 becomes a
// call of the runtime's spmd_matmul_<dtype> (Blas.h), which runs one GEMM per
// batch index with tg.matmul's broadcasting. Other element types keep the
// linalg lowering. First the products are rearranged so that the GEMMs read
// their operands in place and write no batch of products only to sum it.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCall.h"

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace spmdc {
#define GEN_PASS_DEF_CONVERTTGMATMULTOBLAS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;
using namespace spmdc;

namespace {

/// True for a transpose that swaps the last two dims and nothing else.
bool swapsLastTwo(tg::TransposeOp transpose) {
  ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = static_cast<int64_t>(perm.size());
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return false;
  for (int64_t d = 0; d < rank - 2; ++d)
    if (perm[d] != d)
      return false;
  return true;
}

/// `value` without the transposes of its last two dims on top, and whether
/// an odd number of them was peeled: a GEMM reads an operand transposed for
/// free, and a transpose of a transpose is no transpose.
std::pair<Value, bool> peelTransposes(Value value) {
  bool transposed = false;
  while (auto transpose = value.getDefiningOp<tg::TransposeOp>()) {
    if (!swapsLastTwo(transpose))
      break;
    value = transpose.getInput();
    transposed = !transposed;
  }
  return {value, transposed};
}

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

/// Erases `op` and the transposes feeding it that nothing else uses.
void eraseDeadTransposes(Operation *op) {
  SmallVector<Operation *> work{op};
  while (!work.empty()) {
    Operation *dead = work.pop_back_val();
    if (!isa<tg::TransposeOp>(dead) || !dead->use_empty())
      continue;
    Value input = dead->getOperand(0);
    dead->erase();
    if (Operation *def = input.getDefiningOp())
      work.push_back(def);
  }
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

    auto [lhsSource, lhsTransposed] = peelTransposes(lhs);
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
    if (Operation *def = lhs.getDefiningOp())
      eraseDeadTransposes(def);
  }
}

/// (A B)^T = B^T A^T: a transposed product is computed as the product of
/// transposed operands, which the GEMM then reads in place. A reshape that
/// only drops leading unit dims may sit between them (a weight's gradient
/// summed over a batch of one).
void transposeProducts(ModuleOp module) {
  SmallVector<tg::TransposeOp> transposes;
  module.walk([&](tg::TransposeOp op) {
    if (swapsLastTwo(op))
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

struct ConvertTgMatmulToBlasPass
    : spmdc::impl::ConvertTgMatmulToBlasBase<ConvertTgMatmulToBlasPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    contractSummedBatchDims(module);
    transposeProducts(module);
    SmallVector<tg::MatmulOp> matmuls;
    module.walk([&](tg::MatmulOp op) { matmuls.push_back(op); });
    OpBuilder b(module.getContext());
    for (tg::MatmulOp op : matmuls) {
      RankedTensorType type = op.getType();
      Type element = type.getElementType();
      StringRef name = element.isF32()    ? "spmd_matmul_f32"
                       : element.isF64()  ? "spmd_matmul_f64"
                       : element.isBF16() ? "spmd_matmul_bf16"
                                          : "";
      if (name.empty())
        continue;
      func::FuncOp callee = getOrDeclareRuntimeFunction(
          module, name, {b.getI32Type(), b.getI32Type()}, element,
          /*numBuffers=*/3);
      b.setInsertionPoint(op);
      auto [lhs, transposeLhs] = peelTransposes(op.getLhs());
      auto [rhs, transposeRhs] = peelTransposes(op.getRhs());
      auto flag = [&](bool set) -> Value {
        return arith::ConstantIntOp::create(b, op.getLoc(), set ? 1 : 0, 32);
      };
      Value result = emitRuntimeCall(b, op.getLoc(), callee,
                                     {flag(transposeLhs), flag(transposeRhs)},
                                     {lhs, rhs}, type);
      Operation *lhsDef = op.getLhs().getDefiningOp();
      Operation *rhsDef = op.getRhs().getDefiningOp();
      op.getResult().replaceAllUsesWith(result);
      op.erase();
      // Transposes only the GEMMs read are no longer needed.
      if (lhsDef)
        eraseDeadTransposes(lhsDef);
      if (rhsDef && rhsDef != lhsDef)
        eraseDeadTransposes(rhsDef);
    }
  }
};

} // namespace
