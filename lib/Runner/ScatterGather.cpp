//===- ScatterGather.cpp - ranks' blocks and logical tensors --------------===//

#include "spmdc/Runner/ScatterGather.h"

#include "spmdc/Interpreter/Interpreter.h"
#include "spmdc/Runner/CompiledStep.h"
#include "spmdc/Runner/Inputs.h"
#include "spmdc/Runner/StepSignature.h"
#ifdef SPMDC_HAVE_MPI
#include "spmdc/Runtime/Collectives.h"
#endif

#include <spdlog/spdlog.h>

#include <cmath>
#include <numeric>

using namespace mlir;
using spmdc::interp::Shape;
using spmdc::interp::Tensor;

namespace spmdc::runner {

namespace {

/// Adds the `extent` of `block` at `from` (its origin where not given)
/// into `logical` at `offsets`.
void addBlock(Tensor &logical, const Tensor &block,
              llvm::ArrayRef<int64_t> offsets, llvm::ArrayRef<int64_t> extent,
              llvm::ArrayRef<int64_t> from = {}) {
  if (llvm::is_contained(extent, 0))
    return;
  std::vector<int64_t> strides = interp::stridesOf(logical.shape);
  std::vector<int64_t> blockStrides = interp::stridesOf(block.shape);
  std::vector<int64_t> index(extent.size(), 0);
  int64_t count = 1;
  for (int64_t size : extent)
    count *= size;
  for (int64_t i = 0; i < count; ++i) {
    int64_t flat = 0, source = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      flat += (offsets[d] + index[d]) * strides[d];
      source += ((from.empty() ? 0 : from[d]) + index[d]) * blockStrides[d];
    }
    logical.data[flat] += block.data[source];
    for (int d = static_cast<int>(index.size()) - 1; d >= 0; --d) {
      if (++index[d] < extent[d])
        break;
      index[d] = 0;
    }
  }
}

bool sameValues(const Tensor &a, const Tensor &b) {
  if (a.shape != b.shape)
    return false;
  for (size_t i = 0; i < a.data.size(); ++i)
    if (a.data[i] != b.data[i] &&
        !(std::isnan(a.data[i]) && std::isnan(b.data[i])))
      return false;
  return true;
}

/// Value `index` of every rank of the mesh, from the values of the local
/// ranks.
RankValues allRanks(const RankValues &local, size_t index,
                    const dist::Mesh &mesh, bool underMpi) {
  int64_t numRanks = mesh.numRanks();
  RankValues perRank(numRanks, std::vector<Tensor>(1));
  if (!underMpi) {
    for (int64_t rank = 0; rank < numRanks; ++rank)
      perRank[rank][0] = local[rank][index];
    return perRank;
  }
#ifdef SPMDC_HAVE_MPI
  // Blocks are the same size on every rank (dims divide evenly).
  const Tensor &block = local[0][index];
  int64_t n = block.numel();
  std::vector<double> gathered(n * numRanks);
  int64_t shape[2] = {1, n};
  std::vector<int32_t> axes(mesh.shape.size());
  std::iota(axes.begin(), axes.end(), 0);
  spmd_all_gather(block.data.data(), gathered.data(), 2, shape, 0,
                  SPMD_DTYPE_F64, axes.data(),
                  static_cast<int32_t>(axes.size()));
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    perRank[rank][0] = Tensor(block.shape);
    std::copy(gathered.begin() + rank * n, gathered.begin() + (rank + 1) * n,
              perRank[rank][0].data.begin());
  }
#endif
  return perRank;
}

/// The logical tensor of value `index` of each rank's values (see
/// Gatherer::logical).
Tensor assemble(const RankValues &perRank, size_t index, const Sharded &sharded,
                const dist::Mesh &mesh, bool f64, const std::string &label) {
  const dist::TensorSharding &sharding = sharded.sharding;
  Shape shape(sharded.logicalType.getShape().begin(),
              sharded.logicalType.getShape().end());
  Tensor logical(shape);
  llvm::SmallVector<bool> involved(mesh.axes.size(), false);
  for (int axis : sharding.shardedAxes())
    involved[axis] = true;
  for (int axis : sharding.partial)
    involved[axis] = true;
  bool warned = false;
  for (int64_t rank = 0; rank < mesh.numRanks(); ++rank) {
    // The first rank holding the same block (and summand) as `rank`.
    llvm::SmallVector<int64_t> coords = mesh.coordinates(rank);
    for (size_t axis = 0; axis < coords.size(); ++axis)
      if (!involved[axis])
        coords[axis] = 0;
    int64_t first = mesh.rankAt(coords);
    const Tensor &block = perRank[rank][index];
    if (first != rank) {
      if (!warned && !sameValues(block, perRank[first][index])) {
        spdlog::warn("{}: rank {} holds a different value than rank {}, "
                     "which should be its replica",
                     label, rank, first);
        warned = true;
      }
      continue;
    }
    // A dim in parts: each part's chunk goes to its own place.
    for (const dist::TensorSharding::Piece &piece :
         sharding.piecesOf(rank, shape, mesh))
      addBlock(logical, block, piece.offsets, piece.sizes,
               piece.localOffsets);
  }
  Type element = sharded.logicalType.getElementType();
  if (!sharding.partial.empty() && (!f64 || !llvm::isa<FloatType>(element)))
    for (double &v : logical.data)
      v = interp::roundToElementType(v, element);
  return logical;
}

