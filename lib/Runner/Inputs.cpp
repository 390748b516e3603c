//===- Inputs.cpp - the step's logical inputs, block by block -------------===//

#include "spmdc/Runner/Inputs.h"

#include "spmdc/Interpreter/Kernels.h"
#include "spmdc/Runner/Checkpoint.h"
#include "spmdc/Runner/Dataset.h"
#include "spmdc/Runner/StepSignature.h"
#include "spmdc/Runtime/Init.h"
#include "spmdc/Runtime/ParallelFor.h"
#include "spmdc/Runtime/SafeTensors.h"
#include "spmdc/Runtime/StoredTensor.h"
#include "spmdc/Support/ShapeString.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using spmdc::interp::Tensor;

namespace spmdc::runner {

InputBuilder::InputBuilder(uint64_t seed) : seed(seed) {}

InputBuilder::~InputBuilder() = default;

bool InputBuilder::openFiles(const std::string &paramsPath,
                             const std::string &dataPath, std::string &error) {
  if (!paramsPath.empty() &&
      !(params = rt::SafeTensorsReader::open(paramsPath, error)))
    return false;
  if (!dataPath.empty() &&
      !(data = rt::SafeTensorsReader::open(dataPath, error)))
    return false;
  return true;
}

bool InputBuilder::build(const tg::GraphValueInfo &info,
                         const std::vector<int64_t> &offsets,
                         const std::vector<int64_t> &sizes, Tensor &block,
                         std::string &error) {
  std::vector<int64_t> shape(info.type.getShape().begin(),
                             info.type.getShape().end());
  if (info.type.getNumElements() > (int64_t(1) << 30)) {
    error = "input '" + info.name + "' has " +
            std::to_string(info.type.getNumElements()) +
            " elements; spmd-run holds up to 2^30 per tensor";
    return false;
  }
  block = Tensor(sizes);
  Source source = sourceOf(info);
  if (source == Source::Dataset)
    return dataset->read(info, batch, offsets, sizes, block, error);
  if (source == Source::Checkpoint)
    return checkpoint->read(info, offsets, sizes, block, error);
  if (isStored(source)) {
    rt::StoredTensor stored;
    if (!storedTensor(info, source, stored, error))
      return false;
    if (rt::readStoredBlock(stored, offsets, sizes, block.data, error))
      return true;
    explainReadError(info, source, error);
    return false;
  }
  // Weights the program carries as a literal.
  if (source == Source::Literal) {
    auto dense = llvm::dyn_cast<DenseElementsAttr>(info.initialValue);
    if (!dense) {
      error = "parameter '" + info.name + "' has an unreadable initial value";
      return false;
    }
    auto initShape = dense.getType().getShape();
    if (std::vector<int64_t>(initShape.begin(), initShape.end()) != shape) {
      error = "parameter '" + info.name + "' has an initial value of shape " +
              shapeString(initShape) + " but the program expects " +
              shapeString(shape);
      return false;
    }
    Tensor logical(shape);
    size_t i = 0;
    if (llvm::isa<FloatType>(dense.getElementType()))
      for (const APFloat &v : dense.getValues<APFloat>())
        logical.data[i++] = v.convertToDouble();
    else
      for (const APInt &v : dense.getValues<APInt>())
        logical.data[i++] = static_cast<double>(v.getSExtValue());
    block = logical;
    for (size_t d = 0; d < sizes.size(); ++d)
      if (sizes[d] != shape[d])
        block = interp::slice(block, d, offsets[d], offsets[d] + sizes[d], 1);
    return true;
  }
  // A --params file must hold every parameter: a missing one is far more
  // likely a wrong file than a wish for random values.
  if (source == Source::Missing) {
    error = params->path() + ": has no tensor '" + info.name + "'";
    return false;
  }
  int kind;
  int64_t bound;
  if (!initKindOf(info, kind, bound, error))
    return false;
  spmd_init_block(seed, info.name.c_str(), shape.data(),
                  static_cast<int32_t>(shape.size()), kind, bound,
                  offsets.data(), sizes.data(), block.data.data());
  return true;
}

bool InputBuilder::initKindOf(const tg::GraphValueInfo &info, int &kind,
                              int64_t &bound, std::string &error) const {
  kind = SPMD_INIT_ZERO;
  bound = 0;
  if (info.role == tg::Role::param) {
    kind = SPMD_INIT_PARAM;
  } else if (info.role == tg::Role::data) {
    if (llvm::isa<FloatType>(info.type.getElementType())) {
      kind = SPMD_INIT_DATA;
    } else if (info.type.getElementType().isInteger(1)) {
      kind = SPMD_INIT_INDEX;
      bound = 2;
    } else if (info.indexBound) {
      kind = SPMD_INIT_INDEX;
      bound = *info.indexBound;
    } else {
      error = "integer input '" + info.name +
              "' has no known range (no embedding or loss uses it): give "
              "it in --data";
      return false;
    }
  }
  return true;
}

InputBuilder::Source InputBuilder::sourceOf(const tg::GraphValueInfo &info) const {
  if (info.role == tg::Role::data && dataset && dataset->feeds(info.name))
    return Source::Dataset;
  if (checkpoint && checkpoint->holds(info))
    return Source::Checkpoint;
  rt::SafeTensorsReader *file =
      info.role == tg::Role::data ? data.get() : params.get();
  if (file && file->find(info.name))
    return Source::File;
  bool initialized =
      info.role == tg::Role::param || info.role == tg::Role::state;
  if (initialized && moduleWeights && moduleWeights->find(info.name))
    return Source::ModuleWeights;
  if (info.initRef)
    return Source::InitRef;
  if (info.initialValue)
    return Source::Literal;
  if (file && info.role == tg::Role::param)
    return Source::Missing;
  return Source::Init;
}

void InputBuilder::explainReadError(const tg::GraphValueInfo &info,
                                    Source source, std::string &error) {
  if (source == Source::InitRef)
    error = "the initial value of '" + info.name + "' (" +
            info.initRef->entry + "): " + error;
}

bool InputBuilder::storedTensor(const tg::GraphValueInfo &info, Source source,
                                rt::StoredTensor &stored,
                                std::string &error) const {
  std::vector<int64_t> shape(info.type.getShape().begin(),
                             info.type.getShape().end());
  if (source == Source::InitRef) {
    // Initial values the program refers to, read in place from their file.
    std::optional<rt::DType> dtype = dtypeOf(info.type.getElementType());
    if (!dtype) {
      error = "'" + info.name + "' has an initial value of an unsupported "
              "dtype";
      return false;
    }
    stored.path = info.initRef->file;
    stored.dataOffset = info.initRef->offset;
    stored.dataBytes = info.initRef->bytes;
    stored.dtype = *dtype;
    stored.shape = shape;
    stored.strides = info.initRef->strides;
    stored.storageOffset = info.initRef->storageOffset;
    return true;
  }
  // A --params or --data file, or the initial values a module carries (a
  // torch.export archive's weights), which must have the logical shape.
  rt::SafeTensorsReader &file =
      source == Source::ModuleWeights ? *moduleWeights
      : info.role == tg::Role::data   ? *data
                                      : *params;
  const rt::TensorInfo *entry = file.find(info.name);
  if (entry->shape != shape) {
    error = file.path() + ": tensor '" + info.name + "' has shape " +
            shapeString(entry->shape) + " but the program expects " +
            shapeString(shape);
    return false;
  }
  stored = file.stored(*entry);
  return true;
}

bool InputBuilder::isZeros(const tg::GraphValueInfo &info) const {
  int kind;
  int64_t bound;
  std::string unused;
  return sourceOf(info) == Source::Init &&
         initKindOf(info, kind, bound, unused) && kind == SPMD_INIT_ZERO;
}

InputBuilder::InPlace InputBuilder::buildF32InPlace(
    const tg::GraphValueInfo &info, const std::vector<int64_t> &offsets,
    const std::vector<int64_t> &sizes, float *out, std::string &error) const {
  if (info.type.getNumElements() > (int64_t(1) << 30))
    return InPlace::NotHere;
  Source source = sourceOf(info);
  if (isStored(source)) {
    rt::StoredTensor stored;
    if (!storedTensor(info, source, stored, error))
      return InPlace::Failed;
    if (rt::readStoredBlockF32(stored, offsets, sizes, out, threads, error))
      return InPlace::Built;
    explainReadError(info, source, error);
    return InPlace::Failed;
  }
  int kind;
  int64_t bound;
  std::string unused;
  if (source != Source::Init || !initKindOf(info, kind, bound, unused))
    return InPlace::NotHere;
  std::vector<int64_t> shape(info.type.getShape().begin(),
                             info.type.getShape().end());
  int64_t count = 1;
  for (int64_t size : sizes)
    count *= size;
  // A large block on the rank's threads, in slabs of its first dim: each
  // value depends only on its logical index, so the split changes none.
  // (GPT-2 small's 124 M parameters and AdamW state: 0.7 s on one thread.)
  constexpr int64_t kParallelElements = int64_t(1) << 20;
  if (threads <= 1 || sizes.empty() || sizes[0] < 2 ||
      count < kParallelElements) {
    spmd_init_block_f32(seed, info.name.c_str(), shape.data(),
                        static_cast<int32_t>(shape.size()), kind, bound,
                        offsets.data(), sizes.data(), out);
    return InPlace::Built;
  }
  struct Slabs {
    uint64_t seed;
    const char *name;
    const std::vector<int64_t> &shape, &offsets, &sizes;
    int kind;
    int64_t bound, slabElements;
    float *out;
  } slabs{seed,  info.name.c_str(), shape, offsets, sizes, kind, bound,
          count / sizes[0], out};
  rt::parallelChunks(
      [](void *ctx, int64_t first, int64_t last) {
        auto &s = *static_cast<Slabs *>(ctx);
        std::vector<int64_t> offsets = s.offsets, sizes = s.sizes;
        offsets[0] += first;
        sizes[0] = last - first;
        spmd_init_block_f32(s.seed, s.name, s.shape.data(),
                            static_cast<int32_t>(s.shape.size()), s.kind,
                            s.bound, offsets.data(), sizes.data(),
                            s.out + first * s.slabElements);
      },
      &slabs, sizes[0], threads);
  return InPlace::Built;
}

} // namespace spmdc::runner
