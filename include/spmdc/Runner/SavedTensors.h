//===- SavedTensors.h - what the saved files hold ---------------*- C++ -*-===//
//
// The tensors the runner writes after the last step, each the logical
// tensor assembled from the ranks' blocks, in its dtype (f64 for float
// values under --f64, which keep their digits): the parameters and model
// state under their state-dict names, the persistent buffers the step only
// reads, and the last step's other outputs keyed `<role>/<name>`.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNNER_SAVEDTENSORS_H
#define SPMDC_RUNNER_SAVEDTENSORS_H

#include "spmdc/Runner/ScatterGather.h"

#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
class ModuleOp;
} // namespace mlir
namespace spmdc {
struct ModuleValue;
} // namespace spmdc
namespace spmdc::rt {
struct NamedTensor;
class SafeTensorsReader;
} // namespace spmdc::rt

namespace spmdc::runner {

/// Appends the parameters and model state among the step's arguments
/// (`args`, this process's ranks' blocks) to `saved`, each under each of
/// its names (tied weights). Under mpirun every rank must call it.
void collectParameters(const StepSignature &signature, const RankValues &args,
                       const Gatherer &gather, bool f64,
                       std::vector<rt::NamedTensor> &saved);

/// Appends a compiled module's persistent buffers, read from its weights
/// section `weights`, to `saved`; false with `error` set to
/// "buffer '<name>': " and what `error` held or the reader says.
bool collectModuleBuffers(const std::vector<ModuleValue> &buffers,
                          rt::SafeTensorsReader *weights,
                          mlir::MLIRContext &context, bool f64,
                          std::vector<rt::NamedTensor> &saved,
                          std::string &error);

/// Appends a program's persistent buffers (`tg.constant_buffers`), each
/// read from its file, to `saved`; false with `error` set.
bool collectProgramBuffers(mlir::ModuleOp program, bool f64,
                           std::vector<rt::NamedTensor> &saved,
                           std::string &error);

/// Appends the last step's outputs other than parameters and state
/// (`outputs`, this process's ranks' values) to `saved`, keyed
/// `<role>/<name>`. Under mpirun every rank must call it.
void collectOutputs(const StepSignature &signature, const RankValues &outputs,
                    const Gatherer &gather, bool f64,
                    std::vector<rt::NamedTensor> &saved);

} // namespace spmdc::runner

#endif // SPMDC_RUNNER_SAVEDTENSORS_H
