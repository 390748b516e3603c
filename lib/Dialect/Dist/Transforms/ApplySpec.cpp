//===- ApplySpec.cpp - a shard spec on the graph (--dist-apply-spec) ------===//
//
// Presets first, axis by axis: every data-parallel preset shards data inputs
// on their batch dim; zero1/zero2 shard optimizer state on dim 0; zero3
// shards parameters and optimizer state on dim 0. Explicit placements then
// override per axis; optimizer state without a rule of its own follows its
// parameter's rule. The result goes on @main as #dist.sharding attributes
// whose origin names the spec entry.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/Dist/Transforms/Passes.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Support/JsonDocument.h"

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <numeric>

namespace spmdc::dist {
#define GEN_PASS_DEF_DISTAPPLYSPEC
#include "spmdc/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace spmdc::dist

using namespace mlir;
using namespace spmdc;
using namespace spmdc::dist;
using spmdc::tg::typeOf;

namespace {

Mesh meshOf(const ShardSpec &spec) {
  Mesh mesh;
  mesh.axes.assign(spec.axes.begin(), spec.axes.end());
  mesh.shape.assign(spec.shape.begin(), spec.shape.end());
  return mesh;
}


/// The parameter an optimizer state tensor belongs to ("w.exp_avg" -> "w").
std::string parameterOf(StringRef stateName) {
  for (StringRef suffix : {".exp_avg_sq", ".exp_avg", ".momentum_buffer"})
    if (stateName.ends_with(suffix))
      return stateName.drop_back(suffix.size()).str();
  return "";
}

/// Where the megatron preset splits a tensor: its dim, and the parts that
/// dim is viewed as (TensorSharding::parts; 1: contiguous chunks).
struct TensorParallelDim {
  int64_t dim = 0;
  int64_t parts = 1;
};

/// The parts a column-parallel layer's `features` output features are cut
/// into by the slices that read them (through reshapes that keep the last
/// dim): 3 for a fused QKV projection sliced into q, k and v. 1 unless
/// every use is a slice of the last dim in whole parts.
int64_t slicedParts(Value output, int64_t features) {
  SmallVector<int64_t> cuts;
  SmallVector<Value> work{output};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      auto type = dyn_cast_or_null<RankedTensorType>(user->getNumResults()
                                                 ? user->getResult(0).getType()
                                                 : Type());
      if (isa<tg::ReshapeOp>(user) && type && type.getRank() > 0 &&
          type.getShape().back() == features) {
        work.push_back(user->getResult(0));
        continue;
      }
      auto slice = dyn_cast<tg::SliceOp>(user);
      int64_t rank = typeOf(v).getRank();
      if (!slice || slice.getStep() != 1 ||
          static_cast<int64_t>(slice.getStart()) < 0 ||
          *tg::normalizeDim(slice.getDim(), rank) != rank - 1)
        return 1;
      cuts.push_back(static_cast<int64_t>(slice.getStart()));
      cuts.push_back(slice.getType().getShape().back());
    }
  }
  if (cuts.empty())
    return 1;
  int64_t part = features;
  for (int64_t cut : cuts)
    part = std::gcd(part, cut);
  return features / part;
}

