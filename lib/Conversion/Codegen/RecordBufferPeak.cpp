//===- RecordBufferPeak.cpp - the most bytes a step's buffers hold --------===//
//
// --record-buffer-peak: the report's tensor-level estimate counts every
// value of the graph, while the lowered step allocates far fewer buffers
// (elementwise chains fuse into one loop) and frees each after its last use
// (--free-after-last-use). Measured on the buffers, the estimate is what
// the step really allocates: GPT-2 small's tensor estimate was 29% above
// its measured peak on one rank.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Support/Bytes.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <map>

namespace spmdc {
#define GEN_PASS_DEF_RECORDBUFFERPEAK
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

/// The buffer a view is of: views followed back to where they start.
Value bufferOf(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// Whether `name` names an op of the graph (not a place or "(unnamed)").
bool isGraphName(StringRef name) {
  return !name.empty() && name.front() != '(';
}

/// What a buffer is called in the report: the name the graph gave the op
/// that allocated it (a NameLoc, within fused or call-site locations), else
/// its place in the input. A name given to a kind of work around a node's
/// (the decomposition's "attention") follows the node's in parentheses.
std::string nameOf(Location loc) {
  if (auto named = dyn_cast<NameLoc>(loc)) {
    std::string inner = nameOf(named.getChildLoc());
    if (isGraphName(inner))
      return inner + " (" + named.getName().str() + ")";
    return named.getName().str();
  }
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      if (std::string name = nameOf(inner); isGraphName(name))
        return name;
  }
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return nameOf(call.getCallee());
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return ("(" + file.getFilename().strref() + ":" +
            Twine(file.getLine()) + ")")
        .str();
  return "(unnamed)";
}

/// A buffer the step allocates: its bytes, where it is allocated (named
/// only for the report, at the end) and the function whose body does it.
struct HeldBuffer {
  int64_t bytes;
  Location loc;
  StringRef function;
};

/// Runs one function's body in order: `live` maps each buffer the step
/// holds (by the value that allocated it in some function) to its bytes.
class BufferSimulation {
public:
  explicit BufferSimulation(SymbolTableCollection &symbols) : symbols(symbols) {}

  /// Simulates `fn` called with `arguments` (the caller's buffers, or null
  /// for memory the step does not allocate); returns the buffers its
  /// results are.
  SmallVector<Value> call(func::FuncOp fn, ArrayRef<Value> arguments) {
    llvm::DenseMap<Value, Value> bufferOfValue;
    Block &body = fn.getBody().front();
    for (auto [argument, actual] : llvm::zip(body.getArguments(), arguments))
      if (actual)
        bufferOfValue[argument] = actual;
    auto resolve = [&](Value value) {
      Value buffer = bufferOf(value);
      return bufferOfValue.lookup(buffer) ? bufferOfValue.lookup(buffer)
                                          : buffer;
    };
    SmallVector<Value> results;
    for (Operation &op : body) {
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        allocate(alloc.getResult(),
                 {spmdc::storageBytes(alloc.getType()), alloc.getLoc(),
                  fn.getSymName()});
      } else if (auto dealloc = dyn_cast<bufferization::DeallocOp>(op)) {
        llvm::SmallPtrSet<Value, 8> kept;
        for (Value retained : dealloc.getRetained())
          kept.insert(resolve(retained));
        for (Value memref : dealloc.getMemrefs())
          if (!kept.contains(resolve(memref)))
            free(resolve(memref));
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        free(resolve(dealloc.getMemref()));
      } else if (auto callOp = dyn_cast<func::CallOp>(op)) {
        auto callee =
            symbols.lookupNearestSymbolFrom<func::FuncOp>(&op, callOp.getCalleeAttr());
        if (!callee || callee.isExternal())
          continue;
        SmallVector<Value> actuals;
        for (Value operand : callOp.getOperands())
          actuals.push_back(isa<BaseMemRefType>(operand.getType())
                                ? resolve(operand)
                                : Value());
        // The peak while inside the callee, kept per function.
        int64_t peakBefore = peak;
        peak = live;
        SmallVector<Value> returned = call(callee, actuals);
        int64_t &inside = peakIn[callee.getSymName()];
        inside = std::max(inside, peak);
        peak = std::max(peakBefore, peak);
        for (auto [result, buffer] : llvm::zip(callOp.getResults(), returned))
          if (buffer)
            bufferOfValue[result] = buffer;
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (Value operand : ret.getOperands())
          results.push_back(isa<BaseMemRefType>(operand.getType())
                                ? resolve(operand)
                                : Value());
      } else if (op.getNumRegions() > 0) {
        // A loop's or branch's own buffers live inside it: their most at once.
        int64_t inside = 0;
        SmallVector<HeldBuffer> insideBuffers;
        op.walk([&](memref::AllocOp alloc) {
          insideBuffers.push_back({spmdc::storageBytes(alloc.getType()),
                                   alloc.getLoc(), fn.getSymName()});
          inside += insideBuffers.back().bytes;
        });
        peak = std::max(peak, live + inside);
        noteTotal(live + inside, insideBuffers);
      }
    }
    return results;
  }

