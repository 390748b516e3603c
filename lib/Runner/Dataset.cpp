//===- Dataset.cpp - a new batch of the data inputs every step ------------===//

#include "spmdc/Runner/Dataset.h"

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Interpreter/Kernels.h"
#include "spmdc/Runtime/SafeTensors.h"
#include "spmdc/Support/ShapeString.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;
using spmdc::interp::Tensor;

namespace spmdc::runner {

namespace {

/// "data input 'tokens' of shape [4, 16] (i64)".
std::string describeInput(const tg::GraphValueInfo &info) {
  std::string element;
  llvm::raw_string_ostream os(element);
  info.type.getElementType().print(os);
  return "data input '" + info.name + "' of shape " +
         shapeString(info.type.getShape()) + " (" + element + ")";
}

bool isTokenInput(const tg::GraphValueInfo &info) {
  auto integer = dyn_cast<IntegerType>(info.type.getElementType());
  return info.role == tg::Role::data && integer && integer.getWidth() > 1 &&
         info.type.getRank() == 2;
}

/// The ids integer input `info` accepts, [0, limit): its embedding's rows
/// or its loss's classes where the signature knows them, and what its dtype
/// holds; `why` says which. No limit (INT64_MAX) for a float input.
int64_t idLimit(const tg::GraphValueInfo &info, std::string &why) {
  auto integer = dyn_cast<IntegerType>(info.type.getElementType());
  if (!integer)
    return std::numeric_limits<int64_t>::max();
  unsigned width = integer.getWidth();
  int64_t limit = width == 1    ? 2
                  : width >= 64 ? std::numeric_limits<int64_t>::max()
                                : int64_t(1) << (width - 1);
  why = "what i" + std::to_string(width) + " holds";
  if (info.indexBound && *info.indexBound < limit) {
    limit = *info.indexBound;
    why = "the range its use allows (embedding rows or classes)";
  }
  return limit;
}

/// The refusal of `value` at `where` for `info`, whose ids lie in
/// [0, limit).
std::string outOfRange(const std::string &path, const std::string &what,
                       double value, const std::string &where,
                       const tg::GraphValueInfo &info, int64_t limit,
                       const std::string &why) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return path + ": " + what + " " + text + " at " + where +
         " is out of range for " + describeInput(info) + ": ids lie in [0, " +
         std::to_string(limit) + "), " + why;
}

/// splitmix64's finaliser: a well-mixed 64-bit hash of `x`.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A random number that depends only on (seed, a, b): no generator state
/// to carry from step to step or rank to rank, so every rank draws the
/// same batch and a resumed run draws what the stopped one would have.
uint64_t draw(uint64_t seed, uint64_t a, uint64_t b) {
  return mix(mix(mix(seed) ^ a) ^ b);
}

/// `random` scaled to [0, n) (Lemire's multiply-shift; no division).
uint64_t below(uint64_t random, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(random) * n) >>
                               64);
}

/// A flat file of little-endian token ids, cut into windows of seq + 1
/// tokens: the inputs are a window without its last token, the targets
/// without its first.
class TokenDataset : public Dataset {
public:
  TokenDataset(const DatasetOptions &options, int fd, unsigned width,
               int64_t count)
      : options(options), fd(fd), width(width), count(count) {}
  ~TokenDataset() override { ::close(fd); }

  /// Picks the inputs and targets among `arguments` and checks the file
  /// holds one window; false with `error` set.
  bool bind(const std::vector<tg::GraphValueInfo> &arguments,
            std::string &error);

  bool feeds(const std::string &name) const override {
    return name == inputs || name == targets;
  }
  bool read(const tg::GraphValueInfo &info, int64_t batch,
            const std::vector<int64_t> &offsets,
            const std::vector<int64_t> &sizes, Tensor &block,
            std::string &error) override;
  std::string summary() const override {
    return options.path + ": " + std::to_string(count) + " u" +
           std::to_string(8 * width) + " tokens, " + std::to_string(windows) +
           " windows of " + std::to_string(seq + 1) + " tokens" +
           (options.shuffle ? ", shuffled" : "") + "; inputs '" + inputs + "'" +
           (targets.empty() ? "" : ", targets '" + targets + "'");
  }

private:
  DatasetOptions options;
  int fd;
  unsigned width;
  int64_t count;
  std::string inputs, targets;
  int64_t batchSize = 0, seq = 0;
  /// Whole windows in the file, one starting every `seq` tokens, so that
  /// each token but the first is a target once a pass (as llm.c reads).
  int64_t windows = 0;
  std::vector<unsigned char> buffer;
};

