//===- Blas.cpp - matmuls of compiled code through CBLAS ------------------===//

#include "spmdc/Runtime/Blas.h"
#include "spmdc/Runtime/MatmulBatches.h"

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
  spmdc::rt::MatmulBatches batches;
  if (!spmdc::rt::matmulBatches(a, b, c, batches)) {
    std::fprintf(stderr, "spmd-run: spmd_matmul: a buffer is not a "
                         "contiguous matrix stack (compiler bug)\n");
    std::abort();
  }
  auto m = static_cast<int>(batches.m), n = static_cast<int>(batches.n),
       k = static_cast<int>(batches.k);
  auto *aData = reinterpret_cast<const T *>(a.data);
  auto *bData = reinterpret_cast<const T *>(b.data);
  auto *cData = reinterpret_cast<T *>(c.data);
  if (batches.aFull && batches.bShared) {
    // x @ W over a batch: one GEMM over all its rows.
    gemm(kRowMajor, kNoTrans, kNoTrans, static_cast<int>(batches.count() * m),
         n, k, T(1), aData, k, bData, n, T(0), cData, n);
    return;
  }
  for (size_t i = 0; i < batches.aMatrix.size(); ++i)
    gemm(kRowMajor, kNoTrans, kNoTrans, m, n, k, T(1),
         aData + batches.aMatrix[i] * m * k, k,
         bData + batches.bMatrix[i] * k * n, n, T(0), cData + i * m * n, n);
}

} // namespace

extern "C" {

void spmd_matmul_f32(int64_t a_rank, void *a_desc, int64_t b_rank, void *b_desc,
                     int64_t c_rank, void *c_desc) {
  matmul<float>(cblas_sgemm, a_rank, a_desc, b_rank, b_desc, c_rank, c_desc);
}

void spmd_matmul_f64(int64_t a_rank, void *a_desc, int64_t b_rank, void *b_desc,
                     int64_t c_rank, void *c_desc) {
  matmul<double>(cblas_dgemm, a_rank, a_desc, b_rank, b_desc, c_rank, c_desc);
}

} // extern "C"
