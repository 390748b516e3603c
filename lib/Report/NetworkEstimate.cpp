//===- NetworkEstimate.cpp - a step-time estimate for a network -----------===//
//
// Replays one rank's step in program order: each tg op takes its flops over
// the rank's rate (or, with a memory bandwidth, the longer of that and its
// bytes over the bandwidth), each collective the ring algorithm's alpha-beta
// cost over its group. Format and model: docs/report.md#network-estimate.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Report/NetworkEstimate.h"
#include "CollectivePayload.h"
#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Support/Bytes.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>

using namespace mlir;

namespace spmdc {

/// The most ranks an estimate may be for (the mesh's own limit, 2^20).
static constexpr int64_t kMaxRanks = int64_t(1) << 20;

void NetworkSettings::overrideWith(const NetworkSettings &other) {
  if (other.alphaUs)
    alphaUs = other.alphaUs;
  if (other.gbps)
    gbps = other.gbps;
  if (other.gflops)
    gflops = other.gflops;
  if (other.membw)
    membw = other.membw;
  if (other.ranks)
    ranks = other.ranks;
}

std::string NetworkSettings::missingKeys() const {
  llvm::SmallVector<llvm::StringRef> missing;
  if (!alphaUs)
    missing.push_back("alpha-us");
  if (!gbps)
    missing.push_back("gbps");
  if (!gflops)
    missing.push_back("flops");
  return llvm::join(missing, ", ");
}

std::string checkNetworkSetting(llvm::StringRef key, double value) {
  if (!std::isfinite(value))
    return key.str() + " must be finite";
  if (key == "alpha-us")
    return value >= 0 ? ""
                      : "alpha-us (microseconds per message) must be 0 "
                        "or more";
  if (key == "gbps" || key == "flops" || key == "membw")
    return value > 0 ? "" : key.str() + " must be more than 0";
  if (key == "ranks")
    return value >= 1 && value <= kMaxRanks && value == std::floor(value)
               ? ""
               : "ranks must be a whole number from 1 to " +
                     std::to_string(kMaxRanks);
  return "unknown key '" + key.str() +
         "' (expected alpha-us, gbps, flops, membw or ranks)";
}

std::optional<NetworkSettings> parseNetworkSettings(llvm::StringRef text,
                                                    std::string &error) {
  NetworkSettings settings;
  llvm::StringSet<> seen;
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',');
  for (llvm::StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    value = value.trim();
    if (!item.contains('=') || key.empty() || value.empty()) {
      error = "expected KEY=VALUE items separated by commas "
              "(alpha-us=A,gbps=G,flops=F[,membw=B][,ranks=N]), got '" +
              item.str() + "'";
      return std::nullopt;
    }
    if (!seen.insert(key).second) {
      error = key.str() + " is given twice";
      return std::nullopt;
    }
    // The key first: an unknown key is named whatever its value.
    if (std::string e = checkNetworkSetting(key, 1); !e.empty()) {
      error = e;
      return std::nullopt;
    }
    std::string number = value.str();
    char *end = nullptr;
    double x = std::strtod(number.c_str(), &end);
    if (*end != '\0') {
      error = key.str() + " takes a number, got '" + number + "'";
      return std::nullopt;
    }
    if (std::string e = checkNetworkSetting(key, x); !e.empty()) {
      error = e + ", got '" + number + "'";
      return std::nullopt;
    }
    if (key == "alpha-us")
      settings.alphaUs = x;
    else if (key == "gbps")
      settings.gbps = x;
    else if (key == "flops")
      settings.gflops = x;
    else if (key == "membw")
      settings.membw = x;
    else
      settings.ranks = static_cast<int64_t>(x);
  }
  return settings;
}

