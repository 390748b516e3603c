/*===- Init.h - deterministic tensor initialisation (C ABI) -------*- C -*-===*\
|*                                                                            *|
|* The values that parameters, synthetic data and indices start with, as a    *|
|* plain C ABI because compiled programs call it. Every value is a pure       *|
|* function of the logical element, never of the sharding, so a program run   *|
|* on any mesh starts from exactly the same tensors as the interpreter.       *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef SPMDC_RUNTIME_INIT_H
#define SPMDC_RUNTIME_INIT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What a tensor holds, which decides the distribution of its values.
enum spmd_init_kind {
  /// A trainable parameter. Rank >= 2: (2u - 1) / sqrt(shape[rank - 1]), so
  /// |v| < 1 / sqrt(fan_in) with fan_in the last dimension. Rank <= 1: 0 if
  /// the name ends in "bias", else 1 (norm scales).
  SPMD_INIT_PARAM = 0,
  /// Synthetic input data: 2u - 1, uniform in [-1, 1).
  SPMD_INIT_DATA = 1,
  /// Integer indices (token ids, labels): floor(u * index_bound), an integer
  /// in [0, index_bound). An index_bound below 1 is treated as 1.
  SPMD_INIT_INDEX = 2,
  /// All zeros (optimizer state, accumulators).
  SPMD_INIT_ZERO = 3
};

/// The value of logical element `index` (row-major linear index into the
/// logical `shape` of `rank` dims) of tensor `name`. It depends only on
/// (seed, name, logical shape, kind, index_bound, index), never on how the
/// tensor is sharded.
///
/// u is uniform in [0, 1) from a counter-based hash:
///   mix(s, i):  z = s * 0x9E3779B97F4A7C15 + i + 1 (mod 2^64);
///               z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
///               z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
///               z ^= z >> 31
///   splitmix64(x)      = mix(x, 0)
///   uniformBits(s, i)  = (mix(s, i) >> 11) * 2^-53
///   h   = FNV-1a 64 of the bytes of `name` (offset basis
///         0xCBF29CE484222325, prime 0x100000001B3)
///   key = splitmix64(seed ^ splitmix64(h))
///   u   = uniformBits(key, index)
/// and the value is u mapped as `kind` says (see spmd_init_kind). An unknown
/// kind gives NaN, so that a bad call cannot pass for real data. A null name
/// is treated as "".
double spmd_init_element(uint64_t seed, const char *name, const int64_t *shape,
                         int32_t rank, int32_t kind, int64_t index_bound,
                         uint64_t index);

/// Fills `out` with the rectangular block [offsets, offsets + sizes) of the
/// logical tensor (offsets and sizes have `rank` entries, within `shape`),
/// row-major over the block: out[k] is spmd_init_element of the logical
/// element at the k-th position of the block, so a rank filling its shard
/// gets exactly the values of that part of the unsharded tensor.
void spmd_init_block(uint64_t seed, const char *name, const int64_t *shape,
                     int32_t rank, int32_t kind, int64_t index_bound,
                     const int64_t *offsets, const int64_t *sizes, double *out);

/// spmd_init_block into f32: each value the f64 one rounded to f32. Builds
/// an f32 input straight in the buffer the step reads.
void spmd_init_block_f32(uint64_t seed, const char *name, const int64_t *shape,
                         int32_t rank, int32_t kind, int64_t index_bound,
                         const int64_t *offsets, const int64_t *sizes,
                         float *out);

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* SPMDC_RUNTIME_INIT_H */
