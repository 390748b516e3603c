//===- TensorGraphToLinalg.h - tg primitives into linalg --------*- C++ -*-===//
//
// The patterns of --convert-tg-to-linalg, by op family, for a pass that
// wants some of them.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_CONVERSION_TENSORGRAPHTOLINALG_TENSORGRAPHTOLINALG_H
#define SPMDC_CONVERSION_TENSORGRAPHTOLINALG_TENSORGRAPHTOLINALG_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace spmdc {

/// Ops with the Elementwise trait (unary, binary, compare, select,
/// convert): one broadcasting linalg.generic each.
void populateTgElementwiseToLinalgPatterns(mlir::RewritePatternSet &patterns);
/// tg.sum and tg.max over dims.
void populateTgReductionToLinalgPatterns(mlir::RewritePatternSet &patterns);
/// tg.matmul, batched, as one contraction.
void populateTgMatmulToLinalgPatterns(mlir::RewritePatternSet &patterns);
/// reshape, transpose, broadcast, slice, concat.
void populateTgDataMovementToLinalgPatterns(mlir::RewritePatternSet &patterns);
/// iota, full, constant, rand_uniform.
void populateTgFactoryToLinalgPatterns(mlir::RewritePatternSet &patterns);
/// embedding, gather and their adjoints scatter_add and
/// embedding_backward.
void populateTgIndexingToLinalgPatterns(mlir::RewritePatternSet &patterns);

} // namespace spmdc

#endif // SPMDC_CONVERSION_TENSORGRAPHTOLINALG_TENSORGRAPHTOLINALG_H
