//===- KernelsTest.cpp - unit tests of the interpreter's reference kernels ===//
//
// Checks each kernel of Kernels.h against small hand-computed results, so the
// interpreter (the project's oracle) is itself checked against something.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Interpreter/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace spmdc::interp;

namespace {

/// Element-wise comparison of a tensor to an expected shape and data.
void expectTensor(const Tensor &t, const Shape &shape,
                  const std::vector<double> &data, double tol = 1e-12) {
  ASSERT_EQ(t.shape, shape);
  ASSERT_EQ(t.data.size(), data.size());
  for (size_t i = 0; i < data.size(); ++i)
    EXPECT_NEAR(t.data[i], data[i], tol) << "at element " << i;
}

/// A tensor holding 0, 1, 2, ... in row-major order.
Tensor arange(const Shape &shape) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data[i] = static_cast<double>(i);
  return t;
}

const double inf = std::numeric_limits<double>::infinity();

} // namespace

TEST(KernelsTest, TensorAndShapes) {
  Tensor scalar(Shape{}, 2.5);
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.data[0], 2.5);
  Tensor t({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(numElements({}), 1);
  EXPECT_EQ(numElements({2, 0, 3}), 0);
  EXPECT_EQ(stridesOf({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(broadcastShapes({3, 1}, {4}), (Shape{3, 4}));
  EXPECT_EQ(broadcastShapes({2, 1, 3}, {5, 1}), (Shape{2, 5, 3}));
  EXPECT_EQ(broadcastShapes({}, {2, 2}), (Shape{2, 2}));
  EXPECT_EQ(broadcastShapes({1, 0}, {3, 1}), (Shape{3, 0}));
}

TEST(KernelsTest, MapAndBroadcastingZip) {
  Tensor x({3}, {1, -2, 3});
  expectTensor(map(x, [](double v) { return v * v; }), {3}, {1, 4, 9});

  Tensor a({2, 1}, {1, 2});
  Tensor b({3}, {10, 20, 30});
  expectTensor(zip(a, b, [](double p, double q) { return p + q; }), {2, 3},
               {11, 21, 31, 12, 22, 32});
  // Operand order matters for a non-commutative fn.
  expectTensor(zip(b, a, [](double p, double q) { return p - q; }), {2, 3},
               {9, 19, 29, 8, 18, 28});
  Tensor s(Shape{}, 2.0);
  expectTensor(zip(a, s, [](double p, double q) { return p * q; }), {2, 1},
               {2, 4});
}

TEST(KernelsTest, SelectAndBroadcastTo) {
  Tensor cond({2, 1}, {1, 0});
  Tensor onTrue({3}, {1, 2, 3});
  Tensor onFalse(Shape{}, -1.0);
  expectTensor(select(cond, onTrue, onFalse), {2, 3}, {1, 2, 3, -1, -1, -1});

  Tensor x({3, 1}, {1, 2, 3});
  expectTensor(broadcastTo(x, {2, 3, 2}), {2, 3, 2},
               {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
}

TEST(KernelsTest, ReduceWithAndWithoutKeepDim) {
  Tensor x({2, 3}, {1, 2, 3, 4, 5, 6});
  expectTensor(reduce(x, {1}, true, ReduceKind::Sum), {2, 1}, {6, 15});
  expectTensor(reduce(x, {1}, false, ReduceKind::Sum), {2}, {6, 15});
  expectTensor(reduce(x, {0}, false, ReduceKind::Sum), {3}, {5, 7, 9});
  expectTensor(reduce(x, {0}, true, ReduceKind::Max), {1, 3}, {4, 5, 6});
  expectTensor(reduce(x, {1}, false, ReduceKind::Mean), {2}, {2, 5});
  // Everything without keepdim is rank 0; with keepdim it is [1, 1].
  expectTensor(reduce(x, {0, 1}, false, ReduceKind::Max), {}, {6});
  expectTensor(reduce(x, {0, 1}, true, ReduceKind::Mean), {1, 1}, {3.5});
  // Non-adjacent dims.
  expectTensor(reduce(arange({2, 2, 2}), {0, 2}, false, ReduceKind::Sum), {2},
               {10, 18});
  // No dims is the identity.
  expectTensor(reduce(x, {}, false, ReduceKind::Sum), {2, 3},
               {1, 2, 3, 4, 5, 6});
}

TEST(KernelsTest, ReduceMaxOfEmptyIsNegativeInfinity) {
  Tensor x(Shape{2, 0});
  Tensor r = reduce(x, {1}, false, ReduceKind::Max);
  ASSERT_EQ(r.shape, (Shape{2}));
  EXPECT_EQ(r.data[0], -inf);
  EXPECT_EQ(r.data[1], -inf);
  Tensor s = reduce(x, {1}, false, ReduceKind::Sum);
  expectTensor(s, {2}, {0, 0});
}

TEST(KernelsTest, MatmulWithBroadcastBatch) {
  // Batched [2,2,2] times an unbatched [2,2].
  Tensor a({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0});
  Tensor b({2, 2}, {5, 6, 7, 8});
  expectTensor(matmul(a, b), {2, 2, 2}, {19, 22, 43, 50, 7, 8, 5, 6});

  // Different ranks, both sides broadcast: [1,2,3] x [2,1,3,1] -> [2,1,2,1].
  Tensor c({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor d({2, 1, 3, 1}, {1, 1, 1, 1, 0, -1});
  expectTensor(matmul(c, d), {2, 1, 2, 1}, {6, 15, -2, -2});

  // Non-square: [2,3] x [3,1].
  Tensor e({3, 2}, {1, 0, 0, 1, 1, 1});
  expectTensor(matmul(Tensor({1, 3}, {1, 2, 3}), e), {1, 2}, {4, 5});
}

TEST(KernelsTest, MatmulLargeIsFastEnoughAndCorrect) {
  // Ones times ones: every entry is the contraction size.
  Tensor a(Shape{4, 64, 256}, 1.0);
  Tensor b(Shape{256, 512}, 1.0);
  Tensor c = matmul(a, b);
  ASSERT_EQ(c.shape, (Shape{4, 64, 512}));
  for (double v : c.data)
    ASSERT_EQ(v, 256.0);
}

TEST(KernelsTest, TransposeAndReshape) {
  Tensor x({2, 3}, {1, 2, 3, 4, 5, 6});
  expectTensor(transpose(x, {1, 0}), {3, 2}, {1, 4, 2, 5, 3, 6});

  // out[a][b][c] = x[b][c][a] for perm {2, 0, 1}.
  Tensor y = arange({2, 3, 4});
  Tensor t = transpose(y, {2, 0, 1});
  ASSERT_EQ(t.shape, (Shape{4, 2, 3}));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k)
        EXPECT_EQ(t.data[(i * 2 + j) * 3 + k], j * 12 + k * 4 + i);

  expectTensor(reshape(x, {3, 2}), {3, 2}, {1, 2, 3, 4, 5, 6});
  expectTensor(reshape(Tensor({1}, {7}), {}), {}, {7});
}

TEST(KernelsTest, SliceWithStep) {
  Tensor x = arange({2, 5});
  expectTensor(slice(x, 1, 0, 5, 2), {2, 3}, {0, 2, 4, 5, 7, 9});
  expectTensor(slice(x, 1, 1, 4, 2), {2, 2}, {1, 3, 6, 8});
  expectTensor(slice(x, 0, 1, 2, 1), {1, 5}, {5, 6, 7, 8, 9});
  // Python-style: negative start counts from the end, end is clamped.
  expectTensor(slice(x, 1, -2, 100, 1), {2, 2}, {3, 4, 8, 9});
  expectTensor(slice(x, 1, 3, 3, 1), {2, 0}, {});
}

TEST(KernelsTest, Concat) {
  Tensor a({2, 1}, {1, 2});
  Tensor b({2, 2}, {3, 4, 5, 6});
  expectTensor(concat({a, b}, 1), {2, 3}, {1, 3, 4, 2, 5, 6});
  Tensor c({1, 2}, {7, 8});
  expectTensor(concat({c, b, c}, 0), {4, 2}, {7, 8, 3, 4, 5, 6, 7, 8});
}

TEST(KernelsTest, EmbeddingAndBackward) {
  Tensor weight({3, 2}, {0, 1, 10, 11, 20, 21});
  Tensor indices({2, 2}, {2, 0, 2, 1});
  expectTensor(embedding(weight, indices), {2, 2, 2},
               {20, 21, 0, 1, 20, 21, 10, 11});
  expectTensor(embedding(weight, Tensor(Shape{}, 1.0)), {2}, {10, 11});

  // Row 2 is used twice, so its gradient accumulates; row 3 is never used.
  Tensor grad = arange({2, 2, 2});
  expectTensor(embeddingBackward(grad, indices, 4), {4, 2},
               {2, 3, 6, 7, 4, 6, 0, 0});
}

TEST(KernelsTest, GatherAndScatterAdd) {
  // The torch.gather documentation example.
  Tensor t({2, 2}, {1, 2, 3, 4});
  Tensor index({2, 2}, {0, 0, 1, 0});
  Tensor g = gather(t, index, 1);
  expectTensor(g, {2, 2}, {1, 1, 4, 3});
  // An index smaller than the input along a non-gathered dim.
  expectTensor(gather(t, Tensor({1, 2}, {1, 0}), 0), {1, 2}, {3, 2});

  expectTensor(scatterAdd(index, g, 1, {2, 2}), {2, 2}, {2, 0, 3, 4});
  expectTensor(scatterAdd(Tensor({1, 2}, {1, 1}), Tensor({1, 2}, {5, 6}), 0,
                          {3, 2}),
               {3, 2}, {0, 0, 5, 6, 0, 0});

  // Adjointness: <gather(x, i), s> == <x, scatterAdd(i, s)>.
  Tensor x = arange({3, 4});
  Tensor idx({3, 2}, {3, 0, 1, 1, 2, 3});
  Tensor s({3, 2}, {1, -2, 3, 0.5, -1, 2});
  Tensor gx = gather(x, idx, 1);
  Tensor sx = scatterAdd(idx, s, 1, x.shape);
  double lhs = 0, rhs = 0;
  for (int64_t i = 0; i < gx.numel(); ++i)
    lhs += gx.data[i] * s.data[i];
  for (int64_t i = 0; i < x.numel(); ++i)
    rhs += x.data[i] * sx.data[i];
  EXPECT_DOUBLE_EQ(lhs, rhs);
}

TEST(KernelsTest, Iota) {
  expectTensor(iota({2, 3}, 0), {2, 3}, {0, 0, 0, 1, 1, 1});
  expectTensor(iota({2, 3}, 1), {2, 3}, {0, 1, 2, 0, 1, 2});
  expectTensor(iota({2, 2, 2}, 1), {2, 2, 2}, {0, 0, 1, 1, 0, 0, 1, 1});
}

TEST(KernelsTest, UniformBitsAndRandUniform) {
  double u = uniformBits(0, 0);
  EXPECT_EQ(u, uniformBits(0, 0));
  EXPECT_GE(u, 0.0);
  EXPECT_LT(u, 1.0);
  // Pinned values of the exact splitmix64 recipe.
  EXPECT_DOUBLE_EQ(u, 0.3381666012719897);
  EXPECT_DOUBLE_EQ(uniformBits(0, 1), 0.8586764687735633);
  EXPECT_DOUBLE_EQ(uniformBits(42, 3), 0.9782710532057587);

  Tensor r = randUniform({2, 3}, 42);
  ASSERT_EQ(r.shape, (Shape{2, 3}));
  for (int64_t i = 0; i < r.numel(); ++i) {
    EXPECT_EQ(r.data[i], uniformBits(42, i));
    EXPECT_GE(r.data[i], 0.0);
    EXPECT_LT(r.data[i], 1.0);
  }
}

TEST(KernelsTest, Dropout) {
  Tensor x = arange({4, 8});
  Tensor same = dropout(x, 0.0, 7);
  EXPECT_EQ(same.shape, x.shape);
  EXPECT_EQ(same.data, x.data);

  expectTensor(dropout(x, 1.0, 7), x.shape, std::vector<double>(32, 0.0));

  Tensor half = dropout(x, 0.5, 7);
  Tensor u = randUniform(x.shape, 7);
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_EQ(half.data[i], u.data[i] >= 0.5 ? 2 * x.data[i] : 0.0);
}

TEST(KernelsTest, Softmax) {
  Tensor x({2, 3}, {1, 2, 3, 1000, 1001, 1002});
  Tensor s = softmax(x, 1);
  std::vector<double> row = {0.09003057317038046, 0.24472847105479767,
                             0.6652409557748219};
  expectTensor(s, {2, 3},
               {row[0], row[1], row[2], row[0], row[1], row[2]}, 1e-15);
  for (int64_t r = 0; r < 2; ++r)
    EXPECT_NEAR(s.data[r * 3] + s.data[r * 3 + 1] + s.data[r * 3 + 2], 1.0,
                1e-15);

  // Along a non-innermost dim, each column sums to 1.
  Tensor c = softmax(transpose(x, {1, 0}), 0);
  ASSERT_EQ(c.shape, (Shape{3, 2}));
  for (int64_t col = 0; col < 2; ++col) {
    EXPECT_NEAR(c.data[col] + c.data[2 + col] + c.data[4 + col], 1.0, 1e-15);
    EXPECT_NEAR(c.data[4 + col], row[2], 1e-15);
  }
}

TEST(KernelsTest, LogSoftmaxOfLargeInputsStaysFinite) {
  Tensor l = logSoftmax(Tensor({2}, {1000, 1001}), 0);
  ASSERT_TRUE(std::isfinite(l.data[0]) && std::isfinite(l.data[1]));
  expectTensor(l, {2}, {-1.3132616875182228, -0.3132616875182228}, 1e-15);
}

TEST(KernelsTest, LayerNorm) {
  Tensor x({1, 4}, {1, 2, 3, 4});
  Tensor w({4}, {1, 2, 3, 4});
  Tensor b({4}, 0.5);
  expectTensor(layerNorm(x, w, b, 1e-5), {1, 4},
               {-0.8416354199689269, -0.394423613312618, 1.8416354199689269,
                5.8665416798757075});

  // Normalizing over two trailing dims: each [2,2] block is one group.
  Tensor y({2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
  Tensor n = layerNorm(y, Tensor({2, 2}, 1.0), Tensor({2, 2}, 0.0), 0.0);
  double a = 1.3416407864998738, c = 0.4472135954999579;
  expectTensor(n, {2, 2, 2}, {-a, -c, c, a, -a, -c, c, a});
}

TEST(KernelsTest, RmsNorm) {
  Tensor x({2, 2}, {3, 4, 1, 1});
  Tensor w({2}, {1, 2});
  expectTensor(rmsNorm(x, w, 0.0), {2, 2},
               {0.848528137423857, 2.262741699796952, 1, 2});
  // eps enters under the square root.
  expectTensor(rmsNorm(Tensor({1}, {1}), Tensor({1}, {1}), 3.0), {1}, {0.5});
}

TEST(KernelsTest, GeluBothFormsAndSilu) {
  Tensor x({3}, {1, -1, 0});
  expectTensor(gelu(x, false), {3},
               {0.8413447460685429, -0.15865525393145707, 0}, 1e-15);
  expectTensor(gelu(x, true), {3},
               {0.8411919906082768, -0.15880800939172324, 0}, 1e-15);
  expectTensor(silu(x), {3}, {0.7310585786300049, -0.2689414213699951, 0},
               1e-15);
}

TEST(KernelsTest, CrossEntropy) {
  // Row 0: logsumexp(1,2,3) - 3; row 1: logsumexp(1,1,1) - 1 = log 3.
  Tensor logits({2, 3}, {1, 2, 3, 1, 1, 1});
  Tensor labels({2}, {2, 0});
  expectTensor(crossEntropy(logits, labels), {}, {0.753109126556245}, 1e-15);
  // One position: rank-1 logits with a rank-0 label.
  expectTensor(crossEntropy(Tensor({3}, {1, 2, 3}), Tensor(Shape{}, 2.0)), {},
               {0.40760596444438013}, 1e-15);
}

TEST(KernelsTest, AttentionByHand) {
  // Scores {0, ln 3} -> probabilities {1/4, 3/4}.
  Tensor q({1, 1, 1, 1}, {1});
  Tensor k({1, 1, 2, 1}, {0, std::log(3.0)});
  Tensor v({1, 1, 2, 2}, {4, 0, 0, 8});
  expectTensor(scaledDotProductAttention(q, k, v, false, 1.0), {1, 1, 1, 2},
               {1, 6}, 1e-14);
  // Default scale 1/sqrt(D) with D = 4 gives the same scores.
  double h = std::log(3.0) / 2;
  Tensor q4({1, 1, 1, 4}, 1.0);
  Tensor k4({1, 1, 2, 4}, {0, 0, 0, 0, h, h, h, h});
  expectTensor(scaledDotProductAttention(q4, k4, v, false, std::nullopt),
               {1, 1, 1, 2}, {1, 6}, 1e-14);
}

TEST(KernelsTest, AttentionCausal) {
  Tensor q({1, 1, 3, 2}, {0.3, -1.2, 2.0, 0.7, -0.4, 1.1});
  Tensor k({1, 1, 3, 2}, {1.5, 0.2, -0.3, 0.9, 0.8, -1.7});
  Tensor v({1, 1, 3, 2}, {0.123, -4.56, 7.89, 0.5, -2.0, 3.25});
  Tensor o = scaledDotProductAttention(q, k, v, true, std::nullopt);
  ASSERT_EQ(o.shape, (Shape{1, 1, 3, 2}));
  // The first query sees only key 0, so it returns v[0] exactly.
  EXPECT_EQ(o.data[0], v.data[0]);
  EXPECT_EQ(o.data[1], v.data[1]);
  // The second query equals unmasked attention over the first two keys.
  Tensor o2 = scaledDotProductAttention(
      slice(q, 2, 1, 2, 1), slice(k, 2, 0, 2, 1), slice(v, 2, 0, 2, 1), false,
      std::nullopt);
  EXPECT_NEAR(o.data[2], o2.data[0], 1e-14);
  EXPECT_NEAR(o.data[3], o2.data[1], 1e-14);
  // The last query sees every key.
  Tensor full = scaledDotProductAttention(q, k, v, false, std::nullopt);
  EXPECT_NEAR(o.data[4], full.data[4], 1e-14);
  EXPECT_NEAR(o.data[5], full.data[5], 1e-14);
}

TEST(KernelsTest, AttentionGroupedQuery) {
  // H = 2 query heads share Hkv = 1 kv head.
  Tensor q({1, 2, 2, 2}, {0.3, -1.2, 2.0, 0.7, -0.4, 1.1, 0.9, 0.0});
  Tensor k({1, 1, 2, 2}, {1.5, 0.2, -0.3, 0.9});
  Tensor v({1, 1, 2, 3}, {1, 2, 3, -4, 5, 0.5});
  Tensor o = scaledDotProductAttention(q, k, v, false, std::nullopt);
  ASSERT_EQ(o.shape, (Shape{1, 2, 2, 3}));
  // Same as duplicating the kv head for both query heads.
  Tensor k2 = concat({k, k}, 1), v2 = concat({v, v}, 1);
  Tensor ref = scaledDotProductAttention(q, k2, v2, false, std::nullopt);
  expectTensor(o, ref.shape, ref.data, 0);
  // And each head alone against the single kv head.
  for (int64_t h = 0; h < 2; ++h) {
    Tensor oh = scaledDotProductAttention(slice(q, 1, h, h + 1, 1), k, v,
                                          false, std::nullopt);
    for (int64_t i = 0; i < oh.numel(); ++i)
      EXPECT_EQ(o.data[h * 6 + i], oh.data[i]);
  }
}
