//===- CudaBlas.cpp - matmuls of compiled CUDA steps through cuBLAS -------===//
//
// spmd_matmul_<dtype> of the CUDA target: row-major C = A @ B as cuBLAS's
// column-major C^T = B^T @ A^T. A batch against one shared B (a linear
// layer) is one GEMM over all rows; equal batches are one strided-batched
// GEMM; broadcasting otherwise goes matrix by matrix.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "spmdc/Runtime/Cuda.h"
#include "spmdc/Runtime/MatmulBatches.h"

#include <cublas_v2.h>

#include <string>

using namespace spmdc::cuda;

namespace {

cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    cublasStatus_t status = cublasCreate(&created);
    if (status != CUBLAS_STATUS_SUCCESS)
      fail("spmd_matmul", std::string("cublasCreate failed: ") +
                              cublasGetStatusString(status));
    cublasSetStream(created, stream());
    // Full f32 precision (no TF32): the CPU target's numbers are the
    // reference.
    cublasSetMathMode(created, CUBLAS_DEFAULT_MATH);
    return created;
  }();
  return h;
}

void checkBlas(cublasStatus_t status, const char *call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail("spmd_matmul",
         std::string(call) + " failed: " + cublasGetStatusString(status));
}

/// T: the element type; Scale: alpha's and beta's (float for bf16).
template <typename T, typename Scale = T, typename Gemm, typename StridedGemm>
void matmul(Gemm gemm, StridedGemm strided, const char *name, int32_t transA,
            int32_t transB, int64_t aRank, void *aDesc, int64_t bRank,
            void *bDesc, int64_t cRank, void *cDesc) {
  spmdc::rt::MemRefView a(aRank, aDesc, sizeof(T)), b(bRank, bDesc, sizeof(T)),
      c(cRank, cDesc, sizeof(T));
  spmdc::rt::MatmulBatches batches;
  if (!spmdc::rt::matmulBatches(a, b, c, transA != 0, transB != 0, batches))
    fail("spmd_matmul",
         "a buffer is not a contiguous matrix stack (compiler bug)");
  int m = static_cast<int>(batches.m), n = static_cast<int>(batches.n),
      k = static_cast<int>(batches.k);
  auto *aData = reinterpret_cast<const T *>(a.data);
  auto *bData = reinterpret_cast<const T *>(b.data);
  auto *cData = reinterpret_cast<T *>(c.data);
  const Scale one = 1, zero = 0;
  CUevent start = nullptr, stop = nullptr;
  if (profiling()) {
    check(cuEventCreate(&start, CU_EVENT_DEFAULT), "spmd_matmul",
          "cuEventCreate");
    check(cuEventCreate(&stop, CU_EVENT_DEFAULT), "spmd_matmul",
          "cuEventCreate");
    check(cuEventRecord(start, stream()), "spmd_matmul", "cuEventRecord");
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: a
  // row-major operand read as column-major is its own transpose, so an
  // operand stored transposed is read with CUBLAS_OP_T.
  cublasOperation_t opA = batches.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = batches.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  int lda = batches.transposeA ? m : k, ldb = batches.transposeB ? k : n;
  int64_t count = batches.count();
  if (batches.aFull && batches.bShared && !batches.transposeA) {
    int rows = static_cast<int>(count * m);
    checkBlas(gemm(handle(), opB, opA, n, rows, k, &one, bData, ldb, aData, lda,
                   &zero, cData, n),
              name);
  } else if (batches.aFull && batches.bFull) {
    checkBlas(strided(handle(), opB, opA, n, m, k, &one, bData, ldb,
                      int64_t(k) * n, aData, lda, int64_t(m) * k, &zero, cData,
                      n, int64_t(m) * n, static_cast<int>(count)),
              name);
  } else {
    for (int64_t i = 0; i < count; ++i)
      checkBlas(gemm(handle(), opB, opA, n, m, k, &one,
                     bData + batches.bMatrix[i] * k * n, ldb,
                     aData + batches.aMatrix[i] * m * k, lda, &zero,
                     cData + i * m * n, n),
                name);
  }
  if (profiling()) {
    check(cuEventRecord(stop, stream()), "spmd_matmul", "cuEventRecord");
    check(cuEventSynchronize(stop), "spmd_matmul", "cuEventSynchronize");
    float ms = 0;
    cuEventElapsedTime(&ms, start, stop);
    std::string entry = std::string(name) + " " + std::to_string(count) + "x" +
                        std::to_string(m) + "x" + std::to_string(n) + "x" +
                        std::to_string(k);
    double elements = 0;
    for (const spmdc::rt::MemRefView *view : {&a, &b, &c}) {
      double n = 1;
      for (int64_t size : view->shape)
        n *= size;
      elements += n;
    }
    profile(entry.c_str(), ms, elements * sizeof(T));
    cuEventDestroy(start);
    cuEventDestroy(stop);
  }
  synchronize("spmd_matmul");
}

} // namespace

extern "C" {

void spmd_matmul_f32(int32_t trans_a, int32_t trans_b, int64_t a_rank,
                     void *a_desc, int64_t b_rank, void *b_desc, int64_t c_rank,
                     void *c_desc) {
  matmul<float>(cublasSgemm, cublasSgemmStridedBatched, "cublasSgemm", trans_a,
                trans_b, a_rank, a_desc, b_rank, b_desc, c_rank, c_desc);
}

void spmd_matmul_f64(int32_t trans_a, int32_t trans_b, int64_t a_rank,
                     void *a_desc, int64_t b_rank, void *b_desc, int64_t c_rank,
                     void *c_desc) {
  matmul<double>(cublasDgemm, cublasDgemmStridedBatched, "cublasDgemm", trans_a,
                 trans_b, a_rank, a_desc, b_rank, b_desc, c_rank, c_desc);
}

void spmd_matmul_bf16(int32_t trans_a, int32_t trans_b, int64_t a_rank,
                      void *a_desc, int64_t b_rank, void *b_desc,
                      int64_t c_rank, void *c_desc) {
  // bf16 in and out, f32 accumulation (--precision=bf16).
  auto gemm = [](cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                 int m, int n, int k, const float *alpha, const uint16_t *a,
                 int lda, const uint16_t *b, int ldb, const float *beta,
                 uint16_t *c, int ldc) {
    return cublasGemmEx(h, ta, tb, m, n, k, alpha, a, CUDA_R_16BF, lda, b,
                        CUDA_R_16BF, ldb, beta, c, CUDA_R_16BF, ldc,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  auto strided = [](cublasHandle_t h, cublasOperation_t ta,
                    cublasOperation_t tb, int m, int n, int k,
                    const float *alpha, const uint16_t *a, int lda,
                    long long sa, const uint16_t *b, int ldb, long long sb,
                    const float *beta, uint16_t *c, int ldc, long long sc,
                    int count) {
    return cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, a, CUDA_R_16BF,
                                      lda, sa, b, CUDA_R_16BF, ldb, sb, beta, c,
                                      CUDA_R_16BF, ldc, sc, count,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  matmul<uint16_t, float>(gemm, strided, "cublasGemmEx-bf16", trans_a, trans_b,
                          a_rank, a_desc, b_rank, b_desc, c_rank, c_desc);
}

} // extern "C"
