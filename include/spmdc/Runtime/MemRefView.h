//===- MemRefView.h - a buffer as compiled code passes it -------*- C++ -*-===//
//
// Compiled code passes buffers to the runtime as unranked memrefs: a rank
// and a pointer to the descriptor {allocated, aligned, offset,
// sizes[rank], strides[rank]}, all 8-byte fields. No MLIR headers.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNTIME_MEMREFVIEW_H
#define SPMDC_RUNTIME_MEMREFVIEW_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace spmdc::rt {

struct MemRefView {
  char *data = nullptr;
  std::vector<int64_t> shape;
  /// In elements, as the descriptor holds them.
  std::vector<int64_t> strides;
  /// False if the strides are not row-major contiguous.
  bool contiguous = true;

  MemRefView(int64_t rank, void *descriptor, size_t elementBytes) {
    auto *fields = static_cast<int64_t *>(descriptor);
    data = reinterpret_cast<char *>(fields[1]) + fields[2] * elementBytes;
    shape.assign(fields + 3, fields + 3 + rank);
    strides.assign(fields + 3 + rank, fields + 3 + 2 * rank);
    int64_t expected = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (shape[d] != 1 && strides[d] != expected)
        contiguous = false;
      expected *= shape[d];
    }
  }
};

} // namespace spmdc::rt

#endif // SPMDC_RUNTIME_MEMREFVIEW_H
