//===- PassOptions.h - the dist passes' option values -----------*- C++ -*-===//
//
// Plain C++ (no MLIR), so that spmdc's command line, built with exceptions
// and RTTI for CLI11, can name and parse the values too.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_DIALECT_DIST_TRANSFORMS_PASSOPTIONS_H
#define SPMDC_DIALECT_DIST_TRANSFORMS_PASSOPTIONS_H

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

namespace spmdc::dist {

/// How --dist-fsdp-group groups the parameters' all-gathers and their
/// gradients' reduce-scatters: `layer`, `tensor`, or a bucket size in MiB
/// (`25`, `0.5`).
struct FsdpGroup {
  enum class Policy {
    /// One collective per tensor.
    Tensor,
    /// One per transformer block (FSDP2's wrapping of each block), and one
    /// for the model's own tensors.
    Layer,
    /// One per bucket of consecutive tensors, in the order the forward
    /// first uses them, closed once its full bytes reach `bucketMiB`
    /// (FSDP1's size-based wrapping, DDP's bucket_cap_mb).
    Size
  };
  Policy policy = Policy::Layer;
  /// Policy::Size: the bucket size in MiB, positive.
  double bucketMiB = 0;

  static FsdpGroup tensor() { return {Policy::Tensor, 0}; }
  static FsdpGroup layer() { return {Policy::Layer, 0}; }
  static FsdpGroup size(double mib) { return {Policy::Size, mib}; }

  /// `layer`, `tensor` or a positive finite number of MiB, all of `text`;
  /// nullopt for anything else (`0`, `-1`, `12x`, `inf`).
  static std::optional<FsdpGroup> parse(std::string_view text) {
    if (text == "layer")
      return layer();
    if (text == "tensor")
      return tensor();
    double mib = 0;
    const char *end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, mib);
    if (text.empty() || ec != std::errc() || ptr != end ||
        !std::isfinite(mib) || mib <= 0)
      return std::nullopt;
    return size(mib);
  }

  /// The text parse() reads back.
  std::string str() const {
    if (policy == Policy::Tensor)
      return "tensor";
    if (policy == Policy::Layer)
      return "layer";
    char buffer[32];
    auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), bucketMiB);
    return std::string(buffer, ec == std::errc() ? ptr : buffer);
  }

  bool operator==(const FsdpGroup &other) const {
    return policy == other.policy && bucketMiB == other.bucketMiB;
  }
};

/// What --fsdp-group and the pass's `by` say of a value parse() refuses.
inline constexpr const char *kFsdpGroupExpected =
    "layer, tensor or a bucket size in MiB (a positive number such as 25 "
    "or 0.5)";

/// --bucket-mb's default: DDP's bucket_cap_mb.
inline constexpr double kDefaultBucketMiB = 25;

/// The host's size from which a reduce-scatter or all-gather keeps its own
/// collective rather than a rank-major bucket's or group's (alone-mb): a
/// copy of a MiB costs more than a message's latency.
inline constexpr double kDefaultAloneMiB = 1;

/// --bucket-mb's value: a non-negative finite number of MiB, all of
/// `text` (0 turns bucketing off); nullopt for anything else (`-1`, `12x`,
/// `inf`).
inline std::optional<double> parseBucketMiB(std::string_view text) {
  double mib = 0;
  const char *end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, mib);
  if (text.empty() || ec != std::errc() || ptr != end ||
      !std::isfinite(mib) || mib < 0)
    return std::nullopt;
  return mib;
}

} // namespace spmdc::dist

#endif // SPMDC_DIALECT_DIST_TRANSFORMS_PASSOPTIONS_H
