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

static ModuleValue toModuleValue(const tg::GraphValueInfo &info,
                                 DictionaryAttr shardingAttr,
                                 const std::optional<dist::Mesh> &mesh) {
  ModuleValue v;
  v.name = info.name;
  v.role = info.role;
  v.dtype = dtypeName(info.type.getElementType());
  v.shape.assign(info.type.getShape().begin(), info.type.getShape().end());
  v.indexBound = info.indexBound;
  if (shardingAttr && mesh) {
    FailureOr<dist::TensorSharding> sharding = dist::TensorSharding::fromAttr(
        shardingAttr, *mesh, info.type.getRank());
    if (succeeded(sharding)) {
      for (const auto &axes : sharding->dims)
        v.shardDims.emplace_back(axes.begin(), axes.end());
      v.partialAxes.assign(sharding->partial.begin(), sharding->partial.end());
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
             << "parameter '" << info.name
             << "' carries its initial weights (a torch.export model): "
                "compiled modules do not carry weights yet; run it with "
                "spmd-run --interpret";
    file.arguments.push_back(toModuleValue(
        info, entry.getArgAttrOfType<DictionaryAttr>(index++, dist::kShardingAttr), mesh));
  }
  index = 0;
  for (const tg::GraphValueInfo &info : tg::getResultInfos(entry))
    file.results.push_back(toModuleValue(
        info, entry.getResultAttrOfType<DictionaryAttr>(index++, dist::kShardingAttr), mesh));
  return file;
}

} // namespace spmdc
