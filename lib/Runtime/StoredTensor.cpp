//===- StoredTensor.cpp - tensors read in place from another file ---------===//

#include "spmdc/Runtime/StoredTensor.h"

#include "spmdc/Runtime/ParallelFor.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

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

/// An open stored tensor, checked against its file. Reads are pread()s, so
/// threads may share one reader.
class StoredReader {
public:
  StoredReader() = default;
  StoredReader(const StoredReader &) = delete;
  StoredReader &operator=(const StoredReader &) = delete;
  ~StoredReader() {
    if (fd >= 0)
      ::close(fd);
  }

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
    struct stat status;
    fd = ::open(t.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
      error = t.path + ": cannot open file (the weights are read from it)";
      return false;
    }
    uint64_t size = static_cast<uint64_t>(status.st_size);
    if (size < t.dataOffset + t.dataBytes) {
      error = where + ": the file is " + std::to_string(size) +
              " bytes but the tensor's storage ends at byte " +
              std::to_string(t.dataOffset + t.dataBytes) +
              " (was it changed or truncated?)";
      return false;
    }
    return true;
  }

  /// Reads `count` storage elements from storage element `first` into
  /// `dest`.
  bool readInto(int64_t first, int64_t count, void *dest,
                std::string &error) const {
    size_t elem = dtypeSize(tensor->dtype);
    size_t bytes = static_cast<size_t>(count) * elem;
    auto *at = static_cast<char *>(dest);
    off_t offset = static_cast<off_t>(tensor->dataOffset + first * elem);
    while (bytes > 0) {
      ssize_t got = ::pread(fd, at, bytes, offset);
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0) {
        error = where + ": cannot read " + std::to_string(bytes) +
                " bytes at byte " + std::to_string(offset);
        return false;
      }
      at += got;
      offset += got;
      bytes -= static_cast<size_t>(got);
    }
    return true;
  }

  bool read(int64_t first, int64_t count, std::vector<unsigned char> &bytes,
            std::string &error) const {
    bytes.resize(static_cast<size_t>(count) * dtypeSize(tensor->dtype));
    return readInto(first, count, bytes.data(), error);
  }

  const StoredTensor *tensor = nullptr;
  int fd = -1;
  std::string where;
};

/// Checks that [offsets, offsets + sizes) is a block of `t`.
bool checkBlock(const StoredReader &reader, const StoredTensor &t,
                const std::vector<int64_t> &offsets,
                const std::vector<int64_t> &sizes, std::string &error) {
  size_t rank = t.shape.size();
  if (offsets.size() != rank || sizes.size() != rank) {
    error = reader.where + ": a block of rank " +
            std::to_string(offsets.size()) + " of a tensor of rank " +
            std::to_string(rank);
    return false;
  }
  for (size_t d = 0; d < rank; ++d)
    if (offsets[d] < 0 || sizes[d] < 0 || offsets[d] + sizes[d] > t.shape[d]) {
      error = reader.where + ": block outside the tensor's shape";
      return false;
    }
  return true;
}

/// A block of a stored tensor with each dim it takes whole and that lies
/// contiguously after the dim before it merged into that dim: the same
/// elements in the same order, in fewer and longer runs (a row-major
/// tensor read whole is one run).
struct Block {
  StoredTensor view;
  std::vector<int64_t> offsets, sizes;
  /// Each run (forEachRun): `inner` elements `stride` apart.
  int64_t inner = 1, stride = 1;
};

Block coalesced(const StoredTensor &t, const std::vector<int64_t> &offsets,
                const std::vector<int64_t> &sizes) {
  Block b{t, offsets, sizes};
  std::vector<int64_t> &shape = b.view.shape, &strides = b.view.strides;
  for (size_t d = shape.size(); d-- > 1;) {
    if (b.sizes[d] != shape[d] || strides[d - 1] != strides[d] * shape[d])
      continue;
    b.offsets[d - 1] = b.offsets[d - 1] * shape[d] + b.offsets[d];
    b.sizes[d - 1] *= b.sizes[d];
    shape[d - 1] *= shape[d];
    strides[d - 1] = strides[d];
    for (auto *dims : {&shape, &strides, &b.offsets, &b.sizes})
      dims->erase(dims->begin() + static_cast<std::ptrdiff_t>(d));
  }
  if (!shape.empty()) {
    b.inner = b.sizes.back();
    b.stride = strides.back();
  }
  return b;
}