/// The tensor-parallel layout of the linear layers, found from the graph as
/// Megatron-LM lays it out: a linear layer (x @ W^T with W a parameter
/// [out, in], or x @ W with W [in, out] as HuggingFace's Conv1D keeps it)
/// whose input comes from no column-parallel output is column-parallel (W
/// split on its output features, with its bias); one whose input does is
/// row-parallel (W split on its input features). With `splitVocabulary`
/// the vocabulary is split too, as Megatron-LM splits GPT's: an embedding
/// table by its rows, and a column layer no row layer follows (an LM head)
/// on its output features, so that its logits stay split through the loss;
/// without, those stay whole. A column layer whose output is sliced into
/// equal parts (a fused QKV projection) is split in those parts: each rank
/// holds its heads of q, of k and of v, and the slices need no collective.
/// Maps parameter names to the dim to split.
llvm::StringMap<TensorParallelDim>
findTensorParallelLayout(func::FuncOp main, bool splitVocabulary) {
  // The linear layers sit where the loss is computed: @forward when the
  // step is partitioned.
  func::FuncOp fn = main;
  SmallVector<std::string> argNames;
  for (const tg::GraphValueInfo &info : tg::getArgumentInfos(main))
    argNames.push_back(info.role == tg::Role::param ? info.name : "");
  for (Operation &op : main.getBody().front())
    if (auto call = dyn_cast<func::CallOp>(op); call && call.getCallee() == "forward") {
      fn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      SmallVector<std::string> names;
      for (Value operand : call.getOperands()) {
        auto arg = dyn_cast<BlockArgument>(operand);
        names.push_back(arg ? argNames[arg.getArgNumber()] : "");
      }
      argNames = names;
    }
  auto paramName = [&](Value v) -> std::string {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg ? argNames[arg.getArgNumber()] : "";
  };

  struct Linear {
    tg::MatmulOp matmul;
    std::string weight, bias;
    Value output;
    /// The weight's output-feature and input-feature dims.
    int64_t outDim, inDim;
  };
  SmallVector<Linear> linears;
  for (Operation &op : fn.getBody().front()) {
    auto matmul = dyn_cast<tg::MatmulOp>(op);
    if (!matmul)
      continue;
    Value weight = matmul.getRhs();
    int64_t outDim = 1;
    if (auto transpose = weight.getDefiningOp<tg::TransposeOp>()) {
      weight = transpose.getInput();
      outDim = 0;
    }
    if (typeOf(weight).getRank() != 2 || paramName(weight).empty())
      continue;
    Linear linear{matmul, paramName(weight), "", matmul.getResult(),
                  outDim, 1 - outDim};
    if (matmul.getResult().hasOneUse())
      if (auto add = dyn_cast<tg::AddOp>(*matmul.getResult().getUsers().begin()))
        if (!paramName(add.getRhs()).empty() &&
            typeOf(add.getRhs()).getRank() == 1) {
          linear.bias = paramName(add.getRhs());
          linear.output = add.getResult();
        }
    linears.push_back(linear);
  }

  // Values computed from a column layer's output, up to the next linear
  // layer.
  llvm::DenseSet<Value> split;
  llvm::DenseSet<Operation *> linearMatmuls;
  for (const Linear &linear : linears)
    linearMatmuls.insert(linear.matmul);
  // Row-parallel layers; the others are column-parallel.
  SmallVector<bool> isRow(linears.size(), false);
  auto reaches = [&](Value from) {
    SmallVector<Value> work{from};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!split.insert(v).second)
        continue;
      for (Operation *user : v.getUsers())
        if (!linearMatmuls.contains(user) && user->getNumResults() == 1 &&
            !isa<func::ReturnOp>(user))
          work.push_back(user->getResult(0));
    }
  };
  for (auto [i, linear] : llvm::enumerate(linears)) {
    isRow[i] = split.contains(linear.matmul.getLhs());
    if (!isRow[i])
      reaches(linear.output);
  }
  llvm::StringMap<TensorParallelDim> layout;
  if (splitVocabulary)
    for (Operation &op : fn.getBody().front())
      if (auto embedding = dyn_cast<tg::EmbeddingOp>(op))
        if (std::string table = paramName(embedding.getWeight());
            !table.empty())
          layout[table] = {0, 1};
  for (auto [i, linear] : llvm::enumerate(linears)) {
    if (isRow[i]) {
      layout[linear.weight] = {linear.inDim, 1};
      continue;
    }
    // A column layer split on its output features: one that feeds a row
    // layer, or a head when the vocabulary is split.
    auto feedsRow = [&] {
      split.clear();
      reaches(linear.output);
      return llvm::any_of(llvm::enumerate(linears), [&](auto other) {
        return isRow[other.index()] &&
               split.contains(other.value().matmul.getLhs());
      });
    };
    if (!splitVocabulary && !feedsRow())
      continue;
    int64_t features = typeOf(linear.output).getShape().back();
    int64_t parts = slicedParts(linear.output, features);
    layout[linear.weight] = {linear.outDim, parts};
    if (!linear.bias.empty())
      layout[linear.bias] = {0, parts};
  }
  return layout;
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
    for (auto [d, axes] : llvm::enumerate(sharding.dims)) {
      llvm::erase(axes, axis);
      if (axes.empty())
        sharding.setParts(d, 1);
    }
    sharding.dims[dim].push_back(axis);
    // A dim in parts stays so only where the group divides each part.
    int64_t parts = sharding.partsOf(dim);
    if (parts > 1 && info.type.getDimSize(dim) %
                         (parts * mesh.groupSize(sharding.dims[dim])))
      sharding.setParts(dim, 1);
    placedBy = pointer;
    return success();
  }

  /// The dim ZeRO splits over `axis` (on top of the axes already splitting
  /// it): dim 0, as FSDP2 does, in uneven chunks where the group does not
  /// divide it; else the first dim at least as large as the group; none
  /// for a tensor too small to split (a [1, 1, d] class token on 4 ranks
  /// splits d). A dim that tensor parallelism splits is passed over (if
  /// another dim can be split) where splitting it further would pad it
  /// otherwise: its tensor-parallel blocks would then lie elsewhere than
  /// the activations' (GPT-2's vocabulary of 50,257 rows, padded to 50,258
  /// over tp = 2 but to 50,260 over tp x dp = 4), and every use would
  /// gather it whole instead of over `axis` alone.
  std::optional<int64_t> zeroDim(const TensorSharding &sharding, int axis,
                                 const tg::GraphValueInfo &info) {
    std::optional<int64_t> first;
    for (int64_t d = 0; d < info.type.getRank(); ++d) {
      if (!canSplit(sharding, axis, d, info))
        continue;
      if (!first)
        first = d;
      if (keepsPadding(sharding, axis, d, info))
        return d;
    }
    return first;
  }

  /// True if dim `d`, split over `axis` too, is padded to the size the
  /// axes already splitting it pad it to (none where they split nothing).
  bool keepsPadding(const TensorSharding &sharding, int axis, int64_t d,
                    const tg::GraphValueInfo &info) {
    if (sharding.dims[d].empty())
      return true;
    int64_t size = info.type.getDimSize(d);
    int64_t have = mesh.groupSize(sharding.dims[d]);
    int64_t more = have * mesh.shape[axis];
    return llvm::divideCeil(size, have) * have ==
           llvm::divideCeil(size, more) * more;
  }

  /// True if `axis` can split dim `d` further: every rank of the group
  /// gets at least one position. A preset leaves a dim it cannot split
  /// whole.
  bool canSplit(const TensorSharding &sharding, int axis, int64_t d,
                const tg::GraphValueInfo &info) {
    int64_t parts = mesh.shape[axis];
    for (int other : sharding.dims[d])
      parts *= mesh.shape[other];
    // A dim in parts: the group must divide each part.
    if (sharding.partsOf(d) > 1)
      return info.type.getDimSize(d) % (parts * sharding.partsOf(d)) == 0;
    return info.type.getDimSize(d) >= parts;
  }

  /// shardOn for a preset: the dim stays whole where `axis` cannot split it.
  LogicalResult shardIfSplits(TensorSharding &sharding, int axis, int64_t dim,
                              const tg::GraphValueInfo &info,
                              const std::string &pointer) {
    int64_t rank = info.type.getRank();
    int64_t d = dim < 0 ? dim + rank : dim;
    if (d >= 0 && d < rank && !canSplit(sharding, axis, d, info))
      return success();
    return shardOn(sharding, axis, dim, info, pointer);
  }

  /// Tensor-parallel presets first, data-parallel ones after: a dim split
  /// both ways is split by data parallelism within the tensor-parallel
  /// shard (the data-parallel axis minor), so that a gradient sharded by
  /// tensor parallelism reduce-scatters straight into its ZeRO shard.
  LogicalResult applyPresets(const tg::GraphValueInfo &info,
                             TensorSharding &sharding) {
    SmallVector<std::pair<std::string, Preset>> ordered;
    for (auto &[axisName, preset] : spec.presets)
      if (!isDataParallel(preset))
        ordered.push_back({axisName, preset});
    for (auto &[axisName, preset] : spec.presets)
      if (isDataParallel(preset))
        ordered.push_back({axisName, preset});
    for (auto &[axisName, preset] : ordered) {
      int axis = mesh.axisIndex(axisName);
      std::string pointer = "/presets/" + axisName;
      // Sequence parallelism: Megatron's layout, and activations split on
      // the sequence dim (the one after the batch dim) between the
      // tensor-parallel regions, starting from the data: token ids
      // [batch, seq, ...] and float inputs [batch, seq, features, ...].
      if (preset == Preset::Sequence && info.role == tg::Role::data) {
        int64_t sequenceDim = spec.batchDim(info.name) + 1;
        bool tokens = isa<IntegerType>(info.type.getElementType());
        if (info.type.getRank() > sequenceDim + (tokens ? 0 : 1) &&
            failed(shardIfSplits(sharding, axis, sequenceDim, info,
                                 "/batch_dims")))
          return failure();
        continue;
      }
      if (preset == Preset::Megatron || preset == Preset::Sequence) {
        std::string owner =
            info.role == tg::Role::state ? parameterOf(info.name) : info.name;
        auto it = tensorParallel.find(owner);
        if ((info.role == tg::Role::param || info.role == tg::Role::state) &&
            it != tensorParallel.end()) {
          int64_t dim = it->second.dim;
          if (failed(shardIfSplits(sharding, axis, dim, info, pointer)))
            return failure();
          // Heads of q, k and v together: in parts where the group divides
          // each part (otherwise contiguous, and the output is gathered
          // before the slices).
          int64_t parts = it->second.parts;
          if (parts > 1 && sharding.dims[dim] == SmallVector<int>{axis} &&
              info.type.getDimSize(dim) % (parts * mesh.shape[axis]) == 0)
            sharding.setParts(dim, parts);
        }
        continue;
      }
      if (!isDataParallel(preset) || info.type.getRank() == 0)
        continue;
      if (info.role == tg::Role::data) {
        if (failed(shardIfSplits(sharding, axis, spec.batchDim(info.name),
                                 info, "/batch_dims")))
          return failure();
      } else if ((info.role == tg::Role::state && !info.buffer &&
                  isZero(preset)) ||
                 (info.role == tg::Role::param && preset == Preset::Zero3)) {
        if (std::optional<int64_t> dim = zeroDim(sharding, axis, info))
          if (failed(shardOn(sharding, axis, *dim, info, pointer)))
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
        placedBy = pointer;
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
  /// Parameter name -> dim and parts, for the megatron preset.
  llvm::StringMap<TensorParallelDim> tensorParallel;
  /// The spec entry that last placed the tensor at hand.
  std::string placedBy;
};

struct PlacedArgument {
  TensorSharding sharding;
  /// The spec entry that placed it (a JSON pointer), empty if none did.
  std::string placedBy;
};

/// The sharding of each argument of `main`; failure with one error naming
/// the spec entry or tensor at fault.
FailureOr<SmallVector<PlacedArgument>>
placeArguments(func::FuncOp main, const ShardSpec &spec, const Mesh &mesh) {
  Placer placer(spec, mesh, main.getContext());
  if (llvm::any_of(spec.presets, [](const auto &p) {
        return p.second == Preset::Megatron || p.second == Preset::Sequence;
      }))
    // Sequence parallelism splits the data by sequence, so that the loss
    // over whole-vocabulary logits split by sequence needs no collective:
    // it keeps the vocabulary whole.
    placer.tensorParallel = findTensorParallelLayout(
        main, llvm::any_of(spec.presets, [](const auto &p) {
          return p.second == Preset::Megatron;
        }));
  std::vector<tg::GraphValueInfo> infos = tg::getArgumentInfos(main);

  // Every exact name in the spec must be a tensor of the graph.
  llvm::StringSet<> names;
  for (const tg::GraphValueInfo &info : infos)
    names.insert(info.name);
  for (const TensorRule &rule : spec.tensors)
    if (!rule.isGlob && !names.contains(rule.pattern))
      return placer.error(rule.pointer)
             << "the graph has no tensor '" << rule.pattern << "'";
  for (const auto &[pattern, dim] : spec.batchDims)
    if (StringRef(pattern).find_first_of("*?[") == StringRef::npos &&
        !names.contains(pattern))
      return placer.error("/batch_dims/" + pattern)
             << "the graph has no input '" << pattern << "'";

  SmallVector<PlacedArgument> placed;
  for (const tg::GraphValueInfo &info : infos) {
    placer.placedBy.clear();
    TensorSharding sharding = TensorSharding::replicated(info.type.getRank());
    // A hyperparameter (the learning rate) is the same on every rank:
    // presets and globs pass it by; an exact name can only replicate it.
    if (info.role == tg::Role::hyper) {
      const TensorRule *rule = spec.findRule(info.name);
      if (rule && !rule->isGlob &&
          llvm::any_of(rule->placements, [](const auto &axisPlacement) {
            return axisPlacement.second.kind != Placement::Kind::Replicate;
          }))
        return placer.error(rule->pointer)
               << "'" << info.name
               << "' is a hyperparameter of the step, replicated on every "
                  "mesh axis: the spec cannot place it";
      placed.push_back({std::move(sharding), placer.placedBy});
      continue;
    }
    if (failed(placer.applyPresets(info, sharding)))
      return failure();
    const TensorRule *rule = spec.findRule(info.name);
    if (!rule && info.role == tg::Role::state)
      rule = spec.findRule(parameterOf(info.name));
    if (rule && failed(placer.applyRule(*rule, info, sharding)))
      return failure();
    // Tensor-parallel axes major, data-parallel minor, however placed.
    for (auto &axes : sharding.dims)
      std::stable_partition(axes.begin(), axes.end(), [&](int axis) {
        auto preset = spec.presets.find(mesh.axes[axis]);
        return preset == spec.presets.end() ||
               !isDataParallel(preset->second);
      });
    placed.push_back({std::move(sharding), placer.placedBy});
  }
  return placed;
}

struct DistApplySpecPass : dist::impl::DistApplySpecBase<DistApplySpecPass> {
  using DistApplySpecBase::DistApplySpecBase;
  DistApplySpecPass(ShardSpec spec) : spec(std::move(spec)) {}

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!spec) {
      if (specFile.empty()) {
        module.emitError("--dist-apply-spec needs a shard spec (spec=FILE)");
        return signalPassFailure();
      }
      spec = readShardSpec(specFile, getContext());
      if (!spec)
        return signalPassFailure();
    }
    if (module->hasAttr(kMeshAttr) || module->hasAttr(kPlannedMeshAttr)) {
      module.emitError("the module is already sharded");
      return signalPassFailure();
    }
    func::FuncOp main = tg::getEntryFunction(module);
    if (!main)
      return signalPassFailure();
    Mesh mesh = meshOf(*spec);
    auto placed = placeArguments(main, *spec, mesh);
    if (failed(placed))
      return signalPassFailure();

    MLIRContext *ctx = &getContext();
    module->setAttr(kPlannedMeshAttr, mesh.toAttr(ctx));
    SmallVector<int> lead;
    for (auto &[axis, preset] : spec->presets)
      if (preset == Preset::Sequence)
        lead.push_back(mesh.axisIndex(axis));
    if (!lead.empty())
      module->setAttr(kParametersLeadAttr, mesh.axisNames(ctx, lead));
    auto args = tg::getArgumentInfos(main);
    for (auto [i, p] : llvm::enumerate(*placed))
      main.setArgAttr(i, kShardingAttr,
                      p.sharding.toAttr(ctx, mesh,
                                        p.placedBy.empty()
                                            ? "no spec entry: replicated"
                                            : "spec " + p.placedBy));
    // Results come back as the arguments they update went in (so sharded
    // parameters and optimizer state stay sharded across steps), gradients
    // as their parameter, the loss replicated.
    for (auto [i, r] : llvm::enumerate(tg::getResultInfos(main))) {
      if (r.role == tg::Role::loss)
        main.setResultAttr(
            i, kShardingAttr,
            TensorSharding::replicated(r.type.getRank())
                .toAttr(ctx, mesh, "the loss, replicated"));
      for (auto [j, a] : llvm::enumerate(args))
        if (a.name == r.name &&
            (a.role == r.role || (r.role == tg::Role::grad && a.role == tg::Role::param)))
          main.setResultAttr(
              i, kShardingAttr,
              (*placed)[j].sharding.toAttr(
                  ctx, mesh, "as argument '" + a.name + "' went in"));
    }
  }

  std::optional<ShardSpec> spec;
};

} // namespace

std::unique_ptr<Pass> spmdc::dist::createDistApplySpec(ShardSpec spec) {
  return std::make_unique<DistApplySpecPass>(std::move(spec));
}

void spmdc::dist::addShardPasses(OpPassManager &pm, ShardSpec spec,
                                 bool partition, FsdpGroup fsdpGroup,
                                 double bucketMiB, double aloneMiB) {
  pm.addPass(createDistApplySpec(std::move(spec)));
  pm.addPass(createDistPropagate());
  if (!partition)
    return;
  pm.addPass(createDistPartition());
  DistFsdpGroupOptions group;
  group.by = fsdpGroup;
  group.aloneMiB = aloneMiB;
  pm.addPass(createDistFsdpGroup(group));
  if (bucketMiB > 0) {
    DistBucketCollectivesOptions buckets;
    buckets.bucketMiB = bucketMiB;
    buckets.aloneMiB = aloneMiB;
    pm.addPass(createDistBucketCollectives(buckets));
  }
}
