//===- MemRefCopyTest.cpp - tests of the runtime's memrefCopy -------------===//
//
// memrefCopy must copy element (i, j, ...) of the source to the same index
// of the target whatever the two layouts: contiguous, transposed, a strided
// window with an offset, rank 0 and empty.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/MemRefCopy.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace {

/// A ranked descriptor {allocated, aligned, offset, sizes, strides} over
/// `data`, laid out as compiled code lays it out.
struct Descriptor {
  std::vector<int64_t> fields;
  spmd_unranked_memref memref;

  Descriptor(float *data, int64_t offset, std::vector<int64_t> sizes,
             std::vector<int64_t> strides) {
    fields = {reinterpret_cast<int64_t>(data), reinterpret_cast<int64_t>(data),
              offset};
    fields.insert(fields.end(), sizes.begin(), sizes.end());
    fields.insert(fields.end(), strides.begin(), strides.end());
    memref = {static_cast<int64_t>(sizes.size()), fields.data()};
  }
};

TEST(MemRefCopy, TransposedSourceIntoContiguousTarget) {
  // Source: the 2x3 view of a row-major 3x2 matrix, transposed (strides 1, 2).
  std::vector<float> source = {0, 1, 2, 3, 4, 5};
  std::vector<float> target(6, -1);
  Descriptor from(source.data(), 0, {2, 3}, {1, 2});
  Descriptor to(target.data(), 0, {2, 3}, {3, 1});
  memrefCopy(sizeof(float), &from.memref, &to.memref);
  EXPECT_EQ(target, (std::vector<float>{0, 2, 4, 1, 3, 5}));
}

TEST(MemRefCopy, ContiguousSourceIntoStridedWindowWithOffset) {
  // Target: the 2x2x2 window at (1, 1, 0) of a 3x3x4 buffer, every other
  // element along the last dim.
  std::vector<float> source(8);
  std::iota(source.begin(), source.end(), 1.0f);
  std::vector<float> target(36, 0);
  Descriptor from(source.data(), 0, {2, 2, 2}, {4, 2, 1});
  Descriptor to(target.data(), 1 * 12 + 1 * 4, {2, 2, 2}, {12, 4, 2});
  memrefCopy(sizeof(float), &from.memref, &to.memref);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k)
        EXPECT_EQ(target[(1 + i) * 12 + (1 + j) * 4 + 2 * k],
                  source[i * 4 + j * 2 + k]);
  float sum = std::accumulate(target.begin(), target.end(), 0.0f);
  EXPECT_EQ(sum, 36.0f); // 1 + ... + 8: nothing else written
}

TEST(MemRefCopy, RankZeroAndEmpty) {
  float a = 7, b = 0;
  Descriptor scalarFrom(&a, 0, {}, {});
  Descriptor scalarTo(&b, 0, {}, {});
  memrefCopy(sizeof(float), &scalarFrom.memref, &scalarTo.memref);
  EXPECT_EQ(b, 7.0f);

  float c = 1, d = 2;
  Descriptor emptyFrom(&c, 0, {0, 3}, {1, 0});
  Descriptor emptyTo(&d, 0, {0, 3}, {3, 1});
  memrefCopy(sizeof(float), &emptyFrom.memref, &emptyTo.memref);
  EXPECT_EQ(d, 2.0f);
}

} // namespace
