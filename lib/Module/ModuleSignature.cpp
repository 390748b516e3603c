//===- ModuleSignature.cpp - a step's signature for its module ------------===//

#include "spmdc/Module/ModuleSignature.h"
#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace spmdc {

static std::string dtypeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

static std::optional<rt::DType> dtypeOf(Type element) {
  if (element.isF64())
    return rt::DType::F64;
  if (element.isF32())
    return rt::DType::F32;
  if (element.isF16())
    return rt::DType::F16;
  if (element.isBF16())
    return rt::DType::BF16;
  if (element.isInteger(64))
    return rt::DType::I64;
  if (element.isInteger(32))
    return rt::DType::I32;
  if (element.isInteger(1))
    return rt::DType::Bool;
  return std::nullopt;
}

static ModuleValue toModuleValue(const tg::GraphValueInfo &info,
                                 dist::ShardingAttr shardingAttr,
                                 const std::optional<dist::Mesh> &mesh) {
  ModuleValue v;
  v.name = info.name;
  v.role = info.role ? tg::stringifyRole(*info.role).str() : "";
  v.dtype = dtypeName(info.type.getElementType());
  v.shape.assign(info.type.getShape().begin(), info.type.getShape().end());
  v.indexBound = info.indexBound;
  v.aliases = info.aliases;
  v.buffer = info.buffer;
  v.defaultValue = info.defaultValue;
  if (shardingAttr && mesh) {
    FailureOr<dist::TensorSharding> sharding = dist::TensorSharding::fromAttr(
        shardingAttr, *mesh, info.type.getRank());
    if (succeeded(sharding)) {
      for (const auto &axes : sharding->dims)
        v.shardDims.emplace_back(axes.begin(), axes.end());
      v.partialAxes.assign(sharding->partial.begin(), sharding->partial.end());
      v.logicalShape.assign(shardingAttr.getLogical().begin(),
                            shardingAttr.getLogical().end());
      v.shardParts.assign(shardingAttr.getParts().begin(),
                          shardingAttr.getParts().end());
    }
  }
  return v;
}

FailureOr<ModuleFile> moduleSignature(ModuleOp module) {
  std::optional<dist::Mesh> mesh;
  if (module->hasAttr(dist::kMeshAttr)) {
    FailureOr<dist::Mesh> programMesh = dist::Mesh::of(module);
    if (failed(programMesh))
      return failure();
    mesh = *programMesh;
  }
  func::FuncOp entry = tg::getEntryFunction(module);
  if (!entry)
    return failure();
  tg::annotateIndexBounds(entry);
  ModuleFile file;
  if (mesh) {
    file.meshAxes.assign(mesh->axes.begin(), mesh->axes.end());
    file.meshShape.assign(mesh->shape.begin(), mesh->shape.end());
  }
  unsigned index = 0;
  for (const tg::GraphValueInfo &info : tg::getArgumentInfos(entry)) {
    if (info.initialValue)
      return entry.emitError()
             << "argument '" << info.name
             << "' carries its initial value as a 'tg.init' literal: "
                "compiled modules carry initial values by reference "
                "('tg.init_ref', as spmdc imports a .pt2); run it with "
                "spmd-run --interpret";
    file.arguments.push_back(toModuleValue(
        info, entry.getArgAttrOfType<dist::ShardingAttr>(index++, dist::kShardingAttr), mesh));
    if (!info.initRef)
      continue;
    // The logical tensor, whatever block of it this argument is.
    std::optional<rt::DType> dtype = dtypeOf(info.type.getElementType());
    if (!dtype)
      return entry.emitError() << "argument '" << info.name
                               << "' has an initial value of unsupported "
                                  "element type "
                               << info.type.getElementType();
    rt::StoredTensor stored;
    stored.path = info.initRef->file;
    stored.dataOffset = info.initRef->offset;
    stored.dataBytes = info.initRef->bytes;
    stored.dtype = *dtype;
    stored.storageOffset = info.initRef->storageOffset;
    stored.strides = info.initRef->strides;
    const ModuleValue &value = file.arguments.back();
    stored.shape = value.shape;
    if (!value.logicalShape.empty())
      stored.shape = value.logicalShape;
    else if (mesh && !value.shardDims.empty())
      for (auto [size, axes] : llvm::zip(stored.shape, value.shardDims))
        for (int axis : axes)
          size *= mesh->shape[axis];
    file.initialValues.push_back({info.name, stored});
  }
  for (const tg::ConstantBufferInfo &buffer : tg::getConstantBuffers(module)) {
    std::optional<rt::DType> dtype = dtypeOf(buffer.type.getElementType());
    if (!dtype)
      continue;
    ModuleValue v;
    v.name = buffer.name;
    v.role = "buffer";
    v.dtype = dtypeName(buffer.type.getElementType());
    v.shape.assign(buffer.type.getShape().begin(), buffer.type.getShape().end());
    rt::StoredTensor stored;
    stored.path = buffer.initRef.file;
    stored.dataOffset = buffer.initRef.offset;
    stored.dataBytes = buffer.initRef.bytes;
    stored.dtype = *dtype;
    stored.shape = v.shape;
    stored.strides = buffer.initRef.strides;
    stored.storageOffset = buffer.initRef.storageOffset;
    file.constantBuffers.push_back(v);
    file.initialValues.push_back({buffer.name, stored});
  }
  index = 0;
  for (const tg::GraphValueInfo &info : tg::getResultInfos(entry))
    file.results.push_back(toModuleValue(
        info, entry.getResultAttrOfType<dist::ShardingAttr>(index++, dist::kShardingAttr), mesh));
  // The loss alone (--tg-eval-entry): its arguments are some of the step's,
  // named and typed alike.
  if (auto eval = module.lookupSymbol<func::FuncOp>("eval")) {
    std::vector<tg::GraphValueInfo> stepArguments = tg::getArgumentInfos(entry);
    for (const tg::GraphValueInfo &info : tg::getArgumentInfos(eval)) {
      auto same = llvm::find_if(stepArguments, [&](const tg::GraphValueInfo &a) {
        return a.name == info.name && a.role == info.role && a.type == info.type;
      });
      if (same == stepArguments.end())
        return eval.emitError() << "@eval's argument '" << info.name
                                << "' is none of the step's";
      file.evalArguments.push_back(same - stepArguments.begin());
    }
    file.evalEntry = eval.getSymName().str();
  }
  return file;
}

} // namespace spmdc
