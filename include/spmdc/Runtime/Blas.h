/*===- Blas.h - matmuls of compiled code through BLAS (C ABI) ------*- C -*-===*\
|*                                                                            *|
|* --convert-tg-matmul-to-blas turns each f32/f64/bf16 tg.matmul into a    *|
|* call of spmd_matmul_<dtype> on contiguous buffers passed as unranked     *|
|* memrefs (rank, then a pointer to the descriptor {allocated, aligned,     *|
|* offset, sizes[rank], strides[rank]}). c = op(a) @ op(b) with tg.matmul's *|
|* semantics: op(a) is [..., m, k], op(b) [..., k, n], c [..., m, n]; batch *|
|* dims broadcast NumPy style (a missing or size-1 dim repeats). trans_a   *|
|* (trans_b) nonzero: a is stored [..., k, m] (b [..., n, k]) and read      *|
|* transposed, which saves the copy a tg.transpose would make. f32 GEMMs   *|
|* through oneDNN where it was built in (SPMDC_GEMM=openblas: the CBLAS    *|
|* instead), f64 through the system's CBLAS (OpenBLAS), on one thread      *|
|* unless spmd_blas_set_threads says more (spmd-run --threads: a rank with *|
|* more than one core), when a large GEMM is split over the rank's threads *|
|* (the pool of spmd_parallel_for).                                         *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef SPMDC_RUNTIME_BLAS_H
#define SPMDC_RUNTIME_BLAS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// f32 -> bf16, round to nearest even: what LLVM calls `__truncsfbf2` for
/// on CPUs without AVX512_BF16 (the bf16 casts of --precision=bf16), which
/// libgcc 12 does not have. The bits come back in the low half of a float
/// register, where the x86-64 ABI returns a __bf16.
float spmd_truncsfbf2(float value);

/// Threads each GEMM may use from now on (1 by default).
void spmd_blas_set_threads(int32_t threads);

void spmd_matmul_f32(int32_t trans_a, int32_t trans_b, int64_t a_rank,
                     void *a_desc, int64_t b_rank, void *b_desc,
                     int64_t c_rank, void *c_desc);
void spmd_matmul_f64(int32_t trans_a, int32_t trans_b, int64_t a_rank,
                     void *a_desc, int64_t b_rank, void *b_desc,
                     int64_t c_rank, void *c_desc);
/// bf16 operands and result (bit patterns in uint16), products accumulated
/// in f32 (--precision=bf16).
void spmd_matmul_bf16(int32_t trans_a, int32_t trans_b, int64_t a_rank,
                     void *a_desc, int64_t b_rank, void *b_desc,
                     int64_t c_rank, void *c_desc);

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* SPMDC_RUNTIME_BLAS_H */