  int64_t peak = 0;
  /// The most bytes live while each called function runs.
  llvm::StringMap<int64_t> peakIn;
  /// The buffers held when the step's total was highest.
  SmallVector<HeldBuffer> atHighest;

private:
  void allocate(Value buffer, HeldBuffer info) {
    live += info.bytes;
    held.insert_or_assign(buffer, info);
    peak = std::max(peak, live);
    noteTotal(live, {});
  }
  void free(Value buffer) {
    auto it = held.find(buffer);
    if (it == held.end())
      return;
    live -= it->second.bytes;
    held.erase(it);
  }
  /// Keeps what is held (and `alsoHeld`) when `total` is the highest yet.
  /// `peak` cannot tell: it restarts at each call, for `peakIn`.
  void noteTotal(int64_t total, ArrayRef<HeldBuffer> alsoHeld) {
    if (total <= highest)
      return;
    highest = total;
    atHighest.assign(alsoHeld.begin(), alsoHeld.end());
    for (const auto &entry : held)
      atHighest.push_back(entry.second);
  }

  SymbolTableCollection &symbols;
  llvm::DenseMap<Value, HeldBuffer> held;
  int64_t live = 0;
  int64_t highest = 0;
};

/// The buffers held at the peak, summed by name and function, the largest
/// first; past `kListed` names the rest are one entry, so that the list
/// sums to the peak less the arguments.
ArrayAttr describeHeld(ArrayRef<HeldBuffer> buffers, Builder &b) {
  constexpr size_t kListed = 20;
  struct Group {
    int64_t bytes = 0, count = 0;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;
  for (const HeldBuffer &buffer : buffers) {
    Group &group = groups[{nameOf(buffer.loc), buffer.function.str()}];
    group.bytes += buffer.bytes;
    ++group.count;
  }
  std::vector<std::pair<std::pair<std::string, std::string>, Group>> sorted(
      groups.begin(), groups.end());
  llvm::stable_sort(sorted, [](const auto &l, const auto &r) {
    return l.second.bytes > r.second.bytes;
  });
  if (sorted.size() > kListed) {
    Group rest;
    for (size_t i = kListed; i < sorted.size(); ++i) {
      rest.bytes += sorted[i].second.bytes;
      rest.count += sorted[i].second.count;
    }
    std::string others =
        "(" + std::to_string(sorted.size() - kListed) + " other names)";
    sorted.resize(kListed);
    sorted.push_back({{others, ""}, rest});
  }
  SmallVector<Attribute> entries;
  for (const auto &[key, group] : sorted) {
    SmallVector<NamedAttribute> fields = {
        b.getNamedAttr("name", b.getStringAttr(key.first)),
        b.getNamedAttr("bytes", b.getI64IntegerAttr(group.bytes)),
        b.getNamedAttr("buffers", b.getI64IntegerAttr(group.count))};
    if (!key.second.empty())
      fields.push_back(
          b.getNamedAttr("function", b.getStringAttr(key.second)));
    entries.push_back(b.getDictionaryAttr(fields));
  }
  return b.getArrayAttr(entries);
}

struct RecordBufferPeakPass
    : spmdc::impl::RecordBufferPeakBase<RecordBufferPeakPass> {
  using RecordBufferPeakBase::RecordBufferPeakBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>(entry);
    if (!main || main.isExternal())
      return;
    int64_t arguments = 0;
    for (Type type : main.getArgumentTypes())
      arguments += spmdc::storageBytes(type);
    SymbolTableCollection symbols;
    BufferSimulation simulation(symbols);
    simulation.call(main, SmallVector<Value>(main.getNumArguments()));
    Builder b(module.getContext());
    module->setAttr("spmdc.buffer_peak_bytes",
                    b.getI64IntegerAttr(arguments + simulation.peak));
    SmallVector<NamedAttribute> peakIn;
    for (const auto &entry : simulation.peakIn)
      peakIn.push_back(b.getNamedAttr(
          entry.getKey(), b.getI64IntegerAttr(arguments + entry.getValue())));
    module->setAttr("spmdc.buffer_peak_bytes_in", b.getDictionaryAttr(peakIn));
    module->setAttr("spmdc.buffer_peak_held",
                    describeHeld(simulation.atHighest, b));
  }
};

} // namespace
