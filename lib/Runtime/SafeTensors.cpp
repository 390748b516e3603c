//===- SafeTensors.cpp - safetensors reading and writing ------------------===//
//
// The header is parsed with nlohmann::json, which reports errors by throwing;
// every exception is caught here and turned into an error string, so callers
// (including code built without exceptions) never see one.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/SafeTensors.h"
#include "spmdc/Runtime/AtomicFile.h"
#include "spmdc/Runtime/FloatFormats.h"
#include "spmdc/Runtime/Limits.h"
#include "spmdc/Runtime/StoredTensor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>

using namespace spmdc::rt;
using json = nlohmann::json;

//===----------------------------------------------------------------------===//
// DType helpers
//===----------------------------------------------------------------------===//

size_t spmdc::rt::dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::Bool:
    return 1;
  }
  return 0;
}

const char *spmdc::rt::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return "F64";
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::I64:
    return "I64";
  case DType::I32:
    return "I32";
  case DType::Bool:
    return "BOOL";
  }
  return "?";
}

std::optional<DType> spmdc::rt::parseDType(const std::string &name) {
  for (DType d : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                  DType::I32, DType::Bool})
    if (name == dtypeName(d))
      return d;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Element conversions
//===----------------------------------------------------------------------===//

namespace {

/// Truncates `v` toward zero into [lo, hi]; false for NaN or out of range.
bool truncToInt(double v, double lo, double hiExclusive, int64_t &out) {
  double t = std::trunc(v);
  if (!(t >= lo && t < hiExclusive))
    return false;
  out = static_cast<int64_t>(t);
  return true;
}

constexpr double kI32Lo = -2147483648.0, kI32Hi = 2147483648.0;
constexpr double kI64Lo = -9223372036854775808.0,
                 kI64Hi = 9223372036854775808.0;

void storeLE(unsigned char *p, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    p[i] = static_cast<unsigned char>(v >> (8 * i));
}

uint64_t loadLE(const unsigned char *p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i)
    v |= uint64_t(p[i]) << (8 * i);
  return v;
}

/// Encodes one element at `p`; false if an integer value is NaN or out of
/// range.
bool encodeElement(double v, DType dtype, unsigned char *p) {
  int64_t i;
  switch (dtype) {
  case DType::F64: {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    storeLE(p, bits, 8);
    return true;
  }
  case DType::F32:
    storeLE(p, encodeF32(v), 4);
    return true;
  case DType::F16:
    storeLE(p, encodeF16(v), 2);
    return true;
  case DType::BF16:
    storeLE(p, encodeBF16(v), 2);
    return true;
  case DType::I64:
    if (!truncToInt(v, kI64Lo, kI64Hi, i))
      return false;
    storeLE(p, static_cast<uint64_t>(i), 8);
    return true;
  case DType::I32:
    if (!truncToInt(v, kI32Lo, kI32Hi, i))
      return false;
    storeLE(p, static_cast<uint64_t>(i), 4);
    return true;
  case DType::Bool:
    *p = v != 0 ? 1 : 0;
    return true;
  }
  return false;
}

double decodeElement(const unsigned char *p, DType dtype) {
  switch (dtype) {
  case DType::F64: {
    uint64_t bits = loadLE(p, 8);
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  case DType::F32:
    return f32FromBits(static_cast<uint32_t>(loadLE(p, 4)));
  case DType::F16:
    return decodeF16(static_cast<uint16_t>(loadLE(p, 2)));
  case DType::BF16:
    return fromBF16(static_cast<uint16_t>(loadLE(p, 2)));
  case DType::I64:
    return static_cast<double>(static_cast<int64_t>(loadLE(p, 8)));
  case DType::I32:
    return static_cast<double>(
        static_cast<int32_t>(static_cast<uint32_t>(loadLE(p, 4))));
  case DType::Bool:
    return *p != 0 ? 1.0 : 0.0;
  }
  return 0;
}

/// Product of non-negative dims; false on overflow of int64.
bool checkedNumElements(const std::vector<int64_t> &shape, int64_t &out) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return false;
  out = n;
  return true;
}

} // namespace

double spmdc::rt::roundToDType(double value, DType dtype) {
  unsigned char bytes[8];
  if (!encodeElement(value, dtype, bytes))
    return 0;
  return decodeElement(bytes, dtype);
}

