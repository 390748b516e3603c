//===- BlasTest.cpp - tests of the runtime's matmuls (Blas.h) -------------===//
//
// spmd_matmul_f32 and spmd_matmul_bf16 against a plain triple loop, for
// every transpose, a batch that shares its weight (one GEMM over all rows)
// and one that broadcasts A, on 1, 2 and 3 threads. The GEMMs run on oneDNN
// where it is linked, else on CBLAS: both must give tg.matmul's result.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/Blas.h"
#include "spmdc/Runtime/FloatFormats.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

/// A contiguous descriptor {allocated, aligned, offset, sizes, strides}.
struct Descriptor {
  std::vector<int64_t> fields;
  Descriptor(void *data, const std::vector<int64_t> &sizes) {
    fields = {reinterpret_cast<int64_t>(data), reinterpret_cast<int64_t>(data),
              0};
    fields.insert(fields.end(), sizes.begin(), sizes.end());
    std::vector<int64_t> strides(sizes.size(), 1);
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * sizes[d + 1];
    fields.insert(fields.end(), strides.begin(), strides.end());
  }
  int64_t rank() const { return (static_cast<int64_t>(fields.size()) - 3) / 2; }
};

/// A matmul case: A [aBatch, rows, cols] (stored transposed where
/// transA), B likewise; C [batch, m, n].
struct Case {
  int64_t batch, m, n, k;
  bool transA, transB;
  bool aBroadcast, bBroadcast; // one matrix for the whole batch
};

float valueAt(int64_t i, int salt) {
  return static_cast<float>(((i * 37 + salt * 11) % 23) - 11) / 8.0f;
}

/// C[b, i, j] = sum_p op(A)[b, i, p] * op(B)[b, p, j], in double.
std::vector<double> reference(const Case &c, const std::vector<float> &a,
                              const std::vector<float> &b) {
  std::vector<double> out(c.batch * c.m * c.n);
  for (int64_t s = 0; s < c.batch; ++s) {
    const float *am = a.data() + (c.aBroadcast ? 0 : s * c.m * c.k);
    const float *bm = b.data() + (c.bBroadcast ? 0 : s * c.k * c.n);
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < c.k; ++p)
          sum += double(c.transA ? am[p * c.m + i] : am[i * c.k + p]) *
                 double(c.transB ? bm[j * c.k + p] : bm[p * c.n + j]);
        out[(s * c.m + i) * c.n + j] = sum;
      }
  }
  return out;
}

std::vector<int64_t> operandShape(const Case &c, bool broadcast, int64_t rows,
                                  int64_t cols, bool transposed) {
  std::vector<int64_t> shape = {broadcast ? 1 : c.batch};
  shape.push_back(transposed ? cols : rows);
  shape.push_back(transposed ? rows : cols);
  return shape;
}

const Case kCases[] = {
    {1, 5, 7, 3, false, false, false, false},
    {3, 17, 9, 33, false, true, false, true}, // x @ W^T over a batch
    {2, 8, 40, 16, true, false, false, false},
    {4, 6, 5, 64, true, true, true, false},   // A broadcast
    {2, 64, 48, 96, false, false, false, true}, // one GEMM of 128 rows
};

/// Cases above the size where a rank with several threads splits a GEMM
/// over them (Blas.cpp): by rows, by columns, whole matrices of a batch,
/// and one GEMM over a batch's rows; no size a multiple of the split's
/// blocks of 16.
const Case kSplitCases[] = {
    {1, 203, 37, 150, false, false, false, false}, // rows
    {1, 41, 301, 100, true, true, false, false},   // columns, transposed
    {8, 40, 40, 96, true, false, false, false},    // whole matrices
    {8, 50, 45, 70, false, true, false, false},    // q @ k^T over heads
    {3, 70, 50, 120, false, true, false, true},    // 210 rows, one weight
    {2, 90, 130, 100, false, false, true, false},  // A broadcast, columns
};

