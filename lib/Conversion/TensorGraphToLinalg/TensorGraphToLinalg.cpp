//===- TensorGraphToLinalg.cpp - tg primitives into linalg on tensors -----===//
//
// --convert-tg-to-linalg: each primitive tg op becomes linalg, tensor, arith
// and math ops on tensors, the form MLIR's fusion, one-shot bufferization
// and LLVM lowering take from there. Elementwise ops (with NumPy
// broadcasting), reductions and matmuls are linalg.generic ops whose
// indexing maps state the broadcast, so elementwise fusion sees through
// them. Composites must be decomposed first.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/TensorGraphToLinalg/TensorGraphToLinalg.h"
#include "spmdc/Conversion/Passes.h"
#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

namespace spmdc {
#define GEN_PASS_DEF_CONVERTTGTOLINALG
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;
using namespace spmdc;

namespace {

struct ConvertTgToLinalgPass
    : spmdc::impl::ConvertTgToLinalgBase<ConvertTgToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, func::FuncDialect>();
    // Collectives need the runtime's calls, which this pass does not make.
    target.addIllegalDialect<tg::TensorGraphDialect, dist::DistDialect>();
    RewritePatternSet patterns(ctx);
    populateTgElementwiseToLinalgPatterns(patterns);
    populateTgReductionToLinalgPatterns(patterns);
    populateTgMatmulToLinalgPatterns(patterns);
    populateTgDataMovementToLinalgPatterns(patterns);
    populateTgFactoryToLinalgPatterns(patterns);
    populateTgIndexingToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
