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

#ifdef __cplusplus
extern "C" {
#endif

/// From now on, memory this process frees stays in its heap for the next
/// malloc instead of going back to the kernel: no allocation is served by
/// mmap, and the heap's top is never trimmed. The peak is the same (freed
/// blocks are reused, the step's pattern repeats); later steps touch no
/// fresh pages. Called by spmd-run before a CPU step runs.
void spmd_keep_freed_memory(void);

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* SPMDC_RUNTIME_HEAPPOLICY_H */