/// Builds each of `localRanks`' block of argument `i` (see
/// scatterArguments).
bool scatterArgument(const StepSignature &signature, size_t i,
                     llvm::ArrayRef<int64_t> localRanks, InputBuilder &inputs,
                     bool f64, CompiledStep *compiled, RankValues &args,
                     std::string &error) {
  const dist::Mesh &mesh = signature.mesh;
  tg::GraphValueInfo logicalInfo = signature.arguments[i];
  logicalInfo.type = signature.argumentShardings[i].logicalType;
  const dist::TensorSharding &sharding = signature.argumentShardings[i].sharding;
  for (size_t k = 0; k < localRanks.size(); ++k) {
    llvm::SmallVector<int64_t> offsets, sizes;
    sharding.blockOf(localRanks[k], logicalInfo.type.getShape(), mesh,
                     offsets, sizes);
    Tensor &block = args[k][i];
    llvm::ArrayRef<int64_t> local = signature.arguments[i].type.getShape();
    // A dim in parts (a fused QKV weight): the rank's chunk of each part,
    // one after another.
    if (sharding.hasParts()) {
      Tensor whole(Shape(local.begin(), local.end()));
      for (const dist::TensorSharding::Piece &piece : sharding.piecesOf(
               localRanks[k], logicalInfo.type.getShape(), mesh)) {
        Tensor part;
        if (!inputs.build(logicalInfo,
                          {piece.offsets.begin(), piece.offsets.end()},
                          {piece.sizes.begin(), piece.sizes.end()}, part,
                          error))
          return false;
        addBlock(whole, part, piece.localOffsets, piece.sizes);
      }
      block = std::move(whole);
      offsets.assign(local.size(), 0);
      sizes.assign(local.begin(), local.end());
    }
    // A rank's whole block goes straight into the step's buffer: zeros (the
    // optimizer's state) as fresh zeroed memory, and f32 values from a file
    // or the deterministic initialisation with no f64 copy beside them
    // (GPT-2 small's 124 M parameters and AdamW state).
    if (compiled && !sharding.hasParts() && llvm::equal(sizes, local)) {
      int64_t count = 1;
      for (int64_t size : sizes)
        count *= size;
      if (inputs.isZeros(logicalInfo)) {
        compiled->zeroArgument(i, count);
        block.shape.assign(local.begin(), local.end());
        continue;
      }
      float *buffer = compiled->f32Buffer(i, count);
      InputBuilder::InPlace built =
          buffer ? inputs.buildF32InPlace(logicalInfo,
                                          {offsets.begin(), offsets.end()},
                                          {sizes.begin(), sizes.end()}, buffer,
                                          error)
                 : InputBuilder::InPlace::NotHere;
      if (built == InputBuilder::InPlace::Failed)
        return false;
      if (built == InputBuilder::InPlace::Built) {
        block.shape.assign(local.begin(), local.end());
        continue;
      }
    }
    if (!sharding.hasParts() &&
        !inputs.build(logicalInfo, {offsets.begin(), offsets.end()},
                      {sizes.begin(), sizes.end()}, block, error))
      return false;
    // A chunk that reaches into a padded dim's padding: zeros there.
    if (!llvm::equal(block.shape, local)) {
      Tensor padded(Shape(local.begin(), local.end()));
      addBlock(padded, block, llvm::SmallVector<int64_t>(local.size(), 0),
               sizes);
      block = std::move(padded);
    }
    // An f32 argument holds f32 values, whatever the file or init gave. A
    // compiled module's store into its buffers rounds the same way (a
    // cast), except through f32 for bf16, so only those are rounded here.
    Type element = signature.arguments[i].type.getElementType();
    bool roundedByStore = compiled && !element.isF16() && !element.isBF16();
    if (!f64 && !roundedByStore)
      for (double &v : block.data)
        v = interp::roundToElementType(v, element);
    if (compiled) {
      compiled->stage(i, block);
      std::vector<double>().swap(block.data);
    }
  }
  return true;
}

} // namespace

bool scatterArguments(const StepSignature &signature,
                      llvm::ArrayRef<int64_t> localRanks, InputBuilder &inputs,
                      bool f64, CompiledStep *compiled, RankValues &args,
                      std::string &error) {
  args.assign(localRanks.size(),
              std::vector<Tensor>(signature.arguments.size()));
  for (size_t i = 0; i < signature.arguments.size(); ++i)
    if (!scatterArgument(signature, i, localRanks, inputs, f64, compiled, args,
                         error))
      return false;
  return true;
}

bool rescatterArguments(const StepSignature &signature,
                        llvm::ArrayRef<size_t> indices,
                        llvm::ArrayRef<int64_t> localRanks,
                        InputBuilder &inputs, bool f64, CompiledStep *compiled,
                        RankValues &args, std::string &error) {
  for (size_t i : indices)
    if (!scatterArgument(signature, i, localRanks, inputs, f64, compiled, args,
                         error))
      return false;
  return true;
}

Tensor Gatherer::logical(const RankValues &local, size_t index,
                         const Sharded &sharded,
                         const std::string &label) const {
  return assemble(allRanks(local, index, mesh, underMpi), 0, sharded, mesh, f64,
                  label);
}

} // namespace spmdc::runner
