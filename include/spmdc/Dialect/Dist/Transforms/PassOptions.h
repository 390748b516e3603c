//===- PassOptions.h - the dist passes' enumerated options ------*- C++ -*-===//
//
// Plain C++ (no MLIR), so that spmdc's command line, built with exceptions
// and RTTI for CLI11, can name the values too.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_DIALECT_DIST_TRANSFORMS_PASSOPTIONS_H
#define SPMDC_DIALECT_DIST_TRANSFORMS_PASSOPTIONS_H

namespace spmdc::dist {

/// How --dist-fsdp-group groups the parameters' all-gathers and their
/// gradients' reduce-scatters.
enum class FsdpGroup {
  /// One collective per tensor.
  Tensor,
  /// One per transformer block (FSDP2's wrapping of each block), and one
  /// for the model's own tensors.
  Layer
};

} // namespace spmdc::dist

#endif // SPMDC_DIALECT_DIST_TRANSFORMS_PASSOPTIONS_H
