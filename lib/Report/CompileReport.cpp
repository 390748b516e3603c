//===- CompileReport.cpp - the --report JSON of a compiled step -----------===//

#include "spmdc/Report/CompileReport.h"
#include "CollectivePayload.h"
#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Support/Bytes.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <nlohmann/json.hpp>

using namespace mlir;

namespace spmdc {

static int64_t bytesOf(Type type) {
  return isa<RankedTensorType>(type) ? storageBytes(type) : 0;
}

/// The most bytes live at once inside `fn` beyond its arguments: each value
/// lives from its definition to its last use (results to the return).
static int64_t peakOfBody(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  llvm::DenseMap<Value, Operation *> lastUse;
  for (Operation &op : body)
    for (Value operand : op.getOperands())
      lastUse[operand] = &op;
  int64_t live = 0, peak = 0;
  for (Operation &op : body) {
    int64_t inner = 0;
    if (auto call = llvm::dyn_cast<func::CallOp>(op))
      if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
              &op, call.getCalleeAttr()))
        inner = peakOfBody(callee);
    for (Value result : op.getResults())
      live += bytesOf(result.getType());
    peak = std::max(peak, live + inner);
    for (Value operand : op.getOperands())
      if (lastUse.lookup(operand) == &op && !llvm::isa<BlockArgument>(operand))
        live -= bytesOf(operand.getType());
  }
  return peak;
}

int64_t estimatePeakMemory(ModuleOp module) {
  func::FuncOp entry = tg::getEntryFunction(module);
  if (!entry)
    return 0;
  int64_t arguments = 0;
  for (Type type : entry.getArgumentTypes())
    arguments += bytesOf(type);
  return arguments + peakOfBody(entry);
}

/// The collectives one rank runs in one step, in program order through the
/// calls of @main.
static void collectCollectives(func::FuncOp fn, const dist::Mesh &mesh,
                               nlohmann::ordered_json &out) {
  for (Operation &op : fn.getBody().front()) {
    if (auto call = llvm::dyn_cast<func::CallOp>(op)) {
      if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
              &op, call.getCalleeAttr()))
        collectCollectives(callee, mesh, out);
      continue;
    }
    auto [kind, payload, started] = collectivePayload(op);
    if (kind.empty())
      continue;
    auto axesAttr = op.getAttrOfType<ArrayAttr>("axes");
    nlohmann::ordered_json axes = nlohmann::ordered_json::array();
    for (Attribute a : axesAttr)
      axes.push_back(llvm::cast<StringAttr>(a).str());
    auto indices = mesh.axisIndices(axesAttr);
    std::string dtype;
    llvm::raw_string_ostream os(dtype);
    os << payload.getElementType();
    auto phase = op.getAttrOfType<dist::PhaseAttr>("phase");
    auto str = [&](StringRef name) {
      auto attr = op.getAttrOfType<StringAttr>(name);
      return attr ? attr.str() : std::string();
    };
    out.push_back({{"kind", kind.str()},
                   {"axes", axes},
                   {"group_size", failed(indices) ? 0 : mesh.groupSize(*indices)},
                   {"dtype", dtype},
                   {"payload_bytes", bytesOf(payload)},
                   {"phase", phase ? dist::stringifyPhase(phase.getValue()).str()
                                   : std::string()},
                   {"origin", str("origin")}});
    // Under --overlap: started here, waited for where its result is used.
    if (started)
      out.back()["started"] = true;
    // An all-reduce by max (a softmax's max over a split vocabulary) says
    // so; sums are the default.
    if (auto reduction = op.getAttrOfType<dist::ReductionAttr>("reduction");
        reduction && reduction.getValue() != dist::Reduction::sum)
      out.back()["reduction"] =
          dist::stringifyReduction(reduction.getValue()).str();
    // A group's collective (--dist-fsdp-group) lists the tensors it carries.
    if (auto tensors = op.getAttrOfType<ArrayAttr>("tensors")) {
      nlohmann::ordered_json names = nlohmann::ordered_json::array();
      for (Attribute name : tensors)
        names.push_back(llvm::cast<StringAttr>(name).str());
      out.back()["tensors"] = names;
    }
  }
}

/// The flops and bytes of one rank's step: every tg op of every function
/// once (a recomputed op counts again in @backward).
static std::pair<int64_t, int64_t> computeCost(ModuleOp module) {
  int64_t flops = 0, bytes = 0;
  module.walk([&](tg::CostOpInterface op) {
    flops += op.getFlops();
    bytes += op.getBytesAccessed();
  });
  return {flops, bytes};
}

/// Bytes of the values @forward hands to @backward, per rank.
static int64_t savedBytesPerRank(func::FuncOp entry) {
  int64_t bytes = 0;
  for (Operation &op : entry.getBody().front()) {
    auto call = llvm::dyn_cast<func::CallOp>(op);
    if (!call || call.getCallee() != "forward")
      continue;
    for (Value r : call.getResults())
      if (llvm::any_of(r.getUsers(), [](Operation *user) {
            auto c = llvm::dyn_cast<func::CallOp>(user);
            return c && c.getCallee() == "backward";
          }))
        bytes += bytesOf(r.getType());
  }
  return bytes;
}

