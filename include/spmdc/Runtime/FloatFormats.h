//===- FloatFormats.h - f16, bf16 and f32 bits <-> values -------*- C++ -*-===//
//
// The runtime's one codec of floating-point formats. The bf16 <-> f32 pair
// is inline, for the hot paths (the BLAS GEMM, spmd-run's step arguments):
// round to nearest even, as the GPU's conversion does. The f64 paths
// (safetensors files) round once, straight from the double. No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNTIME_FLOATFORMATS_H
#define SPMDC_RUNTIME_FLOATFORMATS_H

#include <cstdint>
#include <cstring>

namespace spmdc::rt {

/// The f32 whose bit pattern is `bits`.
inline float f32FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// bf16 -> f32, exact: a bf16 is the top half of an f32.
inline float fromBF16(uint16_t bits) {
  return f32FromBits(uint32_t(bits) << 16);
}

/// f32 -> bf16, round to nearest even; every NaN becomes the quiet NaN
/// 0x7fc0.
inline uint16_t toBF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffff) > 0x7f800000)
    return 0x7fc0; // NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

/// Encodes `v` in an IEEE binary format with `expBits` exponent and
/// `manBits` mantissa bits (at most 31 bits in all), rounding to nearest
/// even directly from the double so that no intermediate rounding through
/// f32 can turn a value just off a tie into a tie.
uint32_t encodeIEEE(double v, int expBits, int manBits);
/// The value of `bits` in that format, exactly.
double decodeIEEE(uint32_t bits, int expBits, int manBits);

/// f64 -> f32 bits, round to nearest even (beyond f32's range: infinity).
uint32_t encodeF32(double v);
/// f64 -> f16 bits, rounded once.
inline uint16_t encodeF16(double v) {
  return static_cast<uint16_t>(encodeIEEE(v, 5, 10));
}
/// f16 bits -> value.
inline double decodeF16(uint16_t bits) { return decodeIEEE(bits, 5, 10); }
/// f64 -> bf16 bits, rounded once (a NaN keeps its sign).
inline uint16_t encodeBF16(double v) {
  return static_cast<uint16_t>(encodeIEEE(v, 8, 7));
}

} // namespace spmdc::rt

#endif // SPMDC_RUNTIME_FLOATFORMATS_H
