//===- SavedTensors.cpp - what the saved files hold -----------------------===//

#include "spmdc/Runner/SavedTensors.h"

#include "spmdc/Module/ModuleFile.h"
#include "spmdc/Runner/StepSignature.h"
#include "spmdc/Runtime/SafeTensors.h"
#include "spmdc/Runtime/StoredTensor.h"

#include "mlir/AsmParser/AsmParser.h"

using namespace mlir;
using spmdc::interp::Tensor;

namespace spmdc::runner {

namespace {

/// Files keep each tensor's dtype, except that --f64 values keep their
/// digits.
rt::DType savedDType(Type element, bool f64) {
  return f64 && llvm::isa<FloatType>(element) ? rt::DType::F64
                                              : *dtypeOf(element);
}

} // namespace

void collectParameters(const StepSignature &signature, const RankValues &args,
                       const Gatherer &gather, bool f64,
                       std::vector<rt::NamedTensor> &saved) {
  // Parameters and model state (buffers), under their state-dict names:
  // what PyTorch's load_state_dict reads.
  for (size_t a = 0; a < signature.arguments.size(); ++a) {
    const tg::GraphValueInfo &info = signature.arguments[a];
    if (info.role != tg::Role::param && !(info.role == tg::Role::state && info.buffer))
      continue;
    Tensor logical = gather.logical(args, a, signature.argumentShardings[a],
                                    tg::stringifyRole(*info.role).str() + " '" + info.name + "'");
    // Tied weights are saved under each of their names.
    std::vector<std::string> names{info.name};
    names.insert(names.end(), info.aliases.begin(), info.aliases.end());
    for (const std::string &name : names)
      saved.push_back({name, savedDType(info.type.getElementType(), f64),
                       logical.shape, logical.data});
  }
}

bool collectModuleBuffers(const std::vector<ModuleValue> &buffers,
                          rt::SafeTensorsReader *weights, MLIRContext &context,
                          bool f64, std::vector<rt::NamedTensor> &saved,
                          std::string &error) {
  for (const ModuleValue &buffer : buffers) {
    Type element = parseType(buffer.dtype, &context);
    std::vector<double> values;
    if (!element || !dtypeOf(element) || !weights ||
        !weights->readAsDouble(buffer.name, values, error)) {
      error = "buffer '" + buffer.name + "': " + error;
      return false;
    }
    saved.push_back({buffer.name, savedDType(element, f64), buffer.shape,
                     std::move(values)});
  }
  return true;
}

bool collectProgramBuffers(ModuleOp program, bool f64,
                           std::vector<rt::NamedTensor> &saved,
                           std::string &error) {
  for (const tg::ConstantBufferInfo &buffer : tg::getConstantBuffers(program)) {
    std::optional<rt::DType> dtype = dtypeOf(buffer.type.getElementType());
    if (!dtype)
      continue;
    rt::StoredTensor stored;
    stored.path = buffer.initRef.file;
    stored.dataOffset = buffer.initRef.offset;
    stored.dataBytes = buffer.initRef.bytes;
    stored.dtype = *dtype;
    stored.shape.assign(buffer.type.getShape().begin(),
                        buffer.type.getShape().end());
    stored.strides = buffer.initRef.strides;
    stored.storageOffset = buffer.initRef.storageOffset;
    std::vector<double> values;
    if (!rt::readStoredBlock(stored,
                             std::vector<int64_t>(stored.shape.size(), 0),
                             stored.shape, values, error)) {
      error = "buffer '" + buffer.name + "': " + error;
      return false;
    }
    saved.push_back({buffer.name, savedDType(buffer.type.getElementType(), f64),
                     stored.shape, std::move(values)});
  }
  return true;
}

void collectOutputs(const StepSignature &signature, const RankValues &outputs,
                    const Gatherer &gather, bool f64,
                    std::vector<rt::NamedTensor> &saved) {
  for (size_t r = 0; r < signature.results.size(); ++r) {
    const tg::GraphValueInfo &info = signature.results[r];
    if (info.role == tg::Role::param || info.role == tg::Role::state)
      continue;
    Tensor logical = gather.logical(outputs, r, signature.resultShardings[r],
                                    tg::stringifyRole(*info.role).str() + " '" + info.name + "'");
    saved.push_back({tg::stringifyRole(*info.role).str() + "/" + info.name,
                     savedDType(info.type.getElementType(), f64), logical.shape,
                     logical.data});
  }
}

} // namespace spmdc::runner