double spmdc::rt::decodeDType(const unsigned char *p, DType dtype) {
  return decodeElement(p, dtype);
}

int64_t TensorInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

namespace {

/// Reads a JSON integer into an int64; false if it is not one or is out of
/// range.
bool jsonToInt64(const json &j, int64_t &out) {
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max()))
      return false;
    out = static_cast<int64_t>(u);
    return true;
  }
  if (j.is_number_integer()) {
    out = j.get<int64_t>();
    return true;
  }
  return false;
}

/// Validates one header entry against a data section of `dataSize` bytes.
bool parseEntry(const std::string &name, const json &entry, uint64_t dataSize,
                TensorInfo &info, std::string &error) {
  std::string where = "tensor '" + name + "': ";
  if (!entry.is_object()) {
    error = where + "header entry is not a JSON object";
    return false;
  }
  info.name = name;

  auto dtypeIt = entry.find("dtype");
  if (dtypeIt == entry.end() || !dtypeIt->is_string()) {
    error = where + "missing or non-string 'dtype'";
    return false;
  }
  std::string dtypeStr = dtypeIt->get<std::string>();
  std::optional<DType> dtype = parseDType(dtypeStr);
  if (!dtype) {
    error = where + "unknown or unsupported dtype '" + dtypeStr +
            "' (supported: F64, F32, F16, BF16, I64, I32, BOOL)";
    return false;
  }
  info.dtype = *dtype;

  auto shapeIt = entry.find("shape");
  if (shapeIt == entry.end() || !shapeIt->is_array()) {
    error = where + "missing or non-list 'shape'";
    return false;
  }
  info.shape.clear();
  for (const json &d : *shapeIt) {
    int64_t dim;
    if (!jsonToInt64(d, dim)) {
      error = where + "shape " + shapeIt->dump() +
              " is not a list of 64-bit integers";
      return false;
    }
    info.shape.push_back(dim);
  }
  for (int64_t d : info.shape)
    if (d < 0) {
      error = where + "shape " + formatShape(info.shape) +
              " has a negative dimension";
      return false;
    }

  auto offIt = entry.find("data_offsets");
  int64_t begin, end;
  if (offIt == entry.end() || !offIt->is_array() || offIt->size() != 2 ||
      !jsonToInt64((*offIt)[0], begin) || !jsonToInt64((*offIt)[1], end) ||
      begin < 0 || end < 0) {
    error = where +
            "'data_offsets' must be two non-negative integers [begin, "
            "end], not " +
            (offIt == entry.end() ? std::string("missing") : offIt->dump());
    return false;
  }
  std::string offsets = "data_offsets [" + std::to_string(begin) + ", " +
                        std::to_string(end) + "]";
  if (end < begin) {
    error = where + offsets + " end before they begin";
    return false;
  }
  info.dataBegin = static_cast<uint64_t>(begin);
  info.dataEnd = static_cast<uint64_t>(end);

  uint64_t needed;
  std::string sizeError;
  if (!checkTensorSize(info.shape, dtypeSize(info.dtype), needed, sizeError)) {
    error = where + sizeError;
    return false;
  }
  uint64_t held = info.dataEnd - info.dataBegin;
  if (held != needed) {
    error = where + offsets + " hold " + std::to_string(held) +
            " bytes but shape " + formatShape(info.shape) + " of " +
            dtypeName(info.dtype) + " needs " + std::to_string(needed);
    return false;
  }
  if (info.dataEnd > dataSize) {
    error = where + offsets +
            " extend beyond the end of the file: the data "
            "section holds only " +
            std::to_string(dataSize) + " bytes";
    return false;
  }
  return true;
}

} // namespace

