//===- MatmulToBlas.cpp - matmuls to BLAS calls ---------------------------===//
//
// --convert-tg-matmul-to-blas: each tg.matmul of f32, f64 or bf16 becomes a
// call of the runtime's spmd_matmul_<dtype> (Blas.h), which runs one GEMM per
// batch index with tg.matmul's broadcasting. Other element types keep the
// linalg lowering.
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

struct ConvertTgMatmulToBlasPass
    : spmdc::impl::ConvertTgMatmulToBlasBase<ConvertTgMatmulToBlasPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
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
      Value result =
          emitRuntimeCall(b, op.getLoc(), callee,
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
