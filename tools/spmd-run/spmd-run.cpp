//===- spmd-run.cpp - run a training step for K steps ---------------------===//
//
// Builds the logical inputs of a graph (from safetensors files or the
// deterministic initialisation), runs the step K times feeding updated
// parameters and optimizer state back by name, prints `step K loss X` on
// stdout and optionally saves the parameters.
//
//===----------------------------------------------------------------------===//

#include "RunOptions.h"

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/InitAll.h"
#include "spmdc/Interpreter/Interpreter.h"
#include "spmdc/Runtime/Init.h"
#include "spmdc/Runtime/SafeTensors.h"
#include "spmdc/Support/Diagnostics.h"
#include "spmdc/Support/Logging.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <spdlog/spdlog.h>

#include <cstdio>

using namespace mlir;
using spmdc::interp::Tensor;

namespace {

/// Prints `spmd-run: error: ...` and gives the exit code of bad input.
int fail(const std::string &message) {
  llvm::errs() << "spmd-run: error: " << message << "\n";
  return 1;
}

std::optional<spmdc::rt::DType> dtypeOf(Type element) {
  using spmdc::rt::DType;
  if (element.isF64())
    return DType::F64;
  if (element.isF32())
    return DType::F32;
  if (element.isF16())
    return DType::F16;
  if (element.isBF16())
    return DType::BF16;
  if (element.isInteger(64))
    return DType::I64;
  if (element.isInteger(32))
    return DType::I32;
  if (element.isInteger(1))
    return DType::Bool;
  return std::nullopt;
}

std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// The logical inputs of the step: a tensor from a file where the file has
/// it, the deterministic initialisation otherwise.
class InputBuilder {
public:
  InputBuilder(const spmdc::RunOptions &options) : options(options) {}

  /// Opens the --params/--data files; false with `error` set on failure.
  bool openFiles(std::string &error) {
    if (!options.params.empty() &&
        !(params = spmdc::rt::SafeTensorsReader::open(options.params, error)))
      return false;
    if (!options.data.empty() &&
        !(data = spmdc::rt::SafeTensorsReader::open(options.data, error)))
      return false;
    return true;
  }

  bool build(const spmdc::tg::GraphValueInfo &info, Tensor &tensor,
             std::string &error) {
    std::vector<int64_t> shape(info.type.getShape().begin(),
                               info.type.getShape().end());
    tensor = Tensor(shape);
    spmdc::rt::SafeTensorsReader *file =
        info.role == "data" ? data.get() : params.get();
    if (file && file->find(info.name))
      return readFromFile(*file, info, tensor, error);
    // A --params file must hold every parameter: a missing one is far more
    // likely a wrong file than a wish for random values.
    if (file && info.role == "param") {
      error = file->path() + ": has no tensor '" + info.name + "'";
      return false;
    }
    int kind = SPMD_INIT_ZERO;
    int64_t bound = 0;
    if (info.role == "param") {
      kind = SPMD_INIT_PARAM;
    } else if (info.role == "data") {
      if (llvm::isa<FloatType>(info.type.getElementType())) {
        kind = SPMD_INIT_DATA;
      } else if (info.type.getElementType().isInteger(1)) {
        kind = SPMD_INIT_INDEX;
        bound = 2;
      } else if (info.indexBound) {
        kind = SPMD_INIT_INDEX;
        bound = *info.indexBound;
      } else {
        error = "integer input '" + info.name +
                "' has no known range (no embedding or loss uses it): give "
                "it in --data";
        return false;
      }
    }
    std::vector<int64_t> offsets(shape.size(), 0);
    spmd_init_block(options.seed, info.name.c_str(), shape.data(),
                    static_cast<int32_t>(shape.size()), kind, bound,
                    offsets.data(), shape.data(), tensor.data.data());
    return true;
  }

private:
  bool readFromFile(spmdc::rt::SafeTensorsReader &file,
                    const spmdc::tg::GraphValueInfo &info, Tensor &tensor,
                    std::string &error) {
    const spmdc::rt::TensorInfo *stored = file.find(info.name);
    if (stored->shape != tensor.shape) {
      error = file.path() + ": tensor '" + info.name + "' has shape " +
              shapeString(stored->shape) + " but the program expects " +
              shapeString(tensor.shape);
      return false;
    }
    return file.readAsDouble(info.name, tensor.data, error);
  }

  const spmdc::RunOptions &options;
  std::unique_ptr<spmdc::rt::SafeTensorsReader> params, data;
};

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  spmdc::RunOptions options;
  if (std::optional<int> exitCode =
          spmdc::parseRunOptions(argc, argv, options))
    return *exitCode;
  spmdc::setupLogging("spmd-run", options.logLevel);

