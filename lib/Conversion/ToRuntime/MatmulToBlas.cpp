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

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace spmdc {
#define GEN_PASS_DEF_CONVERTTGMATMULTOBLAS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;
using namespace spmdc;

namespace {

/// `value` without a transpose of its last two dims (and nothing else), and
/// whether there was one: a GEMM reads the operand transposed for free.
std::pair<Value, bool> withoutLastTwoTransposed(Value value) {
  auto transpose = value.getDefiningOp<tg::TransposeOp>();
  if (!transpose)
    return {value, false};
  ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = static_cast<int64_t>(perm.size());
  for (int64_t d = 0; d < rank - 2; ++d)
    if (perm[d] != d)
      return {value, false};
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return {value, false};
  return {transpose.getInput(), true};
}

struct ConvertTgMatmulToBlasPass
    : spmdc::impl::ConvertTgMatmulToBlasBase<ConvertTgMatmulToBlasPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
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
      auto [lhs, transposeLhs] = withoutLastTwoTransposed(op.getLhs());
      auto [rhs, transposeRhs] = withoutLastTwoTransposed(op.getRhs());
      auto flag = [&](bool set) -> Value {
        return arith::ConstantIntOp::create(b, op.getLoc(), set ? 1 : 0, 32);
      };
      Value result = emitRuntimeCall(b, op.getLoc(), callee,
                                     {flag(transposeLhs), flag(transposeRhs)},
                                     {lhs, rhs}, type);
      Operation *lhsTranspose = op.getLhs().getDefiningOp();
      Operation *rhsTranspose = op.getRhs().getDefiningOp();
      op.getResult().replaceAllUsesWith(result);
      op.erase();
      // Transposes only the GEMMs read are no longer needed.
      llvm::SmallPtrSet<Operation *, 2> transposes;
      for (Operation *transpose : {lhsTranspose, rhsTranspose})
        if (transpose && isa<tg::TransposeOp>(transpose))
          transposes.insert(transpose);
      for (Operation *transpose : transposes)
        if (transpose->use_empty())
          transpose->erase();
    }
  }
};

} // namespace
