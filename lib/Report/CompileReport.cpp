//===- CompileReport.cpp - the --report JSON of a compiled step -----------===//

#include "spmdc/Report/CompileReport.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"

#include <nlohmann/json.hpp>

using namespace mlir;

namespace spmdc {

static int64_t bytesOf(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return 0;
  int64_t bits = tensor.getElementType().getIntOrFloatBitWidth();
  return tensor.getNumElements() * std::max<int64_t>(1, bits / 8);
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

std::string buildCompileReport(ModuleOp module, double compileMs) {
  using json = nlohmann::ordered_json;
  func::FuncOp entry = tg::getEntryFunction(module);
  int64_t paramBytes = 0, stateBytes = 0, gradBytes = 0;
  bool trains = false;
  for (const tg::GraphValueInfo &info : tg::getArgumentInfos(entry)) {
    if (info.role == "param")
      paramBytes += bytesOf(info.type);
    else if (info.role == "state")
      stateBytes += bytesOf(info.type);
  }
  for (const tg::GraphValueInfo &info : tg::getResultInfos(entry)) {
    // After autodiff every parameter has a gradient, whether returned
    // (role grad) or consumed by the optimizer (role param results).
    if (info.role == "grad" || info.role == "param") {
      gradBytes += bytesOf(info.type);
      trains = true;
    }
  }
  if (!trains)
    gradBytes = 0;

  json partition = nullptr;
  int64_t saved = 0;
  if (auto stats = module->getAttrOfType<DictionaryAttr>("tg.partition")) {
    saved = stats.getAs<IntegerAttr>("saved_activation_bytes").getInt();
    partition = {
        {"policy", stats.getAs<StringAttr>("policy").str()},
        {"saved_activation_bytes", saved},
        {"save_all_activation_bytes",
         stats.getAs<IntegerAttr>("save_all_activation_bytes").getInt()}};
  }

  json report = {
      {"version", 1},
      {"nranks", 1},
      {"mesh", {{"axes", json::array()}, {"shape", json::array()}}},
      {"param_bytes_total", paramBytes},
      {"partition", partition},
      {"collectives", json::array()},
      {"per_rank",
       json::array({{{"rank", 0},
                     {"param_bytes", paramBytes},
                     {"grad_bytes", gradBytes},
                     {"optimizer_state_bytes", stateBytes},
                     {"saved_activation_bytes", saved},
                     {"peak_memory_bytes", estimatePeakMemory(module)}}})},
      {"compile_ms", compileMs},
  };
  return report.dump(2) + "\n";
}

} // namespace spmdc