std::unique_ptr<SafeTensorsReader>
SafeTensorsReader::open(const std::string &path, std::string &error,
                        uint64_t sectionStart,
                        std::optional<uint64_t> sectionLength) {
  std::unique_ptr<SafeTensorsReader> reader(new SafeTensorsReader());
  reader->filePath = path;
  std::string prefix = path + ": ";
  try {
    std::ifstream &file = reader->file;
    errno = 0;
    file.open(path, std::ios::binary);
    if (!file.is_open()) {
      error = prefix + "cannot open file" +
              (errno ? std::string(": ") + std::strerror(errno) : "");
      return nullptr;
    }
    file.seekg(0, std::ios::end);
    std::streamoff end = file.tellg();
    file.seekg(static_cast<std::streamoff>(sectionStart), std::ios::beg);
    if (end < 0 || !file) {
      error = prefix + "cannot determine the file size (not a regular file?)";
      return nullptr;
    }
    if (static_cast<uint64_t>(end) < sectionStart ||
        (sectionLength &&
         static_cast<uint64_t>(end) - sectionStart < *sectionLength)) {
      error = prefix + "the file is " + std::to_string(end) +
              " bytes, but its tensors are at bytes " +
              std::to_string(sectionStart) + " to " +
              std::to_string(sectionStart + sectionLength.value_or(0)) +
              " (was the file truncated?)";
      return nullptr;
    }
    uint64_t fileSize =
        sectionLength.value_or(static_cast<uint64_t>(end) - sectionStart);
    if (fileSize < 8) {
      error = prefix + "file is " + std::to_string(fileSize) +
              " bytes, too short for the 8-byte header length";
      return nullptr;
    }
    unsigned char lenBytes[8];
    if (!file.read(reinterpret_cast<char *>(lenBytes), 8)) {
      error = prefix + "cannot read the header length";
      return nullptr;
    }
    uint64_t headerLen = loadLE(lenBytes, 8);
    if (headerLen > kMaxSafeTensorsHeaderBytes) {
      error = prefix + "header length " + std::to_string(headerLen) +
              " is over the format's limit of " +
              std::to_string(kMaxSafeTensorsHeaderBytes) + " bytes";
      return nullptr;
    }
    if (headerLen > fileSize - 8) {
      error = prefix + "header length " + std::to_string(headerLen) +
              " exceeds the " + std::to_string(fileSize - 8) +
              " bytes after the length field";
      return nullptr;
    }
    std::string headerText(headerLen, '\0');
    if (headerLen &&
        !file.read(&headerText[0], static_cast<std::streamsize>(headerLen))) {
      error = prefix + "cannot read the " + std::to_string(headerLen) +
              "-byte header";
      return nullptr;
    }
    uint64_t dataSize = fileSize - 8 - headerLen;
    reader->dataStart = sectionStart + 8 + headerLen;

    size_t deep = findJsonDepthExcess(headerText.data(), headerText.size());
    if (deep != std::string::npos) {
      error = prefix + "header is nested deeper than " +
              std::to_string(kMaxJsonDepth) + " levels (at header byte " +
              std::to_string(deep) + ")";
      return nullptr;
    }
    json header;
    try {
      header = json::parse(headerText);
    } catch (const json::exception &e) {
      error = prefix + "header is not valid JSON: " + e.what();
      return nullptr;
    }
    if (!header.is_object()) {
      error = prefix + "header is not a JSON object (it is " +
              header.type_name() + ")";
      return nullptr;
    }

    for (auto it = header.begin(); it != header.end(); ++it) {
      if (it.key() == "__metadata__") {
        if (!it.value().is_object()) {
          error = prefix + "__metadata__ is not a JSON object";
          return nullptr;
        }
        for (auto m = it.value().begin(); m != it.value().end(); ++m) {
          if (!m.value().is_string()) {
            error =
                prefix + "__metadata__ entry '" + m.key() + "' is not a string";
            return nullptr;
          }
          reader->meta[m.key()] = m.value().get<std::string>();
        }
        continue;
      }
      TensorInfo info;
      std::string entryError;
      if (!parseEntry(it.key(), it.value(), dataSize, info, entryError)) {
        error = prefix + entryError;
        return nullptr;
      }
      reader->infos.push_back(std::move(info));
    }
    // nlohmann's default object is a std::map, so this is usually a no-op;
    // sort anyway so find() can rely on it.
    std::sort(reader->infos.begin(), reader->infos.end(),
              [](const TensorInfo &a, const TensorInfo &b) {
                return a.name < b.name;
              });
  } catch (const std::exception &e) {
    error = prefix + "unexpected error while reading the header: " + e.what();
    return nullptr;
  }
  return reader;
}

const TensorInfo *SafeTensorsReader::find(const std::string &name) const {
  auto it = std::lower_bound(infos.begin(), infos.end(), name,
                             [](const TensorInfo &info, const std::string &n) {
                               return info.name < n;
                             });
  if (it == infos.end() || it->name != name)
    return nullptr;
  return &*it;
}

