//===- SafeTensors.h - safetensors reading and writing ----------*- C++ -*-===//
//
// A small, MLIR-free reader and writer for the safetensors format, shared by
// the tools and the runtime of compiled programs. Values cross the API as
// doubles whatever the stored dtype, and a reader can fetch a rectangular
// block of a tensor so that each rank reads only the bytes of its own shard.
//
// File layout: an 8-byte little-endian u64 N, then N bytes of JSON header
//   {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
//    ..., "__metadata__": {"key": "value", ...}}   (metadata optional)
// then the data section, raw little-endian and row-major; data_offsets are
// relative to the start of the data section.
//
// No function throws: every malformed file or bad argument is reported as an
// error string that names the file and, where there is one, the tensor.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNTIME_SAFETENSORS_H
#define SPMDC_RUNTIME_SAFETENSORS_H

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace spmdc::rt {

struct StoredTensor;

/// The element types this implementation reads and writes.
enum class DType { F64, F32, F16, BF16, I64, I32, Bool };

/// Bytes per element of `dtype`.
size_t dtypeSize(DType dtype);
/// The safetensors spelling of `dtype`: "F64", "F32", "F16", "BF16", "I64",
/// "I32" or "BOOL".
const char *dtypeName(DType dtype);
/// The inverse of dtypeName; std::nullopt for any other string (including
/// safetensors dtypes this implementation does not support, such as "U8").
std::optional<DType> parseDType(const std::string &name);

/// Converts `value` to `dtype` and back, exactly as writeSafeTensors stores
/// it: f32/f16/bf16 round to nearest, ties to even, directly from the double
/// (no double rounding through f32), overflowing to infinity; integers
/// truncate toward zero; Bool is `value != 0`. Integer conversions of NaN or
/// out-of-range values are the caller's error (writeSafeTensors rejects them);
/// here they give 0.
double roundToDType(double value, DType dtype);

/// Decodes one little-endian element of `dtype` stored at `p`.
double decodeDType(const unsigned char *p, DType dtype);

/// One tensor entry of a safetensors header.
struct TensorInfo {
  std::string name;
  DType dtype;
  /// Logical shape; empty for a scalar.
  std::vector<int64_t> shape;
  /// Byte range [dataBegin, dataEnd) relative to the data section.
  uint64_t dataBegin = 0, dataEnd = 0;

  /// Number of elements (1 for a scalar).
  int64_t numElements() const;
};

/// A validated safetensors file, open for reading. Reads seek in the file on
/// demand; nothing but the header is held in memory. Not thread-safe: give
/// each thread its own reader.
class SafeTensorsReader {
public:
  /// Opens and validates `path`: the header must be a JSON object (at most
  /// 100 MB, nested at most kMaxJsonDepth levels) whose entries have a known
  /// dtype, a non-negative shape of at most --max-tensor-bytes (Limits.h)
  /// and data_offsets that hold exactly shape * dtypeSize bytes inside the
  /// file. On failure returns
  /// null and sets `error` (prefixed with the path).
  /// With `sectionStart`/`sectionLength`, the safetensors data is that byte
  /// range of the file (a module's weights section), offsets relative to it.
  static std::unique_ptr<SafeTensorsReader>
  open(const std::string &path, std::string &error, uint64_t sectionStart = 0,
       std::optional<uint64_t> sectionLength = std::nullopt);

  const std::string &path() const { return filePath; }
  /// All tensors, sorted by name.
  const std::vector<TensorInfo> &tensors() const { return infos; }
  /// The "__metadata__" map; empty if the file has none.
  const std::map<std::string, std::string> &metadata() const { return meta; }
  /// The tensor called `name`, or null.
  const TensorInfo *find(const std::string &name) const;

  /// Where `info`'s bytes lie in the file, for readStoredBlockF32
  /// (StoredTensor.h).
  StoredTensor stored(const TensorInfo &info) const;

  /// Reads the whole of tensor `name`, row-major, converted to double
  /// (I64 values beyond 2^53 lose precision; Bool reads as 0 or 1).
  bool readAsDouble(const std::string &name, std::vector<double> &out,
                    std::string &error);
  /// Reads the rectangular block [offsets, offsets + sizes) of tensor `name`
  /// (one entry per dimension, within the logical shape) into `out`,
  /// row-major over the block. Only the bytes of the block are read, one
  /// seek per contiguous run, so a rank reading its shard touches nothing
  /// else.
  bool readSliceAsDouble(const std::string &name,
                         const std::vector<int64_t> &offsets,
                         const std::vector<int64_t> &sizes,
                         std::vector<double> &out, std::string &error);

private:
  SafeTensorsReader() = default;
  /// Reads `count` elements of `info` starting at element `firstElement`,
  /// appending them to `out`.
  bool readRun(const TensorInfo &info, uint64_t firstElement, uint64_t count,
               std::vector<double> &out, std::string &error);

  std::string filePath;
  std::ifstream file;
  /// Absolute file offset of the data section (section start + 8 + header
  /// length).
  uint64_t dataStart = 0;
  std::vector<TensorInfo> infos;
  std::map<std::string, std::string> meta;
  /// Scratch buffer for raw bytes, kept to avoid reallocating per run.
  std::vector<unsigned char> buffer;
};

/// A tensor to write: values are row-major doubles converted to `dtype`.
struct NamedTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<double> values;
};

/// Writes `tensors` (and optional `metadata`) to `path` in safetensors
/// format. Values are converted as by roundToDType. The header's keys are
/// sorted and it is padded with spaces to a multiple of 8 bytes, as the
/// reference implementation does, so the data section is 8-byte aligned;
/// tensor data is laid out widest dtype first, then by name, so every tensor
/// is naturally aligned. Fails (setting `error`) on duplicate or reserved
/// names, negative dimensions, a value count that does not match the shape,
/// integer values that are NaN or out of range, or an I/O error. The file is
/// written beside `path` and renamed over it when whole (AtomicFile.h), so a
/// failure leaves a previous file intact.
bool writeSafeTensors(const std::string &path,
                      const std::vector<NamedTensor> &tensors,
                      std::string &error,
                      const std::map<std::string, std::string> &metadata = {});

} // namespace spmdc::rt

#endif // SPMDC_RUNTIME_SAFETENSORS_H
