//===- Limits.h - what a reader refuses before it allocates -----*- C++ -*-===//
//
// Every reader of outside input (graphs, shard specs, .pt2 archives,
// safetensors files, modules) checks a claimed size against what the file
// holds and against these limits before it allocates anything, and refuses
// the input with a message that names the limit (docs/reliability.md):
//
//   --max-tensor-bytes   bytes of one tensor or one archive entry (16 GiB)
//   JSON depth           nesting of any JSON document (256 levels)
//   element counts       must fit in int64, and their bytes too
//
// MLIR-free, like the rest of the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNTIME_LIMITS_H
#define SPMDC_RUNTIME_LIMITS_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace spmdc::rt {

/// The default of --max-tensor-bytes: 16 GiB, four times the largest tensor
/// of a 70B-parameter model's f32 vocabulary embedding.
constexpr uint64_t kDefaultMaxTensorBytes = uint64_t(16) << 30;
/// The deepest nesting a JSON document may have; the project's formats need
/// under 20 levels.
constexpr unsigned kMaxJsonDepth = 256;
/// The largest safetensors header, as the reference implementation allows.
constexpr uint64_t kMaxSafeTensorsHeaderBytes = 100'000'000;

/// The process's --max-tensor-bytes.
uint64_t maxTensorBytes();
void setMaxTensorBytes(uint64_t bytes);

/// Parses a byte count: digits with an optional K, M, G or T suffix (powers
/// of 1024, an optional trailing 'B' or 'iB'); nullopt if malformed or over
/// 2^63.
std::optional<uint64_t> parseByteCount(const std::string &text);
/// "16 GiB", "1.5 MiB", "12 bytes".
std::string formatBytes(uint64_t bytes);

/// "[2, 3]".
std::string formatShape(const std::vector<int64_t> &shape);

/// Checks a tensor of `shape` with `elementBytes`-byte elements: dims
/// non-negative, element count and byte size within int64, bytes within
/// maxTensorBytes(). Sets `bytes` and returns true; or returns false with
/// `error` saying which (e.g. "shape [1048576, 1048576] of 4-byte elements
/// is 4 TiB, more than --max-tensor-bytes (16 GiB)").
bool checkTensorSize(const std::vector<int64_t> &shape, uint64_t elementBytes,
                     uint64_t &bytes, std::string &error);

/// The byte offset of the first '[' or '{' of `text` nested deeper than
/// `maxDepth`, or npos if there is none (strings are skipped).
size_t findJsonDepthExcess(const char *text, size_t size,
                           unsigned maxDepth = kMaxJsonDepth);

} // namespace spmdc::rt

#endif // SPMDC_RUNTIME_LIMITS_H