bool TokenDataset::bind(const std::vector<tg::GraphValueInfo> &arguments,
                        std::string &error) {
  std::vector<const tg::GraphValueInfo *> tokenInputs;
  std::string dataInputs;
  for (const tg::GraphValueInfo &info : arguments) {
    if (info.role != tg::Role::data)
      continue;
    dataInputs += (dataInputs.empty() ? "" : ", ") + describeInput(info);
    if (isTokenInput(info)) {
      tokenInputs.push_back(&info);
    } else {
      error = options.path +
              ": a token file gives only token ids, to "
              "integer data inputs of shape [batch, seq]; " +
              describeInput(info) + " cannot come from it";
      return false;
    }
  }
  if (tokenInputs.empty()) {
    error = options.path +
            ": a token file feeds integer data inputs of "
            "shape [batch, seq], and the module has none" +
            (dataInputs.empty() ? std::string(" (it has no data inputs)")
                                : " (its data inputs: " + dataInputs + ")");
    return false;
  }
  if (tokenInputs.size() > 2) {
    error = options.path +
            ": a token file feeds at most two data inputs "
            "(inputs and targets), but the module has " +
            std::to_string(tokenInputs.size()) + ": " + dataInputs;
    return false;
  }
  // By name where the module says "tokens" and "labels"; else the first is
  // the inputs and the second the targets.
  const tg::GraphValueInfo *in = tokenInputs[0];
  const tg::GraphValueInfo *out =
      tokenInputs.size() > 1 ? tokenInputs[1] : nullptr;
  if (out && in->name == "labels" && out->name == "tokens")
    std::swap(in, out);
  if (out && in->type.getShape() != out->type.getShape()) {
    error = options.path +
            ": the inputs and targets of a window must have "
            "one shape, but " +
            describeInput(*in) + " and " + describeInput(*out) + " differ";
    return false;
  }
  inputs = in->name;
  targets = out ? out->name : "";
  batchSize = in->type.getDimSize(0);
  seq = in->type.getDimSize(1);
  if (seq < 1) {
    error = options.path + ": a window needs at least one input token, but " +
            describeInput(*in) + " has rows of none";
    return false;
  }
  if (count < seq + 1) {
    error = options.path + ": " + std::to_string(count) +
            " tokens, fewer than one window of seq + 1 = " +
            std::to_string(seq + 1) + " tokens for " + describeInput(*in) +
            (out ? " and " + describeInput(*out) : "");
    return false;
  }
  windows = (count - 1) / seq;
  return true;
}

