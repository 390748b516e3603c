//===- MemRefCopy.h - copies between buffers of any layout ------*- C++ -*-===//
//
// MLIR's memref-to-LLVM lowering turns a memref.copy between buffers whose
// layouts differ into a call of `memrefCopy`. MLIR's C runner utilities
// define it, but Debian builds that library against libMLIR.so and
// libLLVM.so; the runtime's own definition lets compiled code run without
// them (spmd-run-portable, docs/cuda.md).
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNTIME_MEMREFCOPY_H
#define SPMDC_RUNTIME_MEMREFCOPY_H

#include <cstdint>

extern "C" {

/// An unranked memref as compiled code passes it: the rank and a pointer to
/// the ranked descriptor (MemRefView.h).
struct spmd_unranked_memref {
  int64_t rank;
  void *descriptor;
};

/// Copies every element of `source` into `target` (same shape, any
/// strides), `element_bytes` bytes each.
void memrefCopy(int64_t element_bytes, spmd_unranked_memref *source,
                spmd_unranked_memref *target);

} // extern "C"

#endif // SPMDC_RUNTIME_MEMREFCOPY_H