void expectMatmulF32(const Case &c) {
  auto aShape = operandShape(c, c.aBroadcast, c.m, c.k, c.transA);
  auto bShape = operandShape(c, c.bBroadcast, c.k, c.n, c.transB);
  std::vector<float> a(aShape[0] * c.m * c.k), b(bShape[0] * c.k * c.n),
      out(c.batch * c.m * c.n, -1);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = valueAt(i, 1);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = valueAt(i, 2);
  Descriptor da(a.data(), aShape), db(b.data(), bShape),
      dc(out.data(), {c.batch, c.m, c.n});
  spmd_matmul_f32(c.transA, c.transB, da.rank(), da.fields.data(), db.rank(),
                  db.fields.data(), dc.rank(), dc.fields.data());
  std::vector<double> want = reference(c, a, b);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(out[i], want[i], 1e-5 * (1 + std::abs(want[i])))
        << "case m=" << c.m << " n=" << c.n << " k=" << c.k << " at " << i;
}

TEST(Blas, MatmulF32MatchesTheTripleLoop) {
  for (const Case &c : kCases)
    expectMatmulF32(c);
}

/// `expect` on every case, the rank's GEMMs on 2 and then 3 threads.
void expectOnThreads(void (*expect)(const Case &)) {
  for (int threads : {2, 3}) {
    spmd_blas_set_threads(threads);
    for (const Case &c : kSplitCases)
      expect(c);
    for (const Case &c : kCases)
      expect(c);
  }
  spmd_blas_set_threads(1);
}

TEST(Blas, MatmulF32SplitOverThreadsMatchesTheTripleLoop) {
  expectOnThreads(expectMatmulF32);
}

void expectMatmulBf16(const Case &c) {
  auto aShape = operandShape(c, c.aBroadcast, c.m, c.k, c.transA);
  auto bShape = operandShape(c, c.bBroadcast, c.k, c.n, c.transB);
  // Values exact in bf16, so the only rounding is the product's.
  std::vector<float> a(aShape[0] * c.m * c.k), b(bShape[0] * c.k * c.n);
  std::vector<uint16_t> a16(a.size()), b16(b.size()), out(c.batch * c.m * c.n);
  for (size_t i = 0; i < a.size(); ++i)
    a16[i] = spmdc::rt::toBF16(a[i] = valueAt(i, 3));
  for (size_t i = 0; i < b.size(); ++i)
    b16[i] = spmdc::rt::toBF16(b[i] = valueAt(i, 4));
  Descriptor da(a16.data(), aShape), db(b16.data(), bShape),
      dc(out.data(), {c.batch, c.m, c.n});
  spmd_matmul_bf16(c.transA, c.transB, da.rank(), da.fields.data(), db.rank(),
                   db.fields.data(), dc.rank(), dc.fields.data());
  std::vector<double> want = reference(c, a, b);
  for (size_t i = 0; i < want.size(); ++i)
    // bf16 keeps 8 significant bits: half an ulp is 2^-9 relative.
    ASSERT_NEAR(spmdc::rt::fromBF16(out[i]), want[i],
                std::ldexp(std::abs(want[i]), -8) + 1e-6)
        << "case m=" << c.m << " n=" << c.n << " k=" << c.k << " at " << i;
}

TEST(Blas, MatmulBf16IsTheF32ProductRounded) {
  for (const Case &c : kCases)
    expectMatmulBf16(c);
}

TEST(Blas, MatmulBf16OnThreadsIsTheF32ProductRounded) {
  // Large bf16 matmuls run on oneDNN's OpenMP team of the rank's threads,
  // batches of paired matrices as one batched matmul.
  expectOnThreads(expectMatmulBf16);
}

#ifdef SPMDC_EXPECT_ONEDNN
TEST(Blas, OneDnnIsLoaded) {
  // The build found oneDNN: the runtime loaded it at its first GEMM, and the
  // matmuls above ran on it, not on CBLAS.
  float a = 2, b = 3, c = 0;
  Descriptor da(&a, {1, 1}), db(&b, {1, 1}), dc(&c, {1, 1});
  spmd_matmul_f32(0, 0, da.rank(), da.fields.data(), db.rank(),
                  db.fields.data(), dc.rank(), dc.fields.data());
  EXPECT_EQ(c, 6);
  void *loaded = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(loaded, nullptr);
  if (loaded)
    dlclose(loaded);
}
#endif

} // namespace
