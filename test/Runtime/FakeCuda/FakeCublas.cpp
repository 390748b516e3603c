//===- FakeCublas.cpp - cuBLAS GEMMs on the host, for tests ---------------===//
//
// libcublas.so.13 beside the fake driver (FakeDriver.cpp): the GEMMs the
// CUDA runtime calls, computed on the host with cuBLAS's column-major
// semantics and its argument checks, so that tests can compare the
// runtime's row-major-to-column-major translation (CudaBlas.cpp) with the
// CPU target's OpenBLAS results. Every operand must lie in memory the fake
// driver allocated, as it must lie in device memory on a GPU.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/FloatFormats.h"

#include <cublas_v2.h>

#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" bool fake_cuda_is_device_memory(const void *pointer, size_t bytes);

namespace {

bool invalidShape(cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                  int k, int lda, int ldb, int ldc) {
  auto atLeast = [](int ld, int rows) { return ld >= (rows > 1 ? rows : 1); };
  return m < 0 || n < 0 || k < 0 || !atLeast(lda, ta == CUBLAS_OP_N ? m : k) ||
         !atLeast(ldb, tb == CUBLAS_OP_N ? k : n) || !atLeast(ldc, m);
}

void requireDevice(const void *pointer, size_t elements, size_t bytes,
                   const char *what) {
  if (elements && !fake_cuda_is_device_memory(pointer, elements * bytes)) {
    std::fprintf(stderr, "fake-cublas: %s is not device memory\n", what);
    std::_Exit(3);
  }
}

/// Elements a column-major operand of `cols` columns with leading
/// dimension `ld` spans.
size_t span(int rows, int cols, int ld) {
  return rows == 0 || cols == 0 ? 0 : size_t(ld) * (cols - 1) + rows;
}

/// C = alpha op(A) op(B) + beta C, column-major; Load/Store convert the
/// element type to and from float or double.
template <typename T, typename Acc, typename Load, typename Store>
cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, Acc alpha, const T *a, int lda, const T *b, int ldb,
                    Acc beta, T *c, int ldc, Load load, Store store) {
  if (invalidShape(ta, tb, m, n, k, lda, ldb, ldc))
    return CUBLAS_STATUS_INVALID_VALUE;
  bool transA = ta != CUBLAS_OP_N, transB = tb != CUBLAS_OP_N;
  requireDevice(a, span(transA ? k : m, transA ? m : k, lda), sizeof(T), "A");
  requireDevice(b, span(transB ? n : k, transB ? k : n, ldb), sizeof(T), "B");
  requireDevice(c, span(m, n, ldc), sizeof(T), "C");
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      Acc sum = 0;
      for (int l = 0; l < k; ++l) {
        Acc x = load(transA ? a[l + size_t(i) * lda] : a[i + size_t(l) * lda]);
        Acc y = load(transB ? b[j + size_t(l) * ldb] : b[l + size_t(j) * ldb]);
        sum += x * y;
      }
      T &out = c[i + size_t(j) * ldc];
      out = store(alpha * sum + (beta == Acc(0) ? Acc(0) : beta * load(out)));
    }
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T> T same(T x) { return x; }
float loadBF16(uint16_t x) { return spmdc::rt::fromBF16(x); }
uint16_t storeBF16(float x) { return spmdc::rt::toBF16(x); }

template <typename T>
cublasStatus_t stridedBatched(cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const T *alpha, const T *a, int lda,
                              long long sa, const T *b, int ldb, long long sb,
                              const T *beta, T *c, int ldc, long long sc,
                              int count) {
  if (count < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  for (int i = 0; i < count; ++i)
    if (cublasStatus_t s =
            gemm(ta, tb, m, n, k, *alpha, a + i * sa, lda, b + i * sb, ldb,
                 *beta, c + i * sc, ldc, same<T>, same<T>);
        s != CUBLAS_STATUS_SUCCESS)
      return s;
  return CUBLAS_STATUS_SUCCESS;
}

/// bf16 operands and result with f32 scalars and accumulation: the one
/// combination the runtime asks for.
bool bf16WithF32(cudaDataType a, cudaDataType b, cudaDataType c,
                 cublasComputeType_t compute) {
  return a == CUDA_R_16BF && b == CUDA_R_16BF && c == CUDA_R_16BF &&
         compute == CUBLAS_COMPUTE_32F;
}

} // namespace

extern "C" {

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
  static int token;
  *handle = reinterpret_cast<cublasHandle_t>(&token);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) {
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) {
  return CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusString(cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS"
                                         : "refused by the fake cuBLAS";
}

cublasStatus_t cublasSgemm(cublasHandle_t, cublasOperation_t ta,
                           cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *a, int lda,
                           const float *b, int ldb, const float *beta, float *c,
                           int ldc) {
  return gemm(ta, tb, m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc,
              same<float>, same<float>);
}
cublasStatus_t cublasDgemm(cublasHandle_t, cublasOperation_t ta,
                           cublasOperation_t tb, int m, int n, int k,
                           const double *alpha, const double *a, int lda,
                           const double *b, int ldb, const double *beta,
                           double *c, int ldc) {
  return gemm(ta, tb, m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc,
              same<double>, same<double>);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha,
                                         const float *a, int lda, long long sa,
                                         const float *b, int ldb, long long sb,
                                         const float *beta, float *c, int ldc,
                                         long long sc, int count) {
  return stridedBatched(ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c,
                        ldc, sc, count);
}
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n,
                                         int k, const double *alpha,
                                         const double *a, int lda, long long sa,
                                         const double *b, int ldb, long long sb,
                                         const double *beta, double *c, int ldc,
                                         long long sc, int count) {
  return stridedBatched(ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c,
                        ldc, sc, count);
}

cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta,
                            cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *a, cudaDataType at,
                            int lda, const void *b, cudaDataType bt, int ldb,
                            const void *beta, void *c, cudaDataType ct, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t) {
  if (!bf16WithF32(at, bt, ct, compute))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  return gemm(ta, tb, m, n, k, *static_cast<const float *>(alpha),
              static_cast<const uint16_t *>(a), lda,
              static_cast<const uint16_t *>(b), ldb,
              *static_cast<const float *>(beta), static_cast<uint16_t *>(c),
              ldc, loadBF16, storeBF16);
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
    int k, const void *alpha, const void *a, cudaDataType at, int lda,
    long long sa, const void *b, cudaDataType bt, int ldb, long long sb,
    const void *beta, void *c, cudaDataType ct, int ldc, long long sc,
    int count, cublasComputeType_t compute, cublasGemmAlgo_t) {
  if (!bf16WithF32(at, bt, ct, compute) || count < 0)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < count; ++i)
    if (cublasStatus_t s =
            gemm(ta, tb, m, n, k, *static_cast<const float *>(alpha),
                 static_cast<const uint16_t *>(a) + i * sa, lda,
                 static_cast<const uint16_t *>(b) + i * sb, ldb,
                 *static_cast<const float *>(beta),
                 static_cast<uint16_t *>(c) + i * sc, ldc, loadBF16, storeBF16);
        s != CUBLAS_STATUS_SUCCESS)
      return s;
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