std::string buildCompileReport(ModuleOp module, double compileMs) {
  using json = nlohmann::ordered_json;
  func::FuncOp entry = tg::getEntryFunction(module);
  int64_t paramBytes = 0, stateBytes = 0, gradBytes = 0, paramTotal = 0;
  FailureOr<dist::Mesh> mesh = dist::Mesh{};
  if (module->hasAttr(dist::kMeshAttr))
    mesh = dist::Mesh::of(module);
  // Argument types are local after sharding; the logical size of a
  // parameter is its local size times the ranks its dims are split over.
  for (auto [i, info] : llvm::enumerate(tg::getArgumentInfos(entry))) {
    int64_t local = bytesOf(info.type);
    int64_t parts = 1;
    if (auto attr = entry.getArgAttrOfType<dist::ShardingAttr>(
            i, dist::kShardingAttr))
      if (auto s = dist::TensorSharding::fromAttr(attr, *mesh,
                                                  info.type.getRank());
          succeeded(s))
        for (const auto &axes : s->dims)
          parts *= mesh->groupSize(axes);
    if (info.role == tg::Role::param) {
      paramBytes += local;
      paramTotal += local * parts;
    } else if (info.role == tg::Role::state) {
      stateBytes += local;
    }
  }
  // After autodiff every parameter has a gradient, returned (role grad) or
  // consumed by the optimizer (role param results); the optimizer reads it
  // sharded like the parameter's state (ZeRO-2 holds only its shard).
  llvm::StringMap<int64_t> stateBytesOf;
  for (const tg::GraphValueInfo &info : tg::getArgumentInfos(entry))
    if (info.role == tg::Role::state)
      stateBytesOf[info.name] = bytesOf(info.type);
  for (const tg::GraphValueInfo &info : tg::getResultInfos(entry)) {
    if (info.role != tg::Role::grad && info.role != tg::Role::param)
      continue;
    int64_t bytes = bytesOf(info.type);
    for (const char *suffix : {".exp_avg", ".momentum_buffer"})
      if (auto it = stateBytesOf.find(info.name + suffix);
          it != stateBytesOf.end())
        bytes = it->second;
    gradBytes += bytes;
  }

  json partition = nullptr;
  if (auto stats = module->getAttrOfType<DictionaryAttr>("tg.partition")) {
    partition = {
        {"policy", stats.getAs<StringAttr>("policy").str()},
        {"saved_activation_bytes",
         stats.getAs<IntegerAttr>("saved_activation_bytes").getInt()},
        {"save_all_activation_bytes",
         stats.getAs<IntegerAttr>("save_all_activation_bytes").getInt()}};
    // --grad-accum: the activation figures are one micro-batch's.
    if (auto micro = stats.getAs<IntegerAttr>("micro_batches"))
      partition["micro_batches"] = micro.getInt();
  }

  json axes = json::array(), shape = json::array();
  for (const std::string &a : mesh->axes)
    axes.push_back(a);
  for (int64_t s : mesh->shape)
    shape.push_back(s);
  json collectives = json::array();
  collectCollectives(entry, *mesh, collectives);

  // Every rank holds equal shards, so every rank's figures are the same.
  json perRank = json::array();
  int64_t peak = estimatePeakMemory(module);
  int64_t saved = savedBytesPerRank(entry);
  auto [flops, bytesAccessed] = computeCost(module);
  for (int64_t rank = 0; rank < mesh->numRanks(); ++rank)
    perRank.push_back({{"rank", rank},
                       {"param_bytes", paramBytes},
                       {"grad_bytes", gradBytes},
                       {"optimizer_state_bytes", stateBytes},
                       {"saved_activation_bytes", saved},
                       {"peak_memory_bytes", peak},
                       {"flops", flops},
                       {"bytes_accessed", bytesAccessed}});

  json report = {
      {"version", 1},
      {"nranks", mesh->numRanks()},
      {"mesh", {{"axes", axes}, {"shape", shape}}},
      {"param_bytes_total", paramTotal},
      {"partition", partition},
      {"collectives", collectives},
      {"per_rank", perRank},
      // The lowering replaces the estimate by the step's buffers' own.
      {"peak_memory_of", "tensors"},
      {"compile_ms", compileMs},
  };
  return report.dump(2) + "\n";
}

std::string withBufferPeak(const std::string &report, int64_t peakBytes,
                           DictionaryAttr peakBytesIn, ArrayAttr peakHeld) {
  nlohmann::ordered_json json = nlohmann::ordered_json::parse(report);
  nlohmann::ordered_json in = nlohmann::ordered_json::object();
  if (peakBytesIn)
    for (NamedAttribute entry : peakBytesIn)
      if (auto bytes = dyn_cast<IntegerAttr>(entry.getValue()))
        in[entry.getName().str()] = bytes.getInt();
  nlohmann::ordered_json held = nlohmann::ordered_json::array();
  if (peakHeld)
    for (auto entry : peakHeld.getAsRange<DictionaryAttr>()) {
      nlohmann::ordered_json buffer;
      buffer["name"] = entry.getAs<StringAttr>("name").str();
      if (auto function = entry.getAs<StringAttr>("function"))
        buffer["function"] = function.str();
      buffer["bytes"] = entry.getAs<IntegerAttr>("bytes").getInt();
      buffer["buffers"] = entry.getAs<IntegerAttr>("buffers").getInt();
      held.push_back(buffer);
    }
  for (auto &rank : json["per_rank"]) {
    rank["peak_memory_bytes"] = peakBytes;
    rank["peak_memory_bytes_in"] = in;
    rank["peak_buffers"] = held;
  }
  json["peak_memory_of"] = "buffers";
  return json.dump(2) + "\n";
}

} // namespace spmdc
