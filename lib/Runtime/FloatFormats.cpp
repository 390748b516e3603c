//===- FloatFormats.cpp - IEEE binary formats from and to f64 -------------===//
//
// Rounding from the double straight into the narrow format: what
// safetensors files of f16, bf16 and f32 tensors need from the f64 values
// the tools compute in.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/FloatFormats.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

namespace spmdc::rt {

uint32_t encodeIEEE(double v, int expBits, int manBits) {
  uint32_t signBit = std::signbit(v) ? 1u << (expBits + manBits) : 0;
  uint32_t expMax = (1u << expBits) - 1;
  if (std::isnan(v))
    return signBit | expMax << manBits | 1u << (manBits - 1);
  double a = std::fabs(v);
  if (std::isinf(a))
    return signBit | expMax << manBits;
  if (a == 0)
    return signBit;
  int bias = (1 << (expBits - 1)) - 1;
  int minExp = 1 - bias;
  int e;
  std::frexp(a, &e);
  // a lies in [2^exp, 2^(exp+1)); subnormals share the smallest normal's ulp.
  int exp = std::max(e - 1, minExp);
  // a / ulp; exact, since scaling by a power of two keeps every bit of a.
  double scaled = std::ldexp(a, manBits - exp);
  double whole = std::floor(scaled);
  double frac = scaled - whole;
  uint64_t m = static_cast<uint64_t>(whole);
  if (frac > 0.5 || (frac == 0.5 && (m & 1)))
    ++m;
  uint64_t implicitOne = uint64_t(1) << manBits;
  if (m == 2 * implicitOne) { // Rounding carried into the next binade.
    m = implicitOne;
    ++exp;
  }
  if (m < implicitOne) // Subnormal (or rounded to zero).
    return signBit | static_cast<uint32_t>(m);
  int64_t expField = int64_t(exp) + bias;
  if (expField >= int64_t(expMax))
    return signBit | expMax << manBits;
  return signBit | static_cast<uint32_t>(expField) << manBits |
         static_cast<uint32_t>(m - implicitOne);
}

double decodeIEEE(uint32_t bits, int expBits, int manBits) {
  bool negative = (bits >> (expBits + manBits)) & 1;
  uint32_t expMax = (1u << expBits) - 1;
  uint32_t expField = (bits >> manBits) & expMax;
  uint32_t mant = bits & ((1u << manBits) - 1);
  int bias = (1 << (expBits - 1)) - 1;
  double r;
  if (expField == expMax)
    r = mant ? std::numeric_limits<double>::quiet_NaN()
             : std::numeric_limits<double>::infinity();
  else if (expField == 0)
    r = std::ldexp(double(mant), 1 - bias - manBits);
  else
    r = std::ldexp(double(mant | 1u << manBits),
                   int(expField) - bias - manBits);
  return negative ? -r : r;
}

uint32_t encodeF32(double v) {
  // The hardware conversion rounds to nearest even but is undefined for
  // finite values beyond the f32 range; those take the generic path.
  if (!(std::fabs(v) > FLT_MAX) || std::isinf(v)) {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bits;
  }
  return encodeIEEE(v, 8, 23);
}

} // namespace spmdc::rt
