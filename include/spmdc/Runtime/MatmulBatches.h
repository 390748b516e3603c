//===- MatmulBatches.h - the matrices of a batched matmul -------*- C++ -*-===//
//
// tg.matmul's batching, shared by the BLAS and cuBLAS runtimes: the
// result's leading dims are the batch; each operand's batch dims broadcast
// against them NumPy-style (missing or size-1 dims repeat). No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNTIME_MATMULBATCHES_H
#define SPMDC_RUNTIME_MATMULBATCHES_H

#include "spmdc/Runtime/MemRefView.h"

#include <cstdint>
#include <vector>

namespace spmdc::rt {

struct MatmulBatches {
  int64_t m = 0, n = 0, k = 0;
  /// A is stored [..., k, m] (its matrices transposed), B [..., n, k].
  bool transposeA = false, transposeB = false;
  /// Per batch index of the result (row-major): which matrix of A and of B
  /// it multiplies.
  std::vector<int64_t> aMatrix, bMatrix;
  /// True when A has every batch index (no broadcasting), so A's matrices
  /// are consecutive.
  bool aFull = true, bFull = true;
  /// True when every batch index multiplies B's first matrix (a weight):
  /// with aFull and A not transposed, the whole batch is one GEMM of
  /// count * m rows.
  bool bShared = true;
  int64_t count() const { return static_cast<int64_t>(aMatrix.size()); }
};

/// Offset, in matrices, of the operand's matrix for batch index `index` of
/// the result (row-major over `batch`).
inline int64_t operandMatrix(const std::vector<int64_t> &shape,
                             const std::vector<int64_t> &batch,
                             const std::vector<int64_t> &index) {
  int64_t operandBatchDims = static_cast<int64_t>(shape.size()) - 2;
  int64_t lead = static_cast<int64_t>(batch.size()) - operandBatchDims;
  int64_t offset = 0;
  for (int64_t d = 0; d < operandBatchDims; ++d) {
    int64_t size = shape[d];
    offset = offset * size + (size == 1 ? 0 : index[lead + d]);
  }
  return offset;
}

/// The batches of C = op(A) @ op(B), op transposing the last two dims where
/// `transposeA` / `transposeB` say; false when a buffer is not a contiguous
/// stack of matrices (a compiler bug).
inline bool matmulBatches(const MemRefView &a, const MemRefView &b,
                          const MemRefView &c, bool transposeA, bool transposeB,
                          MatmulBatches &out) {
  if (!a.contiguous || !b.contiguous || !c.contiguous || a.shape.size() < 2 ||
      b.shape.size() < 2 || c.shape.size() < 2)
    return false;
  out.m = c.shape[c.shape.size() - 2];
  out.n = c.shape[c.shape.size() - 1];
  out.k = a.shape[a.shape.size() - (transposeA ? 2 : 1)];
  out.transposeA = transposeA;
  out.transposeB = transposeB;
  std::vector<int64_t> batch(c.shape.begin(), c.shape.end() - 2);
  int64_t count = 1;
  for (int64_t size : batch)
    count *= size;
  std::vector<int64_t> index(batch.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    out.aMatrix.push_back(operandMatrix(a.shape, batch, index));
    out.bMatrix.push_back(operandMatrix(b.shape, batch, index));
    out.aFull &= out.aMatrix.back() == i;
    out.bFull &= out.bMatrix.back() == i;
    out.bShared &= out.bMatrix.back() == 0;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      if (++index[d] < batch[d])
        break;
      index[d] = 0;
    }
  }
  return true;
}

} // namespace spmdc::rt

#endif // SPMDC_RUNTIME_MATMULBATCHES_H
