//===- StoredTensor.cpp - tensors read in place from another file ---------===//

#include "spmdc/Runtime/StoredTensor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>

namespace spmdc::rt {

int64_t StoredTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

uint64_t StoredTensor::bytesNeeded() const {
  if (numElements() == 0)
    return 0;
  int64_t last = storageOffset;
  for (size_t d = 0; d < shape.size(); ++d)
    last += (shape[d] - 1) * strides[d];
  return static_cast<uint64_t>(last + 1) * dtypeSize(dtype);
}

bool StoredTensor::isRowMajor() const {
  if (storageOffset != 0)
    return false;
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && strides[d] != expected)
      return false;
    expected *= shape[d];
  }
  return true;
}

namespace {

/// An open stored tensor, checked against its file.
class StoredReader {
public:
  bool open(const StoredTensor &t, std::string &error) {
    tensor = &t;
    where = t.path + ": a tensor at byte " + std::to_string(t.dataOffset);
    if (t.strides.size() != t.shape.size()) {
      error = where + " has " + std::to_string(t.strides.size()) +
              " strides for " + std::to_string(t.shape.size()) + " dims";
      return false;
    }
    if (t.bytesNeeded() > t.dataBytes) {
      error = where + " needs " + std::to_string(t.bytesNeeded()) +
              " bytes but its storage has " + std::to_string(t.dataBytes);
      return false;
    }
    file.open(t.path, std::ios::binary);
    if (!file) {
      error = t.path + ": cannot open file (the weights are read from it)";
      return false;
    }
    file.seekg(0, std::ios::end);
    uint64_t size = static_cast<uint64_t>(file.tellg());
    if (size < t.dataOffset + t.dataBytes) {
      error = where + ": the file is " + std::to_string(size) +
              " bytes but the tensor's storage ends at byte " +
              std::to_string(t.dataOffset + t.dataBytes) +
              " (was it changed or truncated?)";
      return false;
    }
    return true;
  }

  /// Reads `count` storage elements from storage element `first`.
  bool read(int64_t first, int64_t count, std::vector<unsigned char> &bytes,
            std::string &error) {
    size_t elem = dtypeSize(tensor->dtype);
    bytes.resize(static_cast<size_t>(count) * elem);
    file.clear();
    file.seekg(static_cast<std::streamoff>(tensor->dataOffset + first * elem));
    if (!file.read(reinterpret_cast<char *>(bytes.data()),
                   static_cast<std::streamsize>(bytes.size()))) {
      error =
          where + ": cannot read " + std::to_string(bytes.size()) + " bytes";
      return false;
    }
    return true;
  }

  const StoredTensor *tensor = nullptr;
  std::ifstream file;
  std::string where;
};

/// Calls `run(firstStorageElement)` for each innermost run of the block
/// (all dims but the last at fixed indices).
template <typename Fn>
bool forEachRun(const StoredTensor &t, const std::vector<int64_t> &offsets,
                const std::vector<int64_t> &sizes, Fn run) {
  size_t rank = t.shape.size();
  if (rank == 0)
    return run(t.storageOffset);
  for (int64_t s : sizes)
    if (s == 0)
      return true;
  std::vector<int64_t> idx(rank - 1, 0);
  while (true) {
    int64_t first = t.storageOffset + offsets[rank - 1] * t.strides[rank - 1];
    for (size_t d = 0; d + 1 < rank; ++d)
      first += (offsets[d] + idx[d]) * t.strides[d];
    if (!run(first))
      return false;
    int64_t d = static_cast<int64_t>(rank) - 2;
    for (; d >= 0; --d) {
      if (++idx[d] < sizes[d])
        break;
      idx[d] = 0;
    }
    if (d < 0)
      return true;
  }
}

} // namespace

