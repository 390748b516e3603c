//===- StepSignature.cpp - a step's values and their shardings ------------===//

#include "spmdc/Runner/StepSignature.h"

#include "spmdc/Module/ModuleFile.h"
#include "spmdc/Runtime/Limits.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace spmdc::runner {

namespace {

/// `local`, a block of `sharding` on `mesh`, with the logical type it is a
/// block of.
Sharded shardedOf(dist::TensorSharding sharding, RankedTensorType local,
                  const dist::Mesh &mesh, llvm::ArrayRef<int64_t> logical) {
  llvm::SmallVector<int64_t> shape(local.getShape());
  // Saturating: checkSizes refuses what overflows.
  for (auto [d, axes] : llvm::enumerate(sharding.dims)) {
    if (__builtin_mul_overflow(shape[d], mesh.groupSize(axes), &shape[d]))
      shape[d] = INT64_MAX;
    // A padded dim: the local chunks tile the padded size.
    if (!logical.empty() && logical[d] != shape[d])
      sharding.setPadded(d, shape[d]);
  }
  if (!logical.empty())
    shape.assign(logical.begin(), logical.end());
  return Sharded{sharding,
                 RankedTensorType::get(shape, local.getElementType())};
}

/// Reads an argument's or result's `dist.sharding` (absent: replicated);
/// nullopt with `error` set when it is malformed.
std::optional<Sharded> readSharding(dist::ShardingAttr attr,
                                    const tg::GraphValueInfo &info,
                                    const std::string &what,
                                    const dist::Mesh &mesh, bool hasMesh,
                                    std::string &error) {
  std::string place = what + " '" + info.name + "'";
  RankedTensorType local = info.type;
  if (!attr)
    return Sharded{dist::TensorSharding::replicated(local.getRank()), local};
  auto describeAttr = [&] {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << attr;
    return text;
  };
  if (!hasMesh) {
    error = place + " has a '" + dist::kShardingAttr.str() +
            "' but the module has no '" + dist::kMeshAttr.str() + "'";
    return std::nullopt;
  }
  FailureOr<dist::TensorSharding> sharding =
      dist::TensorSharding::fromAttr(attr, mesh, local.getRank());
  if (failed(sharding)) {
    error = place + " has a malformed '" + dist::kShardingAttr.str() + "' " +
            describeAttr() +
            ": expected one list of the mesh's axes per dim";
    return std::nullopt;
  }
  llvm::SmallVector<int> used = sharding->shardedAxes();
  used.append(sharding->partial.begin(), sharding->partial.end());
  llvm::SmallVector<bool> seen(mesh.axes.size(), false);
  for (int axis : used) {
    if (seen[axis]) {
      error = place + " uses mesh axis '" + mesh.axes[axis] +
              "' twice in its sharding " + sharding->str(mesh);
      return std::nullopt;
    }
    seen[axis] = true;
  }
  if (!attr.getLogical().empty() &&
      !dist::isValidPadding(*sharding, local.getShape(), attr.getLogical(),
                            mesh)) {
    error = place + " has a logical shape in its '" +
            dist::kShardingAttr.str() + "' " + describeAttr() +
            " that its local shape does not pad";
    return std::nullopt;
  }
  return shardedOf(*sharding, local, mesh, attr.getLogical());
}

/// A module value's name, role and local type; false with `error` set for
/// a dtype the runner does not know.
bool readModuleValues(const std::vector<ModuleValue> &values,
                      MLIRContext &context,
                      std::vector<tg::GraphValueInfo> &infos,
                      std::string &error) {
  for (const ModuleValue &value : values) {
    Type element = parseType(value.dtype, &context);
    if (!element || !dtypeOf(element)) {
      error = "value '" + value.name + "' has an unknown dtype '" +
              value.dtype + "'";
      return false;
    }
    tg::GraphValueInfo info;
    info.name = value.name;
    info.role = tg::symbolizeRole(value.role);
    if (!info.role) {
      error = "value '" + value.name + "' has an unknown role '" +
              value.role + "'";
      return false;
    }
    info.type = RankedTensorType::get(value.shape, element);
    info.indexBound = value.indexBound;
    info.aliases = value.aliases;
    info.buffer = value.buffer;
    info.defaultValue = value.defaultValue;
    infos.push_back(std::move(info));
  }
  return true;
}

/// A module value's sharding, checked against the mesh, and its logical
/// type; nullopt if it is malformed.
std::optional<Sharded> moduleSharding(const ModuleValue &value,
                                      RankedTensorType local,
                                      const dist::Mesh &mesh) {
  dist::TensorSharding sharding =
      dist::TensorSharding::replicated(local.getRank());
  if (!value.shardDims.empty() || !value.partialAxes.empty()) {
    if (value.shardDims.size() != static_cast<size_t>(local.getRank()))
      return std::nullopt;
    for (auto [dim, axes] : llvm::enumerate(value.shardDims))
      sharding.dims[dim].assign(axes.begin(), axes.end());
    if (!value.shardParts.empty() &&
        value.shardParts.size() != value.shardDims.size())
      return std::nullopt;
    for (auto [dim, parts] : llvm::enumerate(value.shardParts))
      sharding.setParts(dim, parts);
    sharding.partial.assign(value.partialAxes.begin(), value.partialAxes.end());
  }
  for (int axis : sharding.shardedAxes())
    if (axis < 0 || axis >= static_cast<int>(mesh.axes.size()))
      return std::nullopt;
  for (int axis : sharding.partial)
    if (axis < 0 || axis >= static_cast<int>(mesh.axes.size()))
      return std::nullopt;
  if (!value.logicalShape.empty() &&
      !dist::isValidPadding(sharding, local.getShape(), value.logicalShape,
                            mesh))
    return std::nullopt;
  return shardedOf(sharding, local, mesh, value.logicalShape);
}

bool readModuleShardings(const std::vector<ModuleValue> &values,
                         const std::vector<tg::GraphValueInfo> &infos,
                         const dist::Mesh &mesh, std::vector<Sharded> &out,
                         std::string &error) {
  for (auto [value, info] : llvm::zip(values, infos)) {
    std::optional<Sharded> sharded = moduleSharding(value, info.type, mesh);
    if (!sharded) {
      error = "value '" + value.name + "' has a malformed sharding";
      return false;
    }
    out.push_back(std::move(*sharded));
  }
  return true;
}

/// Every value's logical tensor within --max-tensor-bytes, before any is
/// made (the runner builds, reads and gathers them).
bool checkSizes(const std::vector<tg::GraphValueInfo> &infos,
                const std::vector<Sharded> &shardings, const char *what,
                std::string &error) {
  for (auto [info, sharded] : llvm::zip(infos, shardings)) {
    RankedTensorType type = sharded.logicalType;
    std::optional<rt::DType> dtype = dtypeOf(type.getElementType());
    uint64_t bytes;
    std::string sizeError;
    if (dtype && !rt::checkTensorSize(std::vector<int64_t>(
                                          type.getShape().begin(),
                                          type.getShape().end()),
                                      rt::dtypeSize(*dtype), bytes, sizeError)) {
      error = std::string(what) + " '" + info.name + "': " + sizeError;
      return false;
    }
  }
  return true;
}

} // namespace