StoredTensor SafeTensorsReader::stored(const TensorInfo &info) const {
  StoredTensor t;
  t.path = filePath;
  t.dataOffset = dataStart + info.dataBegin;
  t.dataBytes = info.dataEnd - info.dataBegin;
  t.dtype = info.dtype;
  t.shape = info.shape;
  t.strides.assign(info.shape.size(), 1);
  for (size_t d = info.shape.size(); d-- > 1;)
    t.strides[d - 1] = t.strides[d] * info.shape[d];
  return t;
}

bool SafeTensorsReader::readRun(const TensorInfo &info, uint64_t firstElement,
                                uint64_t count, std::vector<double> &out,
                                std::string &error) {
  if (count == 0)
    return true;
  size_t elemSize = dtypeSize(info.dtype);
  uint64_t bytes = count * elemSize;
  uint64_t at = dataStart + info.dataBegin + firstElement * elemSize;
  buffer.resize(bytes);
  file.clear(); // A previous short read may have left eof/fail set.
  file.seekg(static_cast<std::streamoff>(at), std::ios::beg);
  if (!file || !file.read(reinterpret_cast<char *>(buffer.data()),
                          static_cast<std::streamsize>(bytes))) {
    error = filePath + ": tensor '" + info.name + "': cannot read " +
            std::to_string(bytes) + " bytes at file offset " +
            std::to_string(at) + " (was the file truncated?)";
    return false;
  }
  const unsigned char *p = buffer.data();
  for (uint64_t i = 0; i < count; ++i, p += elemSize)
    out.push_back(decodeElement(p, info.dtype));
  return true;
}

bool SafeTensorsReader::readAsDouble(const std::string &name,
                                     std::vector<double> &out,
                                     std::string &error) {
  out.clear();
  const TensorInfo *info = find(name);
  if (!info) {
    error = filePath + ": no tensor '" + name + "'";
    return false;
  }
  try {
    uint64_t numel = static_cast<uint64_t>(info->numElements());
    out.reserve(numel);
    return readRun(*info, 0, numel, out, error);
  } catch (const std::exception &e) {
    error = filePath + ": tensor '" + name + "': " + e.what();
    return false;
  }
}