namespace {
/// One thing the step does, in program order: a stretch of ops on one
/// phase's compute, or a collective.
struct ScheduleItem {
  bool collective = false;
  std::string phase;
  /// Compute: the ops' time, ms, and what of it is over their flops' time
  /// (the memory-bound ops' excess).
  double ms = 0;
  double memoryMs = 0;
  /// Collective: its position in the report's `collectives`, kind, bytes
  /// and the group it runs over, as ranks over each mesh axis.
  int64_t index = 0;
  std::string kind;
  int64_t payloadBytes = 0;
  llvm::SmallVector<int> axes;
  /// A started collective (dist.start_*): the compute goes on; or the
  /// dist.wait of the started collective `index`, where the compute waits.
  bool started = false;
  bool wait = false;
};

/// The phase of a compute op: where it runs, or the optimizer's update.
std::string computePhase(Operation *op, func::FuncOp fn) {
  if (op->hasAttr(tg::kUpdateAttr))
    return "optimizer";
  if (fn.getSymName() == "forward" || fn.getSymName() == "backward")
    return fn.getSymName().str();
  // An op of @main's own: the whole step before --emit=partition.
  return "step";
}

/// The rates ops run at: flops and bytes a millisecond (bytes 0: no
/// memory term).
struct Rates {
  double flopsPerMs = 0;
  double bytesPerMs = 0;
};

/// Whether `op` runs inside a fused elementwise loop nest once lowered
/// (--fuse-elementwise): an elementwise op, or one that only moves values
/// (broadcast, reshape, convert) for elementwise users alone.
bool isFused(Operation *op) {
  if (!op)
    return false;
  if (op->hasTrait<tg::OpTrait::Elementwise>())
    return true;
  return op->hasTrait<tg::OpTrait::MovesValues>() && !op->use_empty() &&
         llvm::all_of(op->getUsers(), [](Operation *user) {
           return user->hasTrait<tg::OpTrait::Elementwise>();
         });
}

/// The bytes an op moves through memory once elementwise chains are fused:
/// a fused op reads only the operands that come from outside its chain (for
/// one through a fused value-mover, the smaller of the mover's input and
/// output) and writes only the
/// results something outside the chain uses; a materialized value-mover
/// reads the smaller of its input and output and writes its output; any
/// other op its getBytesAccessed. Summed over a chain, that is its external
/// inputs and outputs once each.
int64_t fusedBytes(tg::CostOpInterface costed) {
  Operation *op = costed.getOperation();
  if (op->hasTrait<tg::OpTrait::MovesValues>() && !isFused(op)) {
    // A materialized move reads at most what it writes (a slice of a
    // bucket reads its part, not the bucket) and writes its result.
    int64_t in = 0, out = 0;
    for (Value v : op->getOperands())
      in += storageBytes(v.getType());
    for (Value v : op->getResults())
      out += storageBytes(v.getType());
    return std::min(in, out) + out;
  }
  if (!isFused(op))
    return costed.getBytesAccessed();
  int64_t bytes = 0;
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    if (def && def->hasTrait<tg::OpTrait::Elementwise>())
      continue;
    if (isFused(def)) {
      // What the mover's user reads through it: the smaller of its input
      // (a broadcast's) and its output (a slice's).
      int64_t in = 0;
      for (Value v : def->getOperands())
        in += storageBytes(v.getType());
      bytes += std::min(in, storageBytes(operand.getType()));
      continue;
    }
    bytes += storageBytes(operand.getType());
  }
  if (!op->hasTrait<tg::OpTrait::Elementwise>())
    return 0; // a fused mover: its users read through it
  for (Value result : op->getResults())
    if (result.use_empty() || llvm::any_of(result.getUsers(), [](Operation *u) {
          return !isFused(u);
        }))
      bytes += storageBytes(result.getType());
  return bytes;
}

