//===- BFloat16.h - bf16 bit patterns <-> float -----------------*- C++ -*-===//
//
// The conversions the runtime's bf16 paths share (the BLAS GEMM, spmd-run's
// step arguments): round to nearest even, as the GPU's conversion does.
// No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNTIME_BFLOAT16_H
#define SPMDC_RUNTIME_BFLOAT16_H

#include <cstdint>
#include <cstring>

namespace spmdc::rt {

inline float fromBF16(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

inline uint16_t toBF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffff) > 0x7f800000)
    return 0x7fc0; // NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

} // namespace spmdc::rt

#endif // SPMDC_RUNTIME_BFLOAT16_H
