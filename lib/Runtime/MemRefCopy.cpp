//===- MemRefCopy.cpp - copies between buffers of any layout --------------===//

#include "spmdc/Runtime/MemRefCopy.h"
#include "spmdc/Runtime/MemRefView.h"

#include <cstring>

using spmdc::rt::MemRefView;

extern "C" void memrefCopy(int64_t element_bytes, spmd_unranked_memref *source,
                           spmd_unranked_memref *target) {
  MemRefView from(source->rank, source->descriptor, element_bytes);
  MemRefView to(target->rank, target->descriptor, element_bytes);
  int64_t count = 1;
  for (int64_t size : from.shape)
    count *= size;
  if (count == 0)
    return;
  if (from.contiguous && to.contiguous) {
    std::memmove(to.data, from.data, count * element_bytes);
    return;
  }
  // Walk the index space row-major, one element at a time; `index` is the
  // position, the offsets follow it in each buffer's strides.
  int64_t rank = source->rank;
  std::vector<int64_t> index(rank, 0);
  int64_t fromOffset = 0, toOffset = 0;
  for (int64_t n = 0; n < count; ++n) {
    std::memcpy(to.data + toOffset * element_bytes,
                from.data + fromOffset * element_bytes, element_bytes);
    for (int64_t d = rank - 1; d >= 0; --d) {
      fromOffset += from.strides[d];
      toOffset += to.strides[d];
      if (++index[d] < from.shape[d])
        break;
      fromOffset -= from.strides[d] * from.shape[d];
      toOffset -= to.strides[d] * to.shape[d];
      index[d] = 0;
    }
  }
}
