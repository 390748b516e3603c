//===- OneDnn.h - GEMMs through oneDNN, where it is installed ---*- C++ -*-===//
//
// The runtime's use of oneDNN (Debian's libdnnl-dev): an f32 GEMM and a bf16
// matmul. oneDNN's JIT kernels use the CPU's widest instructions (AVX-512,
// AVX512_BF16, AMX) whatever OPENBLAS_CORETYPE says. The library is loaded
// at first use (OneDnn.cpp says why): each function returns false where it
// is absent, and the caller falls back to CBLAS. Private to lib/Runtime.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_LIB_RUNTIME_ONEDNN_H
#define SPMDC_LIB_RUNTIME_ONEDNN_H

#include "spmdc/Runtime/MatmulBatches.h"

#include <cstdint>

namespace spmdc::rt {

/// Whether oneDNN is there (loading it on the first call).
bool oneDnnSgemmAvailable();

/// The OpenMP team of the calling thread's oneDNN calls: `threads` threads.
void oneDnnSetThreads(int threads);

/// Row-major C = alpha op(A) @ op(B) + beta C (dnnl_sgemm); false where it
/// failed or oneDNN is absent.
bool oneDnnSgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 float alpha, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float beta, float *c, int64_t ldc);

/// C = op(A) @ op(B) over `batches` on bf16 bit patterns, accumulated in f32
/// and rounded to bf16 (oneDNN's matmul primitive: AMX or AVX512_BF16 where
/// the CPU has it), on `threads` of oneDNN's OpenMP threads; false where
/// oneDNN is absent or refused the shape.
bool oneDnnMatmulBf16(const MatmulBatches &batches, const uint16_t *a,
                      const uint16_t *b, uint16_t *c, int threads);

} // namespace spmdc::rt

#endif // SPMDC_LIB_RUNTIME_ONEDNN_H