  if (!options.interpret)
    return fail("running compiled modules needs the CPU backend, which this "
                "build does not have yet; run IR with --interpret");

  DialectRegistry registry;
  spmdc::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(options.input, &errorMessage);
  if (!input)
    return fail(options.input + ": " + errorMessage);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  spmdc::ToolDiagnosticHandler diagnostics(sourceMgr, context, llvm::errs());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module || failed(spmdc::tg::verifyGraphSignature(*module)))
    return 1;
  func::FuncOp entry = spmdc::tg::getEntryFunction(*module);
  spmdc::tg::annotateIndexBounds(entry);

  if (options.nranks != 1)
    return fail("this program has no device mesh (it was not sharded), so "
                "it runs on one rank; use --nranks 1");

  std::vector<spmdc::tg::GraphValueInfo> argInfos =
      spmdc::tg::getArgumentInfos(entry);
  std::vector<spmdc::tg::GraphValueInfo> resultInfos =
      spmdc::tg::getResultInfos(entry);

  if (!options.saveOutputs.empty() && options.steps == 0)
    return fail("--save-outputs needs at least one step");

  InputBuilder inputs(options);
  if (!inputs.openFiles(errorMessage))
    return fail(errorMessage);
  std::vector<Tensor> args(argInfos.size());
  for (size_t i = 0; i < argInfos.size(); ++i) {
    if (!inputs.build(argInfos[i], args[i], errorMessage))
      return fail(errorMessage);
    // An f32 argument holds f32 values, whatever the file or init gave.
    if (!options.f64)
      for (double &v : args[i].data)
        v = spmdc::interp::roundToElementType(
            v, argInfos[i].type.getElementType());
  }

  // Results that feed the next step: updated parameters and optimizer state
  // go back to the argument of the same role and name.
  std::vector<std::pair<size_t, size_t>> feedback;
  std::optional<size_t> lossIndex;
  for (size_t r = 0; r < resultInfos.size(); ++r) {
    if (resultInfos[r].role == "loss")
      lossIndex = r;
    for (size_t a = 0; a < argInfos.size(); ++a)
      if ((resultInfos[r].role == "param" || resultInfos[r].role == "state") &&
          argInfos[a].role == resultInfos[r].role &&
          argInfos[a].name == resultInfos[r].name)
        feedback.emplace_back(r, a);
  }

  spmdc::interp::InterpreterOptions interpreterOptions;
  interpreterOptions.f64 = options.f64;
  std::vector<Tensor> lastOutputs(resultInfos.size());
  for (int step = 1; step <= options.steps; ++step) {
    auto results = spmdc::interp::runFunction(entry, args, interpreterOptions);
    if (failed(results))
      return fail("step " + std::to_string(step) + " failed");
    if (lossIndex)
      std::printf("step %d loss %.9g\n", step,
                  (*results)[*lossIndex].data.front());
    std::fflush(stdout);
    for (auto [r, a] : feedback)
      args[a] = (*results)[r];
    lastOutputs = std::move(*results);
  }

  // Files keep each tensor's dtype, except that --f64 values keep their
  // digits.
  auto savedDType = [&](Type element) {
    return options.f64 && llvm::isa<FloatType>(element)
               ? spmdc::rt::DType::F64
               : *dtypeOf(element);
  };
  if (!options.saveParams.empty()) {
    std::vector<spmdc::rt::NamedTensor> saved;
    for (size_t a = 0; a < argInfos.size(); ++a)
      if (argInfos[a].role == "param")
        saved.push_back({argInfos[a].name,
                         savedDType(argInfos[a].type.getElementType()),
                         args[a].shape, args[a].data});
    if (!spmdc::rt::writeSafeTensors(options.saveParams, saved, errorMessage))
      return fail(errorMessage);
    spdlog::info("saved {} parameters to {}", saved.size(), options.saveParams);
  }
  if (!options.saveOutputs.empty()) {
    std::vector<spmdc::rt::NamedTensor> saved;
    for (size_t r = 0; r < resultInfos.size(); ++r)
      if (resultInfos[r].role != "param" && resultInfos[r].role != "state")
        saved.push_back({resultInfos[r].role + "/" + resultInfos[r].name,
                         savedDType(resultInfos[r].type.getElementType()),
                         lastOutputs[r].shape, lastOutputs[r].data});
    if (!spmdc::rt::writeSafeTensors(options.saveOutputs, saved, errorMessage))
      return fail(errorMessage);
  }
  return 0;
}