bool TokenDataset::read(const tg::GraphValueInfo &info, int64_t batch,
                        const std::vector<int64_t> &offsets,
                        const std::vector<int64_t> &sizes, Tensor &block,
                        std::string &error) {
  std::string why;
  int64_t limit = idLimit(info, why);
  int64_t shift = info.name == targets ? 1 : 0;
  int64_t n = sizes[1];
  if (batch < 0) {
    error = options.path + ": batch " + std::to_string(batch) + " is negative";
    return false;
  }
  buffer.resize(n * width);
  for (int64_t row = 0; row < sizes[0]; ++row) {
    // The window of this row of the batch: the next one in the file, or a
    // random start where a whole window fits (nanoGPT's get_batch). In 128
    // bits: a checkpoint may resume at any batch.
    int64_t r = offsets[0] + row;
    int64_t start =
        options.shuffle
            ? static_cast<int64_t>(
                  below(draw(options.seed, batch, r), count - seq))
            : static_cast<int64_t>(
                  ((static_cast<unsigned __int128>(batch) * batchSize + r) %
                   static_cast<uint64_t>(windows))) *
                  seq;
    int64_t first = start + shift + offsets[1];
    // Only this rank's part of the row, straight from the file.
    size_t want = buffer.size(), got = 0;
    while (got < want) {
      ssize_t k = ::pread(fd, buffer.data() + got, want - got,
                          static_cast<off_t>(first * width + got));
      if (k < 0 && errno == EINTR)
        continue;
      if (k <= 0) {
        error = options.path + ": cannot read tokens " + std::to_string(first) +
                " to " + std::to_string(first + n) + ": " +
                (k < 0 ? std::strerror(errno) : "the file shrank");
        return false;
      }
      got += static_cast<size_t>(k);
    }
    double *to = block.data.data() + row * n;
    for (int64_t j = 0; j < n; ++j) {
      const unsigned char *p = buffer.data() + j * width;
      uint32_t id = p[0] | (p[1] << 8);
      if (width == 4)
        id |= (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
      if (id >= static_cast<uint64_t>(limit)) {
        error =
            outOfRange(options.path, "token id", id,
                       "token " + std::to_string(first + j), info, limit, why);
        return false;
      }
      to[j] = id;
    }
  }
  return true;
}

/// A safetensors file whose tensors hold one sample a row (a leading
/// sample dim), one tensor per data input, by name.
class SampleDataset : public Dataset {
public:
  SampleDataset(const DatasetOptions &options,
                std::unique_ptr<rt::SafeTensorsReader> file)
      : options(options), file(std::move(file)) {}

  /// Checks the file holds a batch of every data input among `arguments`;
  /// false with `error` set.
  bool bind(const std::vector<tg::GraphValueInfo> &arguments,
            std::string &error);

  bool feeds(const std::string &name) const override {
    return llvm::is_contained(names, name);
  }
  bool read(const tg::GraphValueInfo &info, int64_t batch,
            const std::vector<int64_t> &offsets,
            const std::vector<int64_t> &sizes, Tensor &block,
            std::string &error) override;
  std::string summary() const override {
    return options.path + ": " + std::to_string(samples) + " samples of " +
           std::to_string(names.size()) + " tensors" +
           (options.shuffle ? ", shuffled" : "");
  }

private:
  /// The samples in the order of pass `pass` over the file: a permutation
  /// drawn from the seed and the pass (Fisher-Yates).
  const std::vector<int64_t> &orderOf(int64_t pass);

  DatasetOptions options;
  std::unique_ptr<rt::SafeTensorsReader> file;
  std::vector<std::string> names;
  int64_t samples = 0, batchSize = 0;
  std::vector<int64_t> order;
  int64_t orderPass = -1;
  std::vector<double> sample;
};

bool SampleDataset::bind(const std::vector<tg::GraphValueInfo> &arguments,
                         std::string &error) {
  const tg::GraphValueInfo *first = nullptr;
  for (const tg::GraphValueInfo &info : arguments) {
    if (info.role != tg::Role::data)
      continue;
    llvm::ArrayRef<int64_t> shape = info.type.getShape();
    if (shape.empty()) {
      error = options.path + ": " + describeInput(info) +
              " is a scalar; a dataset feeds inputs with a leading batch dim";
      return false;
    }
    const rt::TensorInfo *stored = file->find(info.name);
    if (!stored) {
      error = options.path + ": has no tensor '" + info.name + "' for " +
              describeInput(info);
      return false;
    }
    std::string where = options.path + ": tensor '" + info.name +
                        "' of shape " + shapeString(stored->shape);
    if (stored->shape.size() != shape.size() ||
        !std::equal(shape.begin() + 1, shape.end(),
                    stored->shape.begin() + 1)) {
      error = where + " has samples of shape " +
              shapeString(llvm::ArrayRef(stored->shape)
                              .drop_front(stored->shape.empty() ? 0 : 1)) +
              " but " + describeInput(info) + " takes samples of shape " +
              shapeString(shape.drop_front());
      return false;
    }
    bool floatStored =
        stored->dtype == rt::DType::F64 || stored->dtype == rt::DType::F32 ||
        stored->dtype == rt::DType::F16 || stored->dtype == rt::DType::BF16;
    if (floatStored && isa<IntegerType>(info.type.getElementType())) {
      error = where + " is " + rt::dtypeName(stored->dtype) +
              ", which cannot feed the integer " + describeInput(info) +
              " (give I64, I32 or BOOL)";
      return false;
    }
    if (stored->shape[0] < shape[0]) {
      error = where + " has " + std::to_string(stored->shape[0]) +
              " samples, fewer than one batch of " + describeInput(info);
      return false;
    }
    if (first && stored->shape[0] != samples) {
      error = where + " has " + std::to_string(stored->shape[0]) +
              " samples but tensor '" + first->name + "' has " +
              std::to_string(samples) + ": a sample is one row of each";
      return false;
    }
    if (first && shape[0] != batchSize) {
      error = options.path + ": " + describeInput(info) + " and " +
              describeInput(*first) + " take batches of different sizes";
      return false;
    }
    if (llvm::is_contained(llvm::ArrayRef(stored->shape).drop_front(), 0)) {
      error = where + " has samples of no elements, which cannot feed " +
              describeInput(info);
      return false;
    }
    first = first ? first : &info;
    samples = stored->shape[0];
    batchSize = shape[0];
    names.push_back(info.name);
  }
  if (names.empty()) {
    error = options.path + ": the module has no data inputs to feed";
    return false;
  }
  return true;
}

const std::vector<int64_t> &SampleDataset::orderOf(int64_t pass) {
  if (pass == orderPass)
    return order;
  order.resize(samples);
  for (int64_t i = 0; i < samples; ++i)
    order[i] = i;
  for (int64_t i = samples - 1; i > 0; --i)
    std::swap(order[i], order[below(draw(options.seed, pass, i), i + 1)]);
  orderPass = pass;
  return order;
}

bool SampleDataset::read(const tg::GraphValueInfo &info, int64_t batch,
                         const std::vector<int64_t> &offsets,
                         const std::vector<int64_t> &sizes, Tensor &block,
                         std::string &error) {
  std::string why;
  int64_t limit = idLimit(info, why);
  bool integer = isa<IntegerType>(info.type.getElementType());
  std::vector<int64_t> at = offsets, extent = sizes;
  extent[0] = 1;
  int64_t perSample = sizes[0] ? block.numel() / sizes[0] : 0;
  if (batch < 0) {
    error = options.path + ": batch " + std::to_string(batch) + " is negative";
    return false;
  }
  for (int64_t row = 0; row < sizes[0]; ++row) {
    // Step k takes samples [k * B, (k + 1) * B) of the file's order, or of
    // this pass's permutation, wrapping into the next pass. In 128 bits: a
    // checkpoint may resume at any batch.
    unsigned __int128 position =
        static_cast<unsigned __int128>(batch) * batchSize + offsets[0] + row;
    int64_t index = static_cast<int64_t>(position % samples);
    if (options.shuffle)
      index = orderOf(static_cast<int64_t>(position / samples))[index];
    at[0] = index;
    if (!file->readSliceAsDouble(info.name, at, extent, sample, error))
      return false;
    for (int64_t j = 0; integer && j < perSample; ++j)
      if (!(sample[j] >= 0 && sample[j] < static_cast<double>(limit))) {
        error = outOfRange(options.path, "value", sample[j],
                           "sample " + std::to_string(index) + " of tensor '" +
                               info.name + "'",
                           info, limit, why);
        return false;
      }
    std::copy(sample.begin(), sample.end(),
              block.data.begin() + row * perSample);
  }
  return true;
}

/// Whether the file `fd` starts as a safetensors file does: an 8-byte header
/// length within the file, then a JSON object.
bool looksLikeSafeTensors(int fd, uint64_t size) {
  unsigned char head[9];
  if (size < 10 || ::pread(fd, head, sizeof head, 0) != sizeof head)
    return false;
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i)
    length = (length << 8) | head[i];
  return length >= 2 && length <= size - 8 && head[8] == '{';
}

} // namespace