bool readStoredBlock(const StoredTensor &tensor,
                     const std::vector<int64_t> &offsets,
                     const std::vector<int64_t> &sizes,
                     std::vector<double> &out, std::string &error) {
  out.clear();
  StoredReader reader;
  if (!reader.open(tensor, error))
    return false;
  size_t rank = tensor.shape.size();
  if (offsets.size() != rank || sizes.size() != rank) {
    error = reader.where + ": a block of rank " +
            std::to_string(offsets.size()) + " of a tensor of rank " +
            std::to_string(rank);
    return false;
  }
  for (size_t d = 0; d < rank; ++d)
    if (offsets[d] < 0 || sizes[d] < 0 ||
        offsets[d] + sizes[d] > tensor.shape[d]) {
      error = reader.where + ": block outside the tensor's shape";
      return false;
    }
  size_t elem = dtypeSize(tensor.dtype);
  int64_t inner = rank ? sizes[rank - 1] : 1;
  int64_t stride = rank ? tensor.strides[rank - 1] : 1;
  // One read covers the run: `inner` elements `stride` apart.
  int64_t span = inner == 0 ? 0 : (inner - 1) * stride + 1;
  std::vector<unsigned char> bytes;
  return forEachRun(tensor, offsets, sizes, [&](int64_t first) {
    if (!reader.read(first, span, bytes, error))
      return false;
    for (int64_t i = 0; i < inner; ++i)
      out.push_back(
          decodeDType(bytes.data() + i * stride * elem, tensor.dtype));
    return true;
  });
}

SafeTensorsPlan
planSafeTensors(std::vector<std::pair<std::string, StoredTensor>> tensors) {
  std::sort(tensors.begin(), tensors.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  nlohmann::json header = nlohmann::json::object();
  uint64_t at = 0;
  for (const auto &[name, t] : tensors) {
    uint64_t bytes =
        static_cast<uint64_t>(t.numElements()) * dtypeSize(t.dtype);
    header[name] = {{"dtype", dtypeName(t.dtype)},
                    {"shape", t.shape},
                    {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  SafeTensorsPlan plan;
  uint64_t length = text.size();
  for (int i = 0; i < 8; ++i)
    plan.head.push_back(static_cast<char>(length >> (8 * i)));
  plan.head += text;
  plan.totalBytes = plan.head.size() + at;
  plan.tensors = std::move(tensors);
  return plan;
}

bool writeSafeTensors(const SafeTensorsPlan &plan, const ByteSink &sink,
                      std::string &error) {
  if (!sink(plan.head.data(), plan.head.size())) {
    error = "cannot write the weights";
    return false;
  }
  constexpr int64_t kChunk = 4 << 20;
  std::vector<unsigned char> bytes, gathered;
  for (const auto &[name, t] : plan.tensors) {
    StoredReader reader;
    if (!reader.open(t, error)) {
      error = "'" + name + "': " + error;
      return false;
    }
    size_t elem = dtypeSize(t.dtype);
    int64_t n = t.numElements();
    if (t.isRowMajor()) {
      // Straight copy, a chunk at a time.
      int64_t perChunk = std::max<int64_t>(1, kChunk / elem);
      for (int64_t first = 0; first < n; first += perChunk) {
        int64_t count = std::min(perChunk, n - first);
        if (!reader.read(first, count, bytes, error))
          return false;
        if (!sink(reinterpret_cast<const char *>(bytes.data()), bytes.size())) {
          error = "cannot write the weights";
          return false;
        }
      }
      continue;
    }
    // A strided view: gathered run by run into one row-major tensor.
    std::vector<int64_t> zeros(t.shape.size(), 0);
    size_t rank = t.shape.size();
    int64_t inner = rank ? t.shape[rank - 1] : 1;
    int64_t stride = rank ? t.strides[rank - 1] : 1;
    int64_t span = inner == 0 ? 0 : (inner - 1) * stride + 1;
    gathered.clear();
    gathered.reserve(static_cast<size_t>(n) * elem);
    if (!forEachRun(t, zeros, t.shape, [&](int64_t first) {
          if (!reader.read(first, span, bytes, error))
            return false;
          for (int64_t i = 0; i < inner; ++i)
            gathered.insert(gathered.end(), bytes.begin() + i * stride * elem,
                            bytes.begin() + (i * stride + 1) * elem);
          return true;
        }))
      return false;
    if (!sink(reinterpret_cast<const char *>(gathered.data()),
              gathered.size())) {
      error = "cannot write the weights";
      return false;
    }
  }
  return true;
}

} // namespace spmdc::rt
