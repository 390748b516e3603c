//===- SpecPlacement.cpp - a shard spec applied to a graph ----------------===//
//
// Presets first, axis by axis: every data-parallel preset shards data inputs
// on their batch dim; zero1/zero2 shard optimizer state on dim 0; zero3
// shards parameters and optimizer state on dim 0. Explicit placements then
// override per axis; optimizer state without a rule of its own follows its
// parameter's rule.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/Dist/Transforms/SpecPlacement.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Support/JsonDocument.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace spmdc::dist {

Mesh meshOf(const ShardSpec &spec) {
  Mesh mesh;
  mesh.axes.assign(spec.axes.begin(), spec.axes.end());
  mesh.shape.assign(spec.shape.begin(), spec.shape.end());
  return mesh;
}

namespace {

bool isDataParallelPreset(StringRef preset) {
  return preset == "ddp" || preset == "zero1" || preset == "zero2" ||
         preset == "zero3";
}

/// The parameter an optimizer state tensor belongs to ("w.exp_avg" -> "w").
std::string parameterOf(StringRef stateName) {
  for (StringRef suffix : {".exp_avg_sq", ".exp_avg", ".momentum_buffer"})
    if (stateName.ends_with(suffix))
      return stateName.drop_back(suffix.size()).str();
  return "";
}

class Placer {
public:
  Placer(const ShardSpec &spec, const Mesh &mesh, MLIRContext *context)
      : spec(spec), mesh(mesh), context(context) {}

  InFlightDiagnostic error(const std::string &pointer) {
    return emitError(jsonPointerLoc(*context, spec.fileName, pointer));
  }

  /// Shards `dim` of `sharding` over `axis`; failure (with an error at
  /// `pointer`) if the dim does not exist.
  LogicalResult shardOn(TensorSharding &sharding, int axis, int64_t dim,
                        const tg::GraphValueInfo &info,
                        const std::string &pointer) {
    int64_t rank = info.type.getRank();
    if (dim < -rank || dim >= rank)
      return error(pointer) << "dim " << dim << " is out of range for '"
                            << info.name << "' of rank " << rank;
    if (dim < 0)
      dim += rank;
    for (auto &axes : sharding.dims)
      llvm::erase(axes, axis);
    sharding.dims[dim].push_back(axis);
    return success();
  }

  LogicalResult applyPresets(const tg::GraphValueInfo &info,
                             TensorSharding &sharding) {
    for (auto &[axisName, preset] : spec.presets) {
      int axis = mesh.axisIndex(axisName);
      std::string pointer = "/presets/" + axisName;
      if (preset == "megatron" || preset == "sequence")
        return error(pointer) << "the '" << preset
                              << "' preset is not implemented yet";
      if (!isDataParallelPreset(preset) || info.type.getRank() == 0)
        continue;
      if (info.role == "data") {
        if (failed(shardOn(sharding, axis, spec.batchDim(info.name), info,
                           "/batch_dims")))
          return failure();
      } else if ((info.role == "state" &&
                  (preset == "zero1" || preset == "zero2" ||
                   preset == "zero3")) ||
                 (info.role == "param" && preset == "zero3")) {
        if (failed(shardOn(sharding, axis, 0, info, pointer)))
          return failure();
      }
    }
    return success();
  }

  LogicalResult applyRule(const TensorRule &rule,
                          const tg::GraphValueInfo &info,
                          TensorSharding &sharding) {
    for (auto &[axisName, placement] : rule.placements) {
      int axis = mesh.axisIndex(axisName);
      std::string pointer = rule.pointer + "/" + axisName;
      switch (placement.kind) {
      case Placement::Kind::Replicate:
        for (auto &axes : sharding.dims)
          llvm::erase(axes, axis);
        break;
      case Placement::Kind::Shard:
        if (failed(shardOn(sharding, axis, placement.dim, info, pointer)))
          return failure();
        break;
      case Placement::Kind::Partial:
        return error(pointer) << "'" << info.name
                              << "' is an input: it cannot be a partial sum "
                                 "(\"P\" is for results)";
      }
    }
    return success();
  }

  const ShardSpec &spec;
  const Mesh &mesh;
  MLIRContext *context;
};

} // namespace

FailureOr<SmallVector<TensorSharding>>
placeArguments(func::FuncOp main, const ShardSpec &spec, const Mesh &mesh) {
  Placer placer(spec, mesh, main.getContext());
  std::vector<tg::GraphValueInfo> infos = tg::getArgumentInfos(main);

  // Every exact name in the spec must be a tensor of the graph.
  llvm::StringSet<> names;
  for (const tg::GraphValueInfo &info : infos)
    names.insert(info.name);
  for (const TensorRule &rule : spec.tensors)
    if (!rule.isGlob && !names.contains(rule.pattern))
      return placer.error(rule.pointer)
             << "the graph has no tensor '" << rule.pattern << "'";

  SmallVector<TensorSharding> shardings;
  for (const tg::GraphValueInfo &info : infos) {
    TensorSharding sharding = TensorSharding::replicated(info.type.getRank());
    if (failed(placer.applyPresets(info, sharding)))
      return failure();
    const TensorRule *rule = spec.findRule(info.name);
    if (!rule && info.role == "state")
      rule = spec.findRule(parameterOf(info.name));
    if (rule && failed(placer.applyRule(*rule, info, sharding)))
      return failure();
    if (failed(sharding.localShape(info.type.getShape(), mesh)))
      return placer.error(rule ? rule->pointer : "/presets")
             << "'" << info.name << "' of shape "
             << "[" << llvm::make_range(info.type.getShape().begin(),
                                        info.type.getShape().end())
             << "] does not divide evenly into " << sharding.str(mesh)
             << " on mesh " << "[" << llvm::make_range(mesh.shape.begin(),
                                                       mesh.shape.end())
             << "]";
    shardings.push_back(std::move(sharding));
  }
  return shardings;
}

} // namespace spmdc::dist
