//===- AmxMatmulTest.cpp - the runtime's AMX bf16 GEMMs
//--------------------===//
//
// amxMatmulBf16 against a triple loop in double, on shapes that take every
// path: A read in place or packed (transposed, k not whole blocks, rows not
// whole blocks), B packed from rows, from columns (transposed) and element
// by element (odd k), C chunked by columns and by rows, the reduction in
// one step and in several (the partial sums kept in f32), on 1, 2 and 3
// threads, and batches of paired matrices. Skipped where the CPU has no AMX.
//
//===----------------------------------------------------------------------===//

#include "AmxMatmul.h"

#include "spmdc/Runtime/FloatFormats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

struct Shape {
  int64_t batch, m, n, k;
  bool transA, transB;
};

/// Values exact in bf16 (small integers over 8), so that the only rounding
/// is the product's.
float valueAt(int64_t i, int salt) {
  return static_cast<float>((i * 7 + salt * 13) % 17 - 8) / 8.0f;
}

void expectProduct(const Shape &s, int threads) {
  std::vector<float> a(s.batch * s.m * s.k), b(s.batch * s.k * s.n);
  std::vector<uint16_t> a16(a.size()), b16(b.size()),
      c16(s.batch * s.m * s.n, 0xffff);
  for (size_t i = 0; i < a.size(); ++i)
    a16[i] = spmdc::rt::toBF16(a[i] = valueAt(i, 1));
  for (size_t i = 0; i < b.size(); ++i)
    b16[i] = spmdc::rt::toBF16(b[i] = valueAt(i, 2));
  spmdc::rt::MatmulBatches batches;
  batches.m = s.m;
  batches.n = s.n;
  batches.k = s.k;
  batches.transposeA = s.transA;
  batches.transposeB = s.transB;
  for (int64_t i = 0; i < s.batch; ++i) {
    batches.aMatrix.push_back(i);
    batches.bMatrix.push_back(i);
  }
  batches.bShared = s.batch == 1;
  ASSERT_TRUE(spmdc::rt::amxMatmulBf16(batches, a16.data(), b16.data(),
                                       c16.data(), threads));
  for (int64_t p = 0; p < s.batch; ++p)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double want = 0;
        for (int64_t q = 0; q < s.k; ++q) {
          float x = s.transA ? a[(p * s.k + q) * s.m + i]
                             : a[(p * s.m + i) * s.k + q];
          float y = s.transB ? b[(p * s.n + j) * s.k + q]
                             : b[(p * s.k + q) * s.n + j];
          want += double(x) * y;
        }
        float got = spmdc::rt::fromBF16(c16[(p * s.m + i) * s.n + j]);
        // bf16 keeps 8 significant bits: half an ulp is 2^-9 relative.
        ASSERT_NEAR(got, want, std::ldexp(std::abs(want), -8) + 1e-6)
            << "m=" << s.m << " n=" << s.n << " k=" << s.k
            << " transA=" << s.transA << " transB=" << s.transB
            << " threads=" << threads << " at (" << p << ", " << i << ", " << j
            << ")";
      }
}

const Shape kShapes[] = {
    {1, 64, 96, 64, false, false},   // A in place, whole blocks
    {1, 70, 301, 96, false, false},  // rows and columns not whole blocks
    {1, 64, 600, 45, false, true},   // B transposed, k odd and short
    {1, 37, 530, 100, true, false},  // A transposed (packed)
    {1, 64, 520, 64, true, true},    // both transposed
    {1, 700, 40, 96, false, false},  // chunks of rows: A packed per chunk
    {1, 650, 33, 70, true, true},    // rows, A transposed, B transposed
    {1, 3, 5, 7, false, false},      // smaller than a tile
    {1, 40, 70, 2100, false, false}, // k in three steps, the last partial
    {1, 300, 20, 1500, true, true},  // rows, k in two steps, transposed
    {1, 45, 37, 90, true, true},     // columns, both packed by transposes
    {6, 40, 24, 64, false, true},    // paired matrices (attention's heads)
    {5, 33, 17, 31, true, false},
};

TEST(AmxMatmul, IsTheF32ProductRounded) {
  if (!spmdc::rt::amxBf16Available())
    GTEST_SKIP() << "this CPU has no AMX-BF16";
  for (int threads : {1, 2, 3})
    for (const Shape &s : kShapes)
      expectProduct(s, threads);
}

} // namespace
