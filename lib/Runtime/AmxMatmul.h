//===- AmxMatmul.h - bf16 GEMMs on AMX tiles --------------------*- C++ -*-===//
//
// The runtime's own bf16 matmul for CPUs with AMX (Intel's tile registers:
// one TDPBF16PS is a 16 x 16 x 32 product), the default there
// (SPMDC_GEMM=onednn asks for oneDNN instead). The tiles' own rate here is
// about 1 TFLOP/s a core and oneDNN 2.6 reaches a fifth of it on GPT-2's
// shapes; these kernels pack each operand once, into the layout the tiles
// load, keep a 32 x 32 block of C in four tiles over up to 1,024 of the
// reduction, and reach a little more (docs/benchmarks.md). Private to
// lib/Runtime.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_LIB_RUNTIME_AMXMATMUL_H
#define SPMDC_LIB_RUNTIME_AMXMATMUL_H

#include "spmdc/Runtime/MatmulBatches.h"

#include <cstdint>

namespace spmdc::rt {

/// Whether this CPU has AMX-BF16 and AVX512-BF16 and the kernel lets the
/// process use the tiles (asked once, on the first call).
bool amxBf16Available();

/// C = op(A) @ op(B) over `batches` on bf16 bit patterns, accumulated in f32
/// and rounded to bf16 (round to nearest even), on up to `threads` of the
/// rank's threads; false where AMX is not available.
bool amxMatmulBf16(const MatmulBatches &batches, const uint16_t *a,
                   const uint16_t *b, uint16_t *c, int threads);

} // namespace spmdc::rt

#endif // SPMDC_LIB_RUNTIME_AMXMATMUL_H