Dataset::~Dataset() = default;

std::unique_ptr<Dataset>
Dataset::open(const DatasetOptions &options,
              const std::vector<tg::GraphValueInfo> &arguments,
              std::string &error) {
  int fd = ::open(options.path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat status;
  if (fd < 0 || ::fstat(fd, &status) != 0) {
    error = options.path + ": cannot open the dataset: " + std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    return nullptr;
  }
  uint64_t size = static_cast<uint64_t>(status.st_size);
  // The format: --dataset-dtype says tokens; else the suffix; else the
  // content (a safetensors header, or raw uint16 ids).
  llvm::StringRef path = options.path;
  if (!options.dtype.empty() && path.ends_with(".safetensors")) {
    error = options.path + ": --dataset-dtype applies to token files; a "
                           "safetensors dataset has its tensors' dtypes";
    ::close(fd);
    return nullptr;
  }
  bool tokens =
      !options.dtype.empty() || path.ends_with(".u32.bin") ||
      (!path.ends_with(".safetensors") && !looksLikeSafeTensors(fd, size));
  if (!tokens) {
    ::close(fd);
    auto file = rt::SafeTensorsReader::open(options.path, error);
    if (!file)
      return nullptr;
    auto dataset = std::make_unique<SampleDataset>(options, std::move(file));
    if (!dataset->bind(arguments, error))
      return nullptr;
    return dataset;
  }
  unsigned width = options.dtype == "u32" ||
                           (options.dtype.empty() && path.ends_with(".u32.bin"))
                       ? 4
                       : 2;
  if (size % width != 0) {
    error = options.path + ": " + std::to_string(size) +
            " bytes is not a whole number of u" + std::to_string(8 * width) +
            " tokens (" + std::to_string(width) + " bytes each)";
    ::close(fd);
    return nullptr;
  }
  auto dataset = std::make_unique<TokenDataset>(
      options, fd, width, static_cast<int64_t>(size / width));
  if (!dataset->bind(arguments, error))
    return nullptr;
  return dataset;
}

} // namespace spmdc::runner