/// The step's schedule, through the calls of @main, in the order the
/// report's collectives are listed (CompileReport.cpp's collectCollectives).
/// Each costed op takes max(flops / F, bytes accessed / B), the roofline,
/// or flops / F without a bandwidth.
void buildSchedule(func::FuncOp fn, const dist::Mesh &mesh, const Rates &rates,
                   std::vector<ScheduleItem> &items, int64_t &collectives) {
  // Each started collective's index, by the pending value its start yields.
  llvm::DenseMap<Value, int64_t> startedIndex;
  auto addCompute = [&](std::string phase, double ms, double memoryMs) {
    if (!items.empty() && !items.back().collective && !items.back().wait &&
        items.back().phase == phase) {
      items.back().ms += ms;
      items.back().memoryMs += memoryMs;
      return;
    }
    ScheduleItem item;
    item.phase = std::move(phase);
    item.ms = ms;
    item.memoryMs = memoryMs;
    items.push_back(std::move(item));
  };
  for (Operation &op : fn.getBody().front()) {
    if (auto call = llvm::dyn_cast<func::CallOp>(op)) {
      if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
              &op, call.getCalleeAttr()))
        buildSchedule(callee, mesh, rates, items, collectives);
      continue;
    }
    if (auto wait = llvm::dyn_cast<dist::WaitOp>(op)) {
      ScheduleItem item;
      item.wait = true;
      item.index = startedIndex.lookup(wait.getPending());
      items.push_back(std::move(item));
      continue;
    }
    auto [kind, payload, started] = collectivePayload(op);
    if (!kind.empty()) {
      ScheduleItem item;
      item.collective = true;
      item.started = started;
      if (started)
        startedIndex[op.getResult(0)] = collectives;
      auto phase = op.getAttrOfType<dist::PhaseAttr>("phase");
      item.phase =
          phase ? dist::stringifyPhase(phase.getValue()).str() : "unknown";
      item.index = collectives++;
      item.kind = kind.str();
      item.payloadBytes = storageBytes(payload);
      if (auto axes = mesh.axisIndices(op.getAttrOfType<ArrayAttr>("axes"));
          succeeded(axes))
        item.axes = *axes;
      items.push_back(std::move(item));
      continue;
    }
    double ms = 0, memoryMs = 0;
    op.walk([&](tg::CostOpInterface costed) {
      double flopsMs = double(costed.getFlops()) / rates.flopsPerMs;
      double bytesMs = rates.bytesPerMs > 0
                           ? double(fusedBytes(costed)) / rates.bytesPerMs
                           : 0.0;
      ms += std::max(flopsMs, bytesMs);
      memoryMs += std::max(0.0, bytesMs - flopsMs);
    });
    if (ms > 0)
      addCompute(computePhase(&op, fn), ms, memoryMs);
  }
}

/// The ring algorithm's latency steps and bytes each rank sends, for a
/// collective of `payload` bytes (the report's payload_bytes) over `n`
/// ranks: an all-gather or a reduce-scatter passes (n-1)/n of the full
/// buffer in n-1 steps; an all-reduce is a reduce-scatter then an
/// all-gather; an all-to-all sends (n-1)/n of its local buffer.
std::pair<int64_t, double> ringCost(llvm::StringRef kind, int64_t payload,
                                    int64_t n) {
  if (n <= 1)
    return {0, 0.0};
  double share = double(n - 1) / double(n) * double(payload);
  if (kind == "all_reduce")
    return {2 * (n - 1), 2 * share};
  return {n - 1, share};
}
} // namespace

