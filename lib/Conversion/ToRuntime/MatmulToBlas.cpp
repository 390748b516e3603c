//===- MatmulToBlas.cpp - matmuls to BLAS calls ---------------------------===//
//
// --convert-tg-matmul-to-blas: each tg.matmul of f32, f64 or bf16 becomes a call
// of the runtime's spmd_matmul_<dtype> (Blas.h), which runs one GEMM per
// batch index with tg.matmul's broadcasting. Other element types keep the
// linalg lowering.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCall.h"

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

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
          module, name, {},
          element, /*numBuffers=*/3);
      b.setInsertionPoint(op);
      Value result = emitRuntimeCall(b, op.getLoc(), callee, {},
                                     {op.getLhs(), op.getRhs()}, type);
      op.getResult().replaceAllUsesWith(result);
      op.erase();
    }
  }
};

} // namespace
