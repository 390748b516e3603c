//===- HeapPolicy.cpp - keep the step's freed buffers in the heap ---------===//

#include "spmdc/Runtime/HeapPolicy.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

extern "C" void spmd_keep_freed_memory(void) {
#if defined(__GLIBC__)
  // Without mmap every block comes from the heap, where a free keeps its
  // pages; a trim threshold of -1 keeps the heap's top from shrinking.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
}
