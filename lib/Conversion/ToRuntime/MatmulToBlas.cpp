//===- MatmulToBlas.cpp - matmuls to BLAS calls ---------------------------===//
//
// --convert-tg-matmul-to-blas: each tg.matmul of f32, f64 or bf16 becomes a
// call of the runtime's spmd_matmul_<dtype> (Blas.h), which runs one GEMM per
// batch index with tg.matmul's broadcasting. Other element types keep the
// linalg lowering. A transpose of the last two dims under an operand is read
// in place (a flag of the call); --tg-rearrange-products, run before, puts
// the transposes there.
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
      auto [lhs, transposeLhs] = tg::peelTransposes(op.getLhs());
      auto [rhs, transposeRhs] = tg::peelTransposes(op.getRhs());
      auto flag = [&](bool set) -> Value {
        return arith::ConstantIntOp::create(b, op.getLoc(), set ? 1 : 0, 32);
      };
      Value result = emitRuntimeCall(b, op.getLoc(), callee,
                                     {flag(transposeLhs), flag(transposeRhs)},
                                     {lhs, rhs}, type);
      Value lhsOperand = op.getLhs(), rhsOperand = op.getRhs();
      op.getResult().replaceAllUsesWith(result);
      op.erase();
      // Transposes only the GEMMs read are no longer needed.
      tg::eraseDeadTransposes({lhsOperand, rhsOperand});
    }
  }
};

} // namespace
