//===- InitTest.cpp - tests of the deterministic initialisation ABI -------===//
//
// Pins the hash to the formula documented in Init.h, and checks that a
// sharded fill equals the unsharded tensor and that each kind keeps its
// documented range.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/Init.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <vector>

namespace {

/// The documented formula, written out independently of Init.cpp.
uint64_t refMix(uint64_t s, uint64_t i) {
  uint64_t z = s * 0x9E3779B97F4A7C15ULL + i + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return z;
}

double refUniform(uint64_t seed, const char *name, uint64_t index) {
  uint64_t h = 14695981039346656037ULL;
  for (const char *p = name; *p; ++p)
    h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ULL;
  uint64_t key = refMix(seed ^ refMix(h, 0), 0);
  return static_cast<double>(refMix(key, index) >> 11) * 0x1.0p-53;
}

std::vector<double> fullTensor(uint64_t seed, const char *name,
                               const std::vector<int64_t> &shape, int32_t kind,
                               int64_t bound = 0) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<double> out(n);
  std::vector<int64_t> offsets(shape.size(), 0);
  spmd_init_block(seed, name, shape.data(), static_cast<int32_t>(shape.size()),
                  kind, bound, offsets.data(), shape.data(), out.data());
  return out;
}

} // namespace

TEST(Init, MatchesTheDocumentedFormula) {
  int64_t shape[] = {8, 16};
  for (uint64_t index : {0ULL, 1ULL, 77ULL, 127ULL}) {
    double u = refUniform(42, "fc1.weight", index);
    EXPECT_EQ(spmd_init_element(42, "fc1.weight", shape, 2, SPMD_INIT_PARAM, 0,
                                index),
              (2 * u - 1) / std::sqrt(16.0));
    EXPECT_EQ(
        spmd_init_element(42, "fc1.weight", shape, 2, SPMD_INIT_DATA, 0, index),
        2 * u - 1);
    EXPECT_EQ(spmd_init_element(42, "fc1.weight", shape, 2, SPMD_INIT_INDEX,
                                1000, index),
              std::floor(u * 1000));
  }
}

TEST(Init, SameInputsSameValueDifferentSeedOrNameDiffer) {
  int64_t shape[] = {4, 4};
  auto at = [&](uint64_t seed, const char *name, uint64_t i) {
    return spmd_init_element(seed, name, shape, 2, SPMD_INIT_DATA, 0, i);
  };
  for (uint64_t i = 0; i < 16; ++i) {
    EXPECT_EQ(at(1, "x", i), at(1, "x", i));
    EXPECT_NE(at(1, "x", i), at(2, "x", i));
    EXPECT_NE(at(1, "x", i), at(1, "y", i));
  }
  // Different elements differ too.
  std::set<double> distinct;
  for (uint64_t i = 0; i < 16; ++i)
    distinct.insert(at(1, "x", i));
  EXPECT_EQ(distinct.size(), 16u);
}

TEST(Init, BlockEqualsTheCorrespondingPartOfTheFullTensor) {
  const std::vector<int64_t> shape = {3, 4, 5};
  struct Block {
    std::vector<int64_t> offsets, sizes;
  };
  std::vector<Block> blocks = {{{0, 0, 0}, {3, 4, 5}},
                               {{1, 2, 1}, {2, 2, 3}},
                               {{0, 0, 4}, {3, 4, 1}},
                               {{2, 3, 4}, {1, 1, 1}}};
  for (int32_t kind :
       {SPMD_INIT_PARAM, SPMD_INIT_DATA, SPMD_INIT_INDEX, SPMD_INIT_ZERO}) {
    std::vector<double> full = fullTensor(7, "w", shape, kind, 50);
    // The full fill agrees with element-wise evaluation.
    for (uint64_t i = 0; i < full.size(); ++i)
      ASSERT_EQ(full[i],
                spmd_init_element(7, "w", shape.data(), 3, kind, 50, i));
    for (const Block &b : blocks) {
      std::vector<double> block(b.sizes[0] * b.sizes[1] * b.sizes[2], -99);
      spmd_init_block(7, "w", shape.data(), 3, kind, 50, b.offsets.data(),
                      b.sizes.data(), block.data());
      size_t k = 0;
      for (int64_t i = 0; i < b.sizes[0]; ++i)
        for (int64_t j = 0; j < b.sizes[1]; ++j)
          for (int64_t l = 0; l < b.sizes[2]; ++l, ++k)
            EXPECT_EQ(block[k],
                      full[((b.offsets[0] + i) * 4 + (b.offsets[1] + j)) * 5 +
                           (b.offsets[2] + l)])
                << "kind " << kind << " block element " << k;
    }
  }
}

