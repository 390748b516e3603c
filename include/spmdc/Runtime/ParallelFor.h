/*===- ParallelFor.h - a rank's threads for its loop nests (C ABI) -*- C -*-===*\
|*                                                                            *|
|* --parallelize-loop-nests and --call-parallel-nests call each large loop   *|
|* nest with independent outer iterations through spmd_parallel_for, which  *|
|* shares the iterations out among the rank's threads (spmd-run --threads), *|
|* in contiguous chunks on step boundaries, the calling thread running the  *|
|* first. With one thread (the default) it calls the nest once.             *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef SPMDC_RUNTIME_PARALLELFOR_H
#define SPMDC_RUNTIME_PARALLELFOR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Threads each loop nest may use from now on (1 by default; at most 64).
void spmd_parallel_set_threads(int32_t threads);

/// Runs fn(ctx, lo', hi') over [lo, hi) split in chunks whose bounds are
/// lo plus multiples of step, one per thread, and returns when all are
/// done. Not reentrant: one caller at a time (a rank's step).
void spmd_parallel_for(void (*fn)(void *, int64_t, int64_t), void *ctx,
                       int64_t lo, int64_t hi, int64_t step);

#ifdef __cplusplus
} // extern "C"

namespace spmdc::rt {
/// fn(ctx, lo, hi) over [0, count) in one contiguous chunk per thread, on
/// at most `threads` of the same pool (the rank's GEMMs, split by rows or
/// columns: one chunk each keeps each part a large GEMM).
void parallelChunks(void (*fn)(void *, int64_t, int64_t), void *ctx,
                    int64_t count, int threads);
} // namespace spmdc::rt
#endif

#endif /* SPMDC_RUNTIME_PARALLELFOR_H */
