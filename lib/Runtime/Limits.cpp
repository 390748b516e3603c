//===- Limits.cpp - what a reader refuses before it allocates -------------===//

#include "spmdc/Runtime/Limits.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <sstream>

namespace spmdc::rt {

namespace {
std::atomic<uint64_t> &limit() {
  static std::atomic<uint64_t> bytes{kDefaultMaxTensorBytes};
  return bytes;
}

} // namespace

uint64_t maxTensorBytes() { return limit().load(std::memory_order_relaxed); }

void setMaxTensorBytes(uint64_t bytes) {
  limit().store(bytes, std::memory_order_relaxed);
}

std::optional<uint64_t> parseByteCount(const std::string &text) {
  size_t i = 0;
  uint64_t value = 0;
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
    return std::nullopt;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
       ++i) {
    if (__builtin_mul_overflow(value, 10u, &value) ||
        __builtin_add_overflow(value, uint64_t(text[i] - '0'), &value))
      return std::nullopt;
  }
  std::string suffix = text.substr(i);
  for (char &c : suffix)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.size() >= 2 && suffix.compare(suffix.size() - 2, 2, "IB") == 0)
    suffix.resize(suffix.size() - 2);
  else if (!suffix.empty() && suffix.back() == 'B' && suffix.size() > 1)
    suffix.pop_back();
  int shift = suffix.empty() || suffix == "B" ? 0
              : suffix == "K"                 ? 10
              : suffix == "M"                 ? 20
              : suffix == "G"                 ? 30
              : suffix == "T"                 ? 40
                                              : -1;
  if (shift < 0 || value > (uint64_t(1) << 63) >> shift)
    return std::nullopt;
  return value << shift;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

std::string formatBytes(uint64_t bytes) {
  static const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g %s", value, units[unit]);
  return text;
}

bool checkTensorSize(const std::vector<int64_t> &shape, uint64_t elementBytes,
                     uint64_t &bytes, std::string &error) {
  int64_t count = 1;
  for (int64_t d : shape)
    if (d < 0) {
      error = "shape " + formatShape(shape) + " has a negative dimension";
      return false;
    }
  for (int64_t d : shape)
    if (__builtin_mul_overflow(count, d, &count)) {
      error = "shape " + formatShape(shape) +
              " has more elements than a 64-bit count holds";
      return false;
    }
  int64_t total;
  if (__builtin_mul_overflow(count, static_cast<int64_t>(elementBytes),
                             &total)) {
    error = "shape " + formatShape(shape) + " of " +
            std::to_string(elementBytes) +
            "-byte elements has more bytes than a 64-bit count holds";
    return false;
  }
  if (static_cast<uint64_t>(total) > maxTensorBytes()) {
    error = "shape " + formatShape(shape) + " of " +
            std::to_string(elementBytes) + "-byte elements is " +
            formatBytes(static_cast<uint64_t>(total)) +
            ", more than --max-tensor-bytes (" + formatBytes(maxTensorBytes()) +
            ")";
    return false;
  }
  bytes = static_cast<uint64_t>(total);
  return true;
}

size_t findJsonDepthExcess(const char *text, size_t size, unsigned maxDepth) {
  unsigned depth = 0;
  bool inString = false;
  for (size_t i = 0; i < size; ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"')
      inString = true;
    else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return i;
    } else if ((c == ']' || c == '}') && depth > 0)
      --depth;
  }
  return std::string::npos;
}

} // namespace spmdc::rt