std::optional<std::string> withNetworkEstimate(const std::string &report,
                                               ModuleOp module,
                                               const NetworkSettings &settings,
                                               std::string &error) {
  using json = nlohmann::ordered_json;
  dist::Mesh mesh;
  if (module->hasAttr(dist::kMeshAttr)) {
    FailureOr<dist::Mesh> of = dist::Mesh::of(module);
    if (failed(of)) {
      error = "the module's mesh is malformed";
      return std::nullopt;
    }
    mesh = *of;
  }
  // Weak scaling: the first (data-parallel) axis grows, every rank keeps
  // its batch and its program; a collective over that axis has a larger
  // group, with the same full buffer.
  dist::Mesh scaled = mesh;
  int64_t ranks = mesh.numRanks();
  if (settings.ranks && *settings.ranks != ranks) {
    if (mesh.axes.empty()) {
      error = "ranks=" + std::to_string(*settings.ranks) +
              " rescales the mesh of a sharded program: give a --shard-spec "
              "(and --emit=shard or a later stage)";
      return std::nullopt;
    }
    int64_t others = ranks / mesh.shape[0];
    if (*settings.ranks % others != 0) {
      error = "ranks=" + std::to_string(*settings.ranks) +
              " is not a multiple of " + std::to_string(others) +
              ", the ranks of the mesh's axes after the first ('" +
              mesh.axes[0] + "', the one ranks= rescales)";
      return std::nullopt;
    }
    scaled.shape[0] = *settings.ranks / others;
    ranks = *settings.ranks;
  }

  Rates rates;
  rates.flopsPerMs = *settings.gflops * 1e6;
  rates.bytesPerMs = settings.membw ? *settings.membw * 1e6 : 0.0;
  func::FuncOp entry = tg::getEntryFunction(module);
  std::vector<ScheduleItem> items;
  int64_t count = 0;
  if (entry)
    buildSchedule(entry, mesh, rates, items, count);

  double bytesPerMs = *settings.gbps * 1e9 / 8 / 1e3;
  double alphaMs = *settings.alphaUs / 1e3;

  // Two clocks: the rank's compute, and when the link is next free. A
  // collective starts once issued and once the link is free; the compute
  // waits for it where its result is first needed. A blocking collective
  // is waited for where it is issued, so all of its time is exposed; a
  // started one (--overlap) is waited for at its dist.wait, and only the
  // part the compute in between does not cover counts.
  double now = 0, linkFree = 0;
  // Started collectives: when each is done, and its entry in `collectives`.
  llvm::DenseMap<int64_t, std::pair<double, size_t>> underWay;
  double computeMs = 0, memoryBoundMs = 0, communicationMs = 0, exposedMs = 0;
  json phases = json::object();
  auto phaseEntry = [&](const std::string &phase) -> json & {
    if (!phases.contains(phase))
      phases[phase] = {{"compute_ms", 0.0},
                       {"memory_bound_ms", 0.0},
                       {"communication_ms", 0.0},
                       {"exposed_communication_ms", 0.0}};
    return phases[phase];
  };
  json collectives = json::array();
  for (const ScheduleItem &item : items) {
    if (item.wait) {
      auto it = underWay.find(item.index);
      if (it == underWay.end())
        continue;
      auto [done, entry] = it->second;
      double exposed = std::max(0.0, done - now);
      now = std::max(now, done);
      exposedMs += exposed;
      json &collective = collectives[entry];
      collective["exposed_ms"] = exposed;
      json &phase = phaseEntry(collective["phase"].get<std::string>());
      phase["exposed_communication_ms"] =
          phase["exposed_communication_ms"].get<double>() + exposed;
      continue;
    }
    json &phase = phaseEntry(item.phase);
    if (!item.collective) {
      now += item.ms;
      computeMs += item.ms;
      memoryBoundMs += item.memoryMs;
      phase["compute_ms"] = phase["compute_ms"].get<double>() + item.ms;
      phase["memory_bound_ms"] =
          phase["memory_bound_ms"].get<double>() + item.memoryMs;
      continue;
    }
    int64_t n = item.axes.empty() ? 1 : scaled.groupSize(item.axes);
    auto [steps, wire] = ringCost(item.kind, item.payloadBytes, n);
    double ms = alphaMs * double(steps) + wire / bytesPerMs;
    double start = std::max(now, linkFree);
    linkFree = start + ms;
    communicationMs += ms;
    phase["communication_ms"] = phase["communication_ms"].get<double>() + ms;
    // A started one's exposure is known at its wait.
    double exposed = 0;
    if (item.started) {
      underWay[item.index] = {linkFree, collectives.size()};
    } else {
      exposed = std::max(0.0, linkFree - now);
      now = std::max(now, linkFree);
      exposedMs += exposed;
      phase["exposed_communication_ms"] =
          phase["exposed_communication_ms"].get<double>() + exposed;
    }
    collectives.push_back({{"index", item.index},
                           {"kind", item.kind},
                           {"phase", item.phase},
                           {"group_size", n},
                           {"payload_bytes", item.payloadBytes},
                           {"latency_steps", steps},
                           {"wire_bytes", wire},
                           {"ms", ms},
                           {"exposed_ms", exposed}});
    if (item.started)
      collectives.back()["started"] = true;
  }

  json axes = json::array(), shape = json::array();
  for (const std::string &a : scaled.axes)
    axes.push_back(a);
  for (int64_t s : scaled.shape)
    shape.push_back(s);
  json network = {{"alpha_us", *settings.alphaUs},
                  {"gbps", *settings.gbps},
                  {"gflops", *settings.gflops}};
  if (settings.membw)
    network["membw"] = *settings.membw;
  json estimate = {
      {"network", network},
      {"nranks", ranks},
      {"mesh", {{"axes", axes}, {"shape", shape}}},
      {"step_ms", now},
      {"compute_ms", computeMs},
      {"memory_bound_ms", memoryBoundMs},
      {"communication_ms", communicationMs},
      {"exposed_communication_ms", exposedMs},
      {"phases", phases},
      {"collectives", collectives},
  };
  json out = json::parse(report);
  out["network_estimate"] = estimate;
  return out.dump(2) + "\n";
}

} // namespace spmdc
