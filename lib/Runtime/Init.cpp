//===- Init.cpp - deterministic tensor initialisation ---------------------===//
//
// The hashing and the kind-specific mappings are spelled out in Init.h; keep
// the two in step: anything that reimplements them (the tests do) relies on
// the header.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/Init.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace {

uint64_t mix(uint64_t s, uint64_t i) {
  uint64_t z = s * 0x9E3779B97F4A7C15ULL + i + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return z;
}

uint64_t splitmix64(uint64_t x) { return mix(x, 0); }

double uniformBits(uint64_t s, uint64_t i) {
  return static_cast<double>(mix(s, i) >> 11) * 0x1.0p-53;
}

uint64_t fnv1a64(const char *s) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (; *s; ++s) {
    h ^= static_cast<unsigned char>(*s);
    h *= 0x100000001B3ULL;
  }
  return h;
}

bool endsWith(const char *s, const char *suffix) {
  size_t n = std::strlen(s), m = std::strlen(suffix);
  return n >= m && std::memcmp(s + n - m, suffix, m) == 0;
}

/// Everything about a tensor's initialisation that does not depend on the
/// element, computed once per call of spmd_init_block.
struct Generator {
  uint64_t key = 0;
  int32_t kind = 0;
  /// For PARAM of rank >= 2: sqrt(fan_in). For INDEX: the bound.
  double scale = 1;
  /// For kinds whose value is the same for every element: that value.
  bool isConstant = false;
  double constant = 0;

  Generator(uint64_t seed, const char *name, const int64_t *shape, int32_t rank,
            int32_t kind, int64_t indexBound)
      : kind(kind) {
    if (!name)
      name = "";
    key = splitmix64(seed ^ splitmix64(fnv1a64(name)));
    switch (kind) {
    case SPMD_INIT_PARAM:
      if (rank <= 1) {
        isConstant = true;
        constant = endsWith(name, "bias") ? 0.0 : 1.0;
      } else {
        // A zero fan-in means the tensor is empty; avoid dividing by 0 all
        // the same.
        int64_t fanIn = shape[rank - 1];
        scale = std::sqrt(static_cast<double>(fanIn > 0 ? fanIn : 1));
      }
      break;
    case SPMD_INIT_DATA:
      break;
    case SPMD_INIT_INDEX:
      scale = static_cast<double>(indexBound >= 1 ? indexBound : 1);
      break;
    case SPMD_INIT_ZERO:
      isConstant = true;
      constant = 0.0;
      break;
    default:
      isConstant = true;
      constant = std::numeric_limits<double>::quiet_NaN();
      break;
    }
  }

  double operator()(uint64_t index) const {
    if (isConstant)
      return constant;
    double u = uniformBits(key, index);
    switch (kind) {
    case SPMD_INIT_PARAM:
      return (2 * u - 1) / scale;
    case SPMD_INIT_DATA:
      return 2 * u - 1;
    case SPMD_INIT_INDEX: {
      // u < 1, but u * bound can round up to bound for huge bounds.
      double v = std::floor(u * scale);
      return v < scale ? v : scale - 1;
    }
    default:
      return std::numeric_limits<double>::quiet_NaN();
    }
  }
};

} // namespace

extern "C" double spmd_init_element(uint64_t seed, const char *name,
                                    const int64_t *shape, int32_t rank,
                                    int32_t kind, int64_t index_bound,
                                    uint64_t index) {
  return Generator(seed, name, shape, rank, kind, index_bound)(index);
}

namespace {

/// spmd_init_block into elements of type T (each value converted as a
/// static_cast of the double would be).
template <typename T>
void initBlock(uint64_t seed, const char *name, const int64_t *shape,
               int32_t rank, int32_t kind, int64_t index_bound,
               const int64_t *offsets, const int64_t *sizes, T *out) {
  Generator gen(seed, name, shape, rank, kind, index_bound);
  if (rank <= 0) {
    out[0] = static_cast<T>(gen(0));
    return;
  }
  int64_t count = 1;
  for (int32_t d = 0; d < rank; ++d) {
    if (sizes[d] <= 0)
      return;
    count *= sizes[d];
  }
  // Zeros and norm scales: one value, no hashing.
  if (gen.isConstant) {
    std::fill(out, out + count, static_cast<T>(gen.constant));
    return;
  }
  std::vector<int64_t> strides(rank, 1);
  for (int32_t d = rank - 1; d > 0; --d)
    strides[d - 1] = strides[d] * shape[d];

  // Odometer over the outer dims; the innermost dim is a contiguous run of
  // logical indices.
  std::vector<int64_t> idx(rank, 0);
  int64_t inner = sizes[rank - 1];
  T *o = out;
  while (true) {
    int64_t base = 0;
    for (int32_t d = 0; d < rank; ++d)
      base += (offsets[d] + idx[d]) * strides[d];
    for (int64_t j = 0; j < inner; ++j)
      *o++ = static_cast<T>(gen(static_cast<uint64_t>(base + j)));
    int32_t d = rank - 2;
    for (; d >= 0; --d) {
      if (++idx[d] < sizes[d])
        break;
      idx[d] = 0;
    }
    if (d < 0)
      break;
  }
}

} // namespace

extern "C" void spmd_init_block(uint64_t seed, const char *name,
                                const int64_t *shape, int32_t rank,
                                int32_t kind, int64_t index_bound,
                                const int64_t *offsets, const int64_t *sizes,
                                double *out) {
  initBlock(seed, name, shape, rank, kind, index_bound, offsets, sizes, out);
}

extern "C" void spmd_init_block_f32(uint64_t seed, const char *name,
                                    const int64_t *shape, int32_t rank,
                                    int32_t kind, int64_t index_bound,
                                    const int64_t *offsets,
                                    const int64_t *sizes, float *out) {
  initBlock(seed, name, shape, rank, kind, index_bound, offsets, sizes, out);
}
