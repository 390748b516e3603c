//===- checkpoint-fuzzer.cpp - fuzz the checkpoint reader -----------------===//
//
// Bytes as a checkpoint directory (docs/tools.md): the input is split at
// each "\0SHARD\0" into the step folder's index.json and its shard files
// rank-0.safetensors, rank-1.safetensors, ... (16 at most), written to a
// temporary D/step-000001/ (with D/latest naming it for odd-sized inputs,
// else the folder is found by its name). Then what spmd-run does with D:
// Checkpoint::open, --export-params (exportParams to /dev/null), and
// --resume's reads (Checkpoint::read of each tensor the index lists, whole
// and a block of it, as a rank of another mesh reads).
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Interpreter/Kernels.h"
#include "spmdc/Runner/Checkpoint.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

using namespace spmdc;

namespace {

const llvm::StringRef kSeparator("\0SHARD\0", 7);
constexpr size_t kMaxShards = 16;

/// The checkpoint directory of this process, made once (in /dev/shm where
/// there is one) and removed at exit.
const std::string &directory() {
  // Never destroyed: the exit handler that removes it runs after the
  // destructors of statics made before it was registered.
  static const std::string *path = [] {
    spdlog::set_level(spdlog::level::off);
    std::string base =
        llvm::sys::fs::is_directory("/dev/shm")
            ? "/dev/shm"
            : (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
    auto *pattern = new std::string(base + "/spmdc-checkpoint-fuzz-XXXXXX");
    if (!::mkdtemp(pattern->data()))
      std::abort();
    std::atexit([] { llvm::sys::fs::remove_directories(directory()); });
    return pattern;
  }();
  return *path;
}

/// SPMDC_FUZZ_PRINT=1 prints why an input is refused.
void print(const std::string &error) {
  static bool enabled = std::getenv("SPMDC_FUZZ_PRINT") != nullptr;
  if (enabled && !error.empty())
    std::fprintf(stderr, "%s\n", error.c_str());
}

bool writeFile(const std::string &path, llvm::StringRef bytes) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &dir = directory();
  std::string folder = dir + "/step-000001";
  llvm::sys::fs::remove_directories(folder);
  llvm::sys::fs::remove(dir + "/latest");
  if (llvm::sys::fs::create_directory(folder))
    return 0;

  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(reinterpret_cast<const char *>(data), size)
      .split(parts, kSeparator, kMaxShards + 1);
  if (!writeFile(folder + "/index.json", parts[0]))
    return 0;
  for (size_t i = 1; i < parts.size(); ++i)
    if (!writeFile(folder + "/rank-" + std::to_string(i - 1) + ".safetensors",
                   parts[i]))
      return 0;
  if (size % 2 && !writeFile(dir + "/latest", "step-000001\n"))
    return 0;

  std::string error;
  std::unique_ptr<runner::Checkpoint> checkpoint =
      runner::Checkpoint::open(dir, error);
  if (!checkpoint) {
    print(error);
    return 0;
  }
  (void)checkpoint->meshDescription();
  (void)checkpoint->bytesStored();
  if (!checkpoint->exportParams("/dev/null", error))
    print(error);

  // --resume: each tensor the index lists, read as a rank whose module has
  // its shape (checkCompatible has passed) would read it.
  llvm::Expected<llvm::json::Value> index = llvm::json::parse(parts[0]);
  if (!index) {
    llvm::consumeError(index.takeError());
    return 0;
  }
  const llvm::json::Object *tensors =
      index->getAsObject() ? index->getAsObject()->getObject("tensors")
                           : nullptr;
  if (!tensors)
    return 0;
  for (const auto &[key, value] : *tensors) {
    const llvm::json::Object *tensor = value.getAsObject();
    tg::GraphValueInfo info;
    if (!tensor || !tensor->getString("role") || !tensor->getString("name"))
      continue;
    info.role = tg::symbolizeRole(*tensor->getString("role"));
    info.name = tensor->getString("name")->str();
    if (!info.role || !checkpoint->holds(info))
      continue;
    // Open checked the shape; the harness sizes the rank's block by it.
    std::vector<int64_t> shape, offsets, sizes;
    if (const llvm::json::Array *dims = tensor->getArray("shape"))
      for (const llvm::json::Value &dim : *dims)
        shape.push_back(dim.getAsInteger().value_or(0));
    if (interp::numElements(shape) > (int64_t(1) << 22))
      continue;
    interp::Tensor whole(shape);
    if (!checkpoint->read(info, std::vector<int64_t>(shape.size(), 0), shape,
                          whole, error))
      print(error);
    for (int64_t d : shape) {
      offsets.push_back(d / 4);
      sizes.push_back(d / 2);
    }
    interp::Tensor block(sizes);
    if (!checkpoint->read(info, offsets, sizes, block, error))
      print(error);
  }
  return 0;
}