/// Opens `t` in `reader` and checks that [offsets, offsets + sizes) is a
/// block of it, coalesced into `block`.
bool openBlock(const StoredTensor &t, const std::vector<int64_t> &offsets,
               const std::vector<int64_t> &sizes, StoredReader &reader,
               Block &block, std::string &error) {
  if (!reader.open(t, error) || !checkBlock(reader, t, offsets, sizes, error))
    return false;
  block = coalesced(t, offsets, sizes);
  return true;
}

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
  Block b;
  if (!openBlock(tensor, offsets, sizes, reader, b, error))
    return false;
  size_t elem = dtypeSize(tensor.dtype);
  int64_t inner = b.inner, stride = b.stride;
  // One read covers the run.
  int64_t span = inner == 0 ? 0 : (inner - 1) * stride + 1;
  std::vector<unsigned char> bytes;
  return forEachRun(b.view, b.offsets, b.sizes, [&](int64_t first) {
    if (!reader.read(first, span, bytes, error))
      return false;
    for (int64_t i = 0; i < inner; ++i)
      out.push_back(
          decodeDType(bytes.data() + i * stride * elem, tensor.dtype));
    return true;
  });
}

bool readStoredBlockF32(const StoredTensor &tensor,
                        const std::vector<int64_t> &offsets,
                        const std::vector<int64_t> &sizes, float *out,
                        int threads, std::string &error) {
  StoredReader reader;
  Block b;
  if (!openBlock(tensor, offsets, sizes, reader, b, error))
    return false;
  int64_t inner = b.inner, stride = b.stride;
  // The runs cut into pieces of at most 1 M elements, shared out among the
  // threads: the copy and the destination's fresh pages are most of it.
  constexpr int64_t kPiece = int64_t(1) << 20;
  struct Piece {
    int64_t first, count;
    float *out;
  };
  std::vector<Piece> pieces;
  float *at = out;
  if (!forEachRun(b.view, b.offsets, b.sizes, [&](int64_t first) {
        for (int64_t i = 0; i < inner; i += kPiece) {
          int64_t count = std::min(kPiece, inner - i);
          pieces.push_back({first + i * stride, count, at + i});
        }
        at += inner;
        return true;
      }))
    return false;
  struct Work {
    const StoredReader &reader;
    const std::vector<Piece> &pieces;
    int64_t stride;
    std::mutex failed;
    std::string error;
  } work{reader, pieces, stride, {}, {}};
  auto readPieces = [](void *context, int64_t lo, int64_t hi) {
    auto &w = *static_cast<Work *>(context);
    DType dtype = w.reader.tensor->dtype;
    size_t elem = dtypeSize(dtype);
    std::vector<unsigned char> bytes;
    std::string error;
    for (int64_t p = lo; p < hi; ++p) {
      const Piece &piece = w.pieces[p];
      bool ok;
      if (dtype == DType::F32 && w.stride == 1) {
        ok = w.reader.readInto(piece.first, piece.count, piece.out, error);
      } else {
        int64_t span = (piece.count - 1) * w.stride + 1;
        ok = w.reader.read(piece.first, span, bytes, error);
        // As readStoredBlock's doubles are stored into an f32 buffer.
        for (int64_t i = 0; ok && i < piece.count; ++i)
          piece.out[i] = static_cast<float>(
              decodeDType(bytes.data() + i * w.stride * elem, dtype));
      }
      if (!ok) {
        std::lock_guard<std::mutex> lock(w.failed);
        if (w.error.empty())
          w.error = error;
        return;
      }
    }
  };
  parallelChunks(readPieces, &work, static_cast<int64_t>(pieces.size()),
                 threads);
  error = work.error;
  return error.empty();
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
