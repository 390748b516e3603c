//===- dataset-fuzzer.cpp - fuzz the dataset reader -----------------------===//
//
// The first 4 bytes of the input choose the module's data inputs and the
// --dataset flags; the rest is the --dataset file, through Dataset::open as
// spmd-run opens it, then read as the ranks read it: every input it feeds,
// whole and as one rank's block (half the batch, half the sequence), for
// the first batches and one a resumed checkpoint could name.
//
//   byte 0: bits 0-1 --dataset-dtype ("", u16, u32, ""), bit 2 --shuffle,
//           bit 3 inputs only (no targets), bit 4 i32 ids (else i64),
//           bit 5 targets first, bit 6 token inputs even for a
//           safetensors file, bit 7 the seed's low bit
//   byte 1: batch size (mod 5)     byte 2: sequence length (mod 17)
//   byte 3: the ids' bound (x 257; 0: none, the dtype's range)
//
// Token inputs are "tokens" and "labels" of [batch, seq]; for a safetensors
// file (by its header) the data inputs are its tensors (4 at most), each
// [batch, its sample shape], f32 for floats, else its integer type.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"
#include "MlirFuzzSupport.h"

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Interpreter/Kernels.h"
#include "spmdc/Runner/Dataset.h"
#include "spmdc/Runtime/SafeTensors.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cstdio>
#include <cstdlib>
#include <limits>

using namespace spmdc;

namespace {

/// SPMDC_FUZZ_PRINT=1 prints why an input is refused.
void print(const std::string &error) {
  static bool enabled = std::getenv("SPMDC_FUZZ_PRINT") != nullptr;
  if (enabled && !error.empty())
    std::fprintf(stderr, "%s\n", error.c_str());
}

mlir::Type elementOf(rt::DType dtype) {
  mlir::MLIRContext &ctx = fuzz::context();
  switch (dtype) {
  case rt::DType::I64:
    return mlir::IntegerType::get(&ctx, 64);
  case rt::DType::I32:
    return mlir::IntegerType::get(&ctx, 32);
  case rt::DType::Bool:
    return mlir::IntegerType::get(&ctx, 1);
  default:
    return mlir::Float32Type::get(&ctx);
  }
}

tg::GraphValueInfo dataInput(const std::string &name,
                             llvm::ArrayRef<int64_t> shape, mlir::Type element,
                             std::optional<int64_t> bound) {
  tg::GraphValueInfo info;
  info.name = name;
  info.role = tg::Role::data;
  info.type = mlir::RankedTensorType::get(shape, element);
  if (mlir::isa<mlir::IntegerType>(element))
    info.indexBound = bound;
  return info;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4)
    return 0;
  uint8_t flags = data[0];
  int64_t batch = data[1] % 5, seq = data[2] % 17;
  std::optional<int64_t> bound;
  if (data[3])
    bound = int64_t(data[3]) * 257;
  fuzz::MemoryFile file(data + 4, size - 4);
  if (!file.ok())
    return 0;

  runner::DatasetOptions options;
  options.path = file.path();
  const char *dtypes[] = {"", "u16", "u32", ""};
  options.dtype = dtypes[flags & 3];
  options.shuffle = flags & 4;
  options.seed = flags >> 7;

  // The module's arguments: a parameter, then the data inputs.
  std::vector<tg::GraphValueInfo> arguments;
  tg::GraphValueInfo param;
  param.name = "w";
  param.role = tg::Role::param;
  param.type = mlir::RankedTensorType::get(
      {2}, mlir::Float32Type::get(&fuzz::context()));
  arguments.push_back(param);
  std::string error;
  std::unique_ptr<rt::SafeTensorsReader> samples;
  if (!(flags & 64))
    samples = rt::SafeTensorsReader::open(file.path(), error);
  if (samples) {
    for (const rt::TensorInfo &info : samples->tensors()) {
      if (info.shape.empty() || arguments.size() > 4)
        continue;
      std::vector<int64_t> shape = info.shape;
      shape[0] = batch;
      if (interp::numElements(shape) > 4096)
        continue;
      arguments.push_back(
          dataInput(info.name, shape, elementOf(info.dtype), bound));
    }
  } else {
    mlir::Type ids =
        mlir::IntegerType::get(&fuzz::context(), flags & 16 ? 32 : 64);
    tg::GraphValueInfo tokens = dataInput("tokens", {batch, seq}, ids, bound);
    tg::GraphValueInfo labels = dataInput("labels", {batch, seq}, ids, bound);
    if (flags & 32)
      std::swap(tokens, labels);
    arguments.push_back(tokens);
    if (!(flags & 8))
      arguments.push_back(labels);
  }

  std::unique_ptr<runner::Dataset> dataset =
      runner::Dataset::open(options, arguments, error);
  if (!dataset) {
    print(error);
    return 0;
  }
  (void)dataset->summary();
  for (int64_t step : {int64_t(0), int64_t(1), int64_t(7),
                       std::numeric_limits<int64_t>::max() / 3}) {
    for (const tg::GraphValueInfo &info : arguments) {
      if (!dataset->feeds(info.name))
        continue;
      std::vector<int64_t> shape(info.type.getShape().begin(),
                                 info.type.getShape().end());
      interp::Tensor whole(shape);
      if (!dataset->read(info, step, std::vector<int64_t>(shape.size(), 0),
                         shape, whole, error)) {
        print(error);
        continue;
      }
      // One rank's block: the second half of the batch and, for tokens, of
      // the sequence.
      std::vector<int64_t> offsets(shape.size(), 0), sizes = shape;
      for (size_t d = 0; d < shape.size() && d < 2; ++d) {
        offsets[d] = shape[d] / 2;
        sizes[d] = shape[d] - offsets[d];
      }
      interp::Tensor block(sizes);
      if (!dataset->read(info, step, offsets, sizes, block, error))
        print(error);
    }
  }
  return 0;
}
