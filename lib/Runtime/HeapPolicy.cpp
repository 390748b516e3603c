//===- HeapPolicy.cpp - keep the step's freed buffers in the heap ---------===//

#include "spmdc/Runtime/HeapPolicy.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/mman.h>
#include <unistd.h>

namespace {
constexpr uintptr_t kHugePage = uintptr_t(2) << 20;

uintptr_t alignUp(uintptr_t p, uintptr_t to) { return (p + to - 1) & ~(to - 1); }
uintptr_t alignDown(uintptr_t p, uintptr_t to) { return p & ~(to - 1); }
} // namespace

extern "C" void spmd_keep_freed_memory(void) {
#if defined(__GLIBC__)
  // Without mmap every block comes from the heap, where a free keeps its
  // pages; a trim threshold of -1 keeps the heap's top from shrinking.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

extern "C" uint64_t spmd_reserve_heap(uint64_t bytes) {
  uint64_t advised = 0;
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
  // Smaller heaps gain little; a failed madvise (THP off) changes nothing.
  if (bytes < (uint64_t(64) << 20))
    return 0;
  void *block = std::malloc(bytes);
  if (!block)
    return 0;
  uintptr_t first = alignUp(reinterpret_cast<uintptr_t>(block), kHugePage);
  uintptr_t last = alignDown(reinterpret_cast<uintptr_t>(block) + bytes,
                             kHugePage);
  if (last > first &&
      !madvise(reinterpret_cast<void *>(first), last - first, MADV_HUGEPAGE))
    advised = last - first;
  // Freed into the heap's top, which spmd_keep_freed_memory never trims:
  // the step's buffers are carved from it.
  std::free(block);
#else
  (void)bytes;
#endif
  return advised;
}

extern "C" void spmd_zero_untouched(void *buffer, uint64_t bytes) {
  auto begin = reinterpret_cast<uintptr_t>(buffer);
  uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t first = alignUp(begin, page), last = alignDown(begin + bytes, page);
  // Pages wholly inside the buffer are handed back, then faulted in again
  // writable: the kernel zeroes them (in huge pages where the heap has
  // them), and no memset writes them a second time. Left to the step's
  // first touch instead, the step's read would map the shared zero page
  // and its in-place update then fault every 4 KiB page apart.
  if (bytes < (uint64_t(1) << 20) || last <= first ||
      madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED)) {
    std::memset(buffer, 0, bytes);
    return;
  }
#ifdef MADV_POPULATE_WRITE
  // Before Linux 5.14 this fails; the step's first touch then faults them.
  madvise(reinterpret_cast<void *>(first), last - first, MADV_POPULATE_WRITE);
#endif
  std::memset(buffer, 0, first - begin);
  std::memset(reinterpret_cast<void *>(last), 0, begin + bytes - last);
}