TEST(Init, EmptyBlockWritesNothing) {
  int64_t shape[] = {4, 4}, offsets[] = {1, 0}, sizes[] = {0, 4};
  double sentinel = -99;
  spmd_init_block(1, "w", shape, 2, SPMD_INIT_DATA, 0, offsets, sizes,
                  &sentinel);
  EXPECT_EQ(sentinel, -99);
}

TEST(Init, ParamIsBoundedByOneOverSqrtFanIn) {
  std::vector<double> w = fullTensor(3, "fc.weight", {16, 64}, SPMD_INIT_PARAM);
  double bound = 1 / std::sqrt(64.0);
  bool sawPositive = false, sawNegative = false;
  for (double v : w) {
    EXPECT_LE(std::fabs(v), bound);
    sawPositive |= v > bound / 2;
    sawNegative |= v < -bound / 2;
  }
  EXPECT_TRUE(sawPositive);
  EXPECT_TRUE(sawNegative);
  // Rank 3: the fan-in is still the last dimension.
  for (double v : fullTensor(3, "conv", {2, 3, 25}, SPMD_INIT_PARAM))
    EXPECT_LE(std::fabs(v), 0.2);
}

TEST(Init, BiasIsZeroAndNormWeightIsOne) {
  for (double v : fullTensor(3, "fc1.bias", {10}, SPMD_INIT_PARAM))
    EXPECT_EQ(v, 0.0);
  for (double v : fullTensor(3, "ln.weight", {10}, SPMD_INIT_PARAM))
    EXPECT_EQ(v, 1.0);
  EXPECT_EQ(spmd_init_element(3, "scale", nullptr, 0, SPMD_INIT_PARAM, 0, 0),
            1.0);
  EXPECT_EQ(spmd_init_element(3, "bias", nullptr, 0, SPMD_INIT_PARAM, 0, 0),
            0.0);
  // The bias rule is for rank <= 1 only.
  std::vector<double> m = fullTensor(3, "pos_bias", {4, 4}, SPMD_INIT_PARAM);
  EXPECT_NE(m[0], 0.0);
}

TEST(Init, DataIsInMinusOneToOne) {
  std::vector<double> x = fullTensor(5, "x", {1000}, SPMD_INIT_DATA);
  double sum = 0;
  for (double v : x) {
    EXPECT_GE(v, -1.0);
    EXPECT_LT(v, 1.0);
    sum += v;
  }
  EXPECT_LT(std::fabs(sum / x.size()), 0.1);
}

TEST(Init, IndexValuesAreIntegersBelowTheBound) {
  std::vector<double> ids =
      fullTensor(9, "tokens", {4, 250}, SPMD_INIT_INDEX, 10);
  std::set<double> seen;
  for (double v : ids) {
    EXPECT_EQ(v, std::floor(v));
    EXPECT_GE(v, 0.0);
    EXPECT_LT(v, 10.0);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 10u);
  // A bound of 1 (or less) gives all zeros.
  for (double v : fullTensor(9, "tokens", {8}, SPMD_INIT_INDEX, 1))
    EXPECT_EQ(v, 0.0);
  for (double v : fullTensor(9, "tokens", {8}, SPMD_INIT_INDEX, 0))
    EXPECT_EQ(v, 0.0);
}

TEST(Init, ZeroAndUnknownKinds) {
  for (double v : fullTensor(9, "m", {3, 3}, SPMD_INIT_ZERO))
    EXPECT_EQ(v, 0.0);
  int64_t shape[] = {2};
  EXPECT_TRUE(std::isnan(spmd_init_element(9, "m", shape, 1, 17, 0, 0)));
}

TEST(Init, F32BlocksAreTheF64BlocksRounded) {
  // The runner builds f32 inputs straight into the step's buffers with
  // spmd_init_block_f32: each value must be the f64 one cast to float, for
  // every kind, in a block that starts inside the tensor.
  int64_t shape[] = {6, 10}, offsets[] = {2, 3}, sizes[] = {3, 5};
  struct {
    const char *name;
    int32_t kind;
    int64_t bound;
  } cases[] = {{"w", SPMD_INIT_PARAM, 0},
               {"ln.weight", SPMD_INIT_PARAM, 0},
               {"x", SPMD_INIT_DATA, 0},
               {"tokens", SPMD_INIT_INDEX, 7},
               {"exp_avg", SPMD_INIT_ZERO, 0}};
  for (const auto &c : cases) {
    std::vector<double> wide(15);
    std::vector<float> narrow(15, -1.0f);
    spmd_init_block(5, c.name, shape, 2, c.kind, c.bound, offsets, sizes,
                    wide.data());
    spmd_init_block_f32(5, c.name, shape, 2, c.kind, c.bound, offsets, sizes,
                        narrow.data());
    for (size_t i = 0; i < wide.size(); ++i)
      EXPECT_EQ(narrow[i], static_cast<float>(wide[i])) << c.name << " " << i;
  }
}
