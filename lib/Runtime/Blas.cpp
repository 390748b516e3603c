//===- Blas.cpp - matmuls of compiled code through CBLAS ------------------===//

#include "spmdc/Runtime/Blas.h"
#include "spmdc/Runtime/MemRefView.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

// The CBLAS entry points, declared here rather than through <cblas.h>,
// whose Debian alternative may name another implementation's header.
extern "C" {
void cblas_sgemm(int order, int transA, int transB, int m, int n, int k,
                 float alpha, const float *a, int lda, const float *b, int ldb,
                 float beta, float *c, int ldc);
void cblas_dgemm(int order, int transA, int transB, int m, int n, int k,
                 double alpha, const double *a, int lda, const double *b,
                 int ldb, double beta, double *c, int ldc);
void openblas_set_num_threads(int threads) __attribute__((weak));
}

namespace {

constexpr int kRowMajor = 101, kNoTrans = 111;

/// Offset, in matrices, of the operand's matrix for batch index `index` of
/// the result (row-major over `batch`), broadcasting missing and size-1
/// dims.
int64_t operandBatch(const std::vector<int64_t> &shape,
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

template <typename T, typename Gemm>
void matmul(Gemm gemm, int64_t aRank, void *aDesc, int64_t bRank, void *bDesc,
            int64_t cRank, void *cDesc) {
  static bool oneThread = [] {
    if (openblas_set_num_threads)
      openblas_set_num_threads(1);
    return true;
  }();
  (void)oneThread;
  spmdc::rt::MemRefView a(aRank, aDesc, sizeof(T)), b(bRank, bDesc, sizeof(T)),
      c(cRank, cDesc, sizeof(T));
  if (!a.contiguous || !b.contiguous || !c.contiguous || aRank < 2 ||
      bRank < 2 || cRank < 2) {
    std::fprintf(stderr, "spmd-run: spmd_matmul: a buffer is not a "
                         "contiguous matrix stack (compiler bug)\n");
    std::abort();
  }
  int64_t m = c.shape[cRank - 2], n = c.shape[cRank - 1],
          k = a.shape[aRank - 1];
  std::vector<int64_t> batch(c.shape.begin(), c.shape.end() - 2);
  int64_t count = 1;
  for (int64_t size : batch)
    count *= size;
  std::vector<int64_t> index(batch.size(), 0);
  auto *aData = reinterpret_cast<const T *>(a.data);
  auto *bData = reinterpret_cast<const T *>(b.data);
  auto *cData = reinterpret_cast<T *>(c.data);
  for (int64_t i = 0; i < count; ++i) {
    const T *aMatrix = aData + operandBatch(a.shape, batch, index) * m * k;
    const T *bMatrix = bData + operandBatch(b.shape, batch, index) * k * n;
    gemm(kRowMajor, kNoTrans, kNoTrans, static_cast<int>(m),
         static_cast<int>(n), static_cast<int>(k), T(1), aMatrix,
         static_cast<int>(k), bMatrix, static_cast<int>(n), T(0),
         cData + i * m * n, static_cast<int>(n));
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      if (++index[d] < batch[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace

extern "C" {

void spmd_matmul_f32(int64_t a_rank, void *a_desc, int64_t b_rank,
                     void *b_desc, int64_t c_rank, void *c_desc) {
  matmul<float>(cblas_sgemm, a_rank, a_desc, b_rank, b_desc, c_rank, c_desc);
}

void spmd_matmul_f64(int64_t a_rank, void *a_desc, int64_t b_rank,
                     void *b_desc, int64_t c_rank, void *c_desc) {
  matmul<double>(cblas_dgemm, a_rank, a_desc, b_rank, b_desc, c_rank, c_desc);
}

} // extern "C"