bool SafeTensorsReader::readSliceAsDouble(const std::string &name,
                                          const std::vector<int64_t> &offsets,
                                          const std::vector<int64_t> &sizes,
                                          std::vector<double> &out,
                                          std::string &error) {
  out.clear();
  const TensorInfo *info = find(name);
  if (!info) {
    error = filePath + ": no tensor '" + name + "'";
    return false;
  }
  std::string where = filePath + ": tensor '" + name + "': ";
  const std::vector<int64_t> &shape = info->shape;
  size_t rank = shape.size();
  if (offsets.size() != rank || sizes.size() != rank) {
    error = where + "slice has " + std::to_string(offsets.size()) +
            " offsets and " + std::to_string(sizes.size()) +
            " sizes but the tensor has rank " + std::to_string(rank);
    return false;
  }
  int64_t total = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (offsets[d] < 0 || sizes[d] < 0 || offsets[d] > shape[d] - sizes[d]) {
      error = where + "slice offset " + std::to_string(offsets[d]) + " size " +
              std::to_string(sizes[d]) + " of dimension " + std::to_string(d) +
              " is outside the shape " + formatShape(shape);
      return false;
    }
    total *= sizes[d];
  }
  if (total == 0)
    return true;

  try {
    out.reserve(static_cast<size_t>(total));
    std::vector<int64_t> strides(rank, 1);
    for (size_t d = rank; d-- > 1;)
      strides[d - 1] = strides[d] * shape[d];
    // Trailing dims taken whole are contiguous with the first partial dim
    // `split` before them: each run is sizes[split] * strides[split].
    int64_t split = static_cast<int64_t>(rank) - 1;
    while (split >= 0 && sizes[split] == shape[split])
      --split;
    if (split < 0) // The whole tensor.
      return readRun(*info, 0, static_cast<uint64_t>(total), out, error);
    uint64_t runLen = static_cast<uint64_t>(sizes[split] * strides[split]);
    // Odometer over the dims before `split`.
    std::vector<int64_t> idx(static_cast<size_t>(split), 0);
    while (true) {
      int64_t first = offsets[split] * strides[split];
      for (int64_t d = 0; d < split; ++d)
        first += (offsets[d] + idx[d]) * strides[d];
      if (!readRun(*info, static_cast<uint64_t>(first), runLen, out, error))
        return false;
      int64_t d = split - 1;
      for (; d >= 0; --d) {
        if (++idx[d] < sizes[d])
          break;
        idx[d] = 0;
      }
      if (d < 0)
        break;
    }
    return true;
  } catch (const std::exception &e) {
    error = where + e.what();
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

bool spmdc::rt::writeSafeTensors(
    const std::string &path, const std::vector<NamedTensor> &tensors,
    std::string &error, const std::map<std::string, std::string> &metadata) {
  std::string prefix = path + ": ";
  try {
    // Validate everything before creating the file, so a bad call leaves no
    // partial file behind.
    std::set<std::string> names;
    for (const NamedTensor &t : tensors) {
      std::string where = prefix + "tensor '" + t.name + "': ";
      if (t.name == "__metadata__") {
        error = where + "the name is reserved for the metadata map";
        return false;
      }
      if (!names.insert(t.name).second) {
        error = where + "duplicate tensor name";
        return false;
      }
      int64_t numel, bytes;
      if (!checkedNumElements(t.shape, numel) ||
          __builtin_mul_overflow(numel, int64_t(dtypeSize(t.dtype)), &bytes)) {
        error = where + "shape " + formatShape(t.shape) +
                " has a negative dimension or is too large";
        return false;
      }
      if (t.values.size() != uint64_t(numel)) {
        error = where + std::to_string(t.values.size()) + " values but shape " +
                formatShape(t.shape) + " has " + std::to_string(numel) +
                " elements";
        return false;
      }
      if (t.dtype == DType::I64 || t.dtype == DType::I32) {
        unsigned char scratch[8];
        for (size_t i = 0; i < t.values.size(); ++i)
          if (!encodeElement(t.values[i], t.dtype, scratch)) {
            std::ostringstream os;
            os << where << "value " << t.values[i] << " at element " << i
               << " is not representable as " << dtypeName(t.dtype);
            error = os.str();
            return false;
          }
      }
    }

    // Widest dtype first, then by name: every tensor stays naturally aligned
    // in the 8-byte aligned data section.
    std::vector<const NamedTensor *> order;
    for (const NamedTensor &t : tensors)
      order.push_back(&t);
    std::stable_sort(order.begin(), order.end(),
                     [](const NamedTensor *a, const NamedTensor *b) {
                       size_t sa = dtypeSize(a->dtype),
                              sb = dtypeSize(b->dtype);
                       return sa != sb ? sa > sb : a->name < b->name;
                     });

    json header = json::object();
    uint64_t offset = 0;
    for (const NamedTensor *t : order) {
      uint64_t bytes = t->values.size() * dtypeSize(t->dtype);
      header[t->name] = {{"dtype", dtypeName(t->dtype)},
                         {"shape", t->shape},
                         {"data_offsets", {offset, offset + bytes}}};
      offset += bytes;
    }
    if (!metadata.empty())
      header["__metadata__"] = metadata;
    std::string headerText;
    try {
      headerText = header.dump();
    } catch (const json::exception &e) {
      // dump() rejects names or metadata that are not valid UTF-8.
      error = prefix + "cannot serialise the header: " + e.what();
      return false;
    }
    headerText.append((8 - headerText.size() % 8) % 8, ' ');

    // A temporary file renamed over `path` once whole: a failed write
    // leaves the previous file as it was.
    AtomicFile file;
    if (!file.open(path, error))
      return false;
    unsigned char lenBytes[8];
    storeLE(lenBytes, headerText.size(), 8);
    if (!file.write(lenBytes, 8, error) ||
        !file.write(headerText.data(), headerText.size(), error))
      return false;
    std::vector<unsigned char> buf;
    for (const NamedTensor *t : order) {
      size_t elemSize = dtypeSize(t->dtype);
      buf.resize(t->values.size() * elemSize);
      for (size_t i = 0; i < t->values.size(); ++i)
        encodeElement(t->values[i], t->dtype, buf.data() + i * elemSize);
      if (!file.write(buf.data(), buf.size(), error))
        return false;
    }
    if (!file.commit(error))
      return false;
  } catch (const std::exception &e) {
    error = prefix + "unexpected error while writing: " + e.what();
    return false;
  }
  return true;
}
