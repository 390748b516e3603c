/*===- HeapPolicy.h - how the step's buffers come from the heap (C ABI) -*- C -*-===*\
|*                                                                            *|
|* A compiled step mallocs and frees the same buffers in the same order every *|
|* step. glibc serves large ones (over 32 MiB, and smaller ones past its      *|
|* dynamic threshold) with mmap and unmaps them at free, so every step        *|
|* faulted and zeroed them afresh: on GPT-2 small a tenth of a steady step.   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef SPMDC_RUNTIME_HEAPPOLICY_H
#define SPMDC_RUNTIME_HEAPPOLICY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// From now on, memory this process frees stays in its heap for the next
/// malloc instead of going back to the kernel: no allocation is served by
/// mmap, and the heap's top is never trimmed. The peak is the same (freed
/// blocks are reused, the step's pattern repeats); later steps touch no
/// fresh pages. Called by spmd-run before a CPU step runs.
void spmd_keep_freed_memory(void);

/// Grows the heap by `bytes` (a step's buffer peak) before any of it is
/// used, asking the kernel for transparent huge pages there: the step's
/// pages then fault 2 MiB at a time, not 4 KiB, and its GEMMs miss the TLB
/// less. For spmd-run --huge-pages only: on a virtual machine whose host
/// takes back freed memory, fresh huge pages can cost far more than that
/// saves in a short run. After spmd_keep_freed_memory; a no-op under
/// 64 MiB. Returns the bytes advised (0: none, as without THP).
uint64_t spmd_reserve_heap(uint64_t bytes);

/// Sets `bytes` bytes at `buffer`, a heap block, to zeros without writing
/// its whole pages: they go back to the kernel and are faulted in again
/// writable, the kernel's zeros (huge pages where the heap has them). The
/// step updates such state in place (AdamW's moments of GPT-2 small, 1 GB):
/// left untouched, its first read would map the shared zero page and the
/// update then fault each 4 KiB page apart. Small blocks are memset.
void spmd_zero_untouched(void *buffer, uint64_t bytes);

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* SPMDC_RUNTIME_HEAPPOLICY_H */