bool readModuleMesh(const ModuleFile &file, dist::Mesh &mesh) {
  for (size_t axis = 0; axis < file.meshAxes.size(); ++axis) {
    mesh.axes.push_back(file.meshAxes[axis]);
    mesh.shape.push_back(axis < file.meshShape.size() ? file.meshShape[axis]
                                                      : 0);
  }
  return file.meshShape.size() == file.meshAxes.size() &&
         llvm::none_of(mesh.shape, [](int64_t size) { return size < 1; });
}

bool readModuleSignature(const ModuleFile &file, MLIRContext &context,
                         StepSignature &signature, std::string &error) {
  return readModuleValues(file.arguments, context, signature.arguments,
                          error) &&
         readModuleValues(file.results, context, signature.results, error) &&
         readModuleShardings(file.arguments, signature.arguments,
                             signature.mesh, signature.argumentShardings,
                             error) &&
         readModuleShardings(file.results, signature.results, signature.mesh,
                             signature.resultShardings, error) &&
         checkSizes(signature.arguments, signature.argumentShardings,
                    "argument", error) &&
         checkSizes(signature.results, signature.resultShardings, "result",
                    error);
}

bool readProgramSignature(func::FuncOp entry, bool hasMesh,
                          StepSignature &signature, std::string &error) {
  signature.arguments = tg::getArgumentInfos(entry);
  signature.results = tg::getResultInfos(entry);
  const dist::Mesh &mesh = signature.mesh;
  // A program not yet partitioned (--emit=propagate) only plans shardings:
  // it still means the single-device step.
  bool planned = entry->getParentOfType<ModuleOp>()->hasAttr(
      dist::kPlannedMeshAttr);
  auto shardingOf = [&](dist::ShardingAttr attr) {
    return planned && !hasMesh ? dist::ShardingAttr() : attr;
  };
  for (size_t i = 0; i < signature.arguments.size(); ++i) {
    const tg::GraphValueInfo &info = signature.arguments[i];
    auto sharding = readSharding(
        shardingOf(entry.getArgAttrOfType<dist::ShardingAttr>(
            i, dist::kShardingAttr)),
        info,
        "argument", mesh, hasMesh, error);
    if (!sharding)
      return false;
    if (!sharding->sharding.partial.empty()) {
      error = "argument '" + info.name + "' is partial (" +
              sharding->sharding.str(mesh) +
              "): an input must be replicated or sharded";
      return false;
    }
    signature.argumentShardings.push_back(std::move(*sharding));
  }
  for (size_t i = 0; i < signature.results.size(); ++i) {
    auto sharding = readSharding(
        shardingOf(entry.getResultAttrOfType<dist::ShardingAttr>(
            i, dist::kShardingAttr)),
        signature.results[i], "result", mesh, hasMesh, error);
    if (!sharding)
      return false;
    signature.resultShardings.push_back(std::move(*sharding));
  }
  return checkSizes(signature.arguments, signature.argumentShardings,
                    "argument", error) &&
         checkSizes(signature.results, signature.resultShardings, "result",
                    error);
}

std::string describe(RankedTensorType type, const Sharded &sharded,
                     const dist::Mesh &mesh) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type << " " << sharded.sharding.str(mesh);
  return text;
}

std::optional<rt::DType> dtypeOf(Type element) {
  using rt::DType;
  if (element.isF64())
    return DType::F64;
  if (element.isF32())
    return DType::F32;
  if (element.isF16())
    return DType::F16;
  if (element.isBF16())
    return DType::BF16;
  if (element.isInteger(64))
    return DType::I64;
  if (element.isInteger(32))
    return DType::I32;
  if (element.isInteger(1))
    return DType::Bool;
  return std::nullopt;
}

} // namespace spmdc::runner
