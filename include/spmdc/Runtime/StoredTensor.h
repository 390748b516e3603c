//===- StoredTensor.h - tensors read in place from another file -*- C++ -*-===//
//
// A tensor whose bytes sit inside some file at a known place (a weight in a
// torch.export archive, whose zip entries are stored uncompressed): a byte
// range of storage and a strided view of it, as PyTorch describes a tensor.
// Readers take a block of it (a rank's shard) or stream all of it, row-major,
// into a safetensors file without holding more than one tensor in memory.
// MLIR-free, as the rest of the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNTIME_STOREDTENSOR_H
#define SPMDC_RUNTIME_STOREDTENSOR_H

#include "spmdc/Runtime/SafeTensors.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace spmdc::rt {

/// Where a tensor's values live: storage of `dataBytes` bytes at byte
/// `dataOffset` of `path`; element (i0, i1, ...) is storage element
/// `storageOffset + sum(i_d * strides[d])`.
struct StoredTensor {
  std::string path;
  uint64_t dataOffset = 0, dataBytes = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape, strides;
  int64_t storageOffset = 0;

  int64_t numElements() const;
  /// Bytes of storage the view reaches (0 for an empty tensor).
  uint64_t bytesNeeded() const;
  /// True if the view is the storage itself, row-major from its start.
  bool isRowMajor() const;
};

/// Reads the block [offsets, offsets + sizes) of `tensor` as doubles,
/// row-major over the block, touching only the bytes of the block (one read
/// per innermost run).
bool readStoredBlock(const StoredTensor &tensor,
                     const std::vector<int64_t> &offsets,
                     const std::vector<int64_t> &sizes,
                     std::vector<double> &out, std::string &error);

/// Reads the same block into `out` as f32: each value readStoredBlock gives,
/// converted to f32 (an f32 tensor's bytes are copied). Runs of the block
/// that are contiguous in storage are read whole, on up to `threads` of
/// the rank's threads (ParallelFor.h).
bool readStoredBlockF32(const StoredTensor &tensor,
                        const std::vector<int64_t> &offsets,
                        const std::vector<int64_t> &sizes, float *out,
                        int threads, std::string &error);

/// Receives bytes in order; false stops the copy.
using ByteSink = std::function<bool(const char *data, size_t size)>;

/// A safetensors file of stored tensors, planned before it is written: the
/// header is known up front, so the file's size is too.
struct SafeTensorsPlan {
  /// The 8-byte length and the JSON header, padded to a multiple of 8.
  std::string head;
  /// The tensors in data order (by name).
  std::vector<std::pair<std::string, StoredTensor>> tensors;
  /// head.size() plus every tensor's bytes.
  uint64_t totalBytes = 0;
};

/// Plans a safetensors file holding `tensors` (names unique) row-major.
SafeTensorsPlan
planSafeTensors(std::vector<std::pair<std::string, StoredTensor>> tensors);

/// Writes the planned file to `sink`, copying each tensor's bytes straight
/// from its file in chunks (a strided view is gathered one tensor at a
/// time); exactly `plan.totalBytes` bytes on success.
bool writeSafeTensors(const SafeTensorsPlan &plan, const ByteSink &sink,
                      std::string &error);

} // namespace spmdc::rt

#endif // SPMDC_RUNTIME_STOREDTENSOR_H
