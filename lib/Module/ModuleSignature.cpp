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

static ModuleValue toModuleValue(const tg::GraphValueInfo &info) {
  ModuleValue v;
  v.name = info.name;
  v.role = info.role;
  v.dtype = dtypeName(info.type.getElementType());
  v.shape.assign(info.type.getShape().begin(), info.type.getShape().end());
  v.indexBound = info.indexBound;
  return v;
}

FailureOr<ModuleFile> moduleSignature(ModuleOp module) {
  if (module->hasAttr(dist::kMeshAttr))
    return module.emitError(
        "compiled modules of sharded steps are not available yet (their "
        "collectives need the MPI runner); run --emit=shard through "
        "spmd-run --interpret");
  func::FuncOp entry = tg::getEntryFunction(module);
  if (!entry)
    return failure();
  tg::annotateIndexBounds(entry);
  ModuleFile file;
  for (const tg::GraphValueInfo &info : tg::getArgumentInfos(entry)) {
    if (info.initialValue)
      return entry.emitError()
             << "parameter '" << info.name
             << "' carries its initial weights (a torch.export model): "
                "compiled modules do not carry weights yet; run it with "
                "spmd-run --interpret";
    file.arguments.push_back(toModuleValue(info));
  }
  for (const tg::GraphValueInfo &info : tg::getResultInfos(entry))
    file.results.push_back(toModuleValue(info));
  return file;
}

} // namespace spmdc
