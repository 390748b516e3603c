//===- spmdc.cpp - the spmdc compiler driver ------------------------------===//
//
// Reads a graph, runs the pipeline up to the stage named by --emit and
// writes that stage's output. Exit codes: 0 success, 1 bad input or a
// compile error, 2 usage error.
//
//===----------------------------------------------------------------------===//

#include "DriverOptions.h"

#include "spmdc/Conversion/CallOpBufferization.h"
#include "spmdc/Dialect/Dist/Transforms/Passes.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"
#include "spmdc/Import/Import.h"
#include "spmdc/InitAll.h"
#include "spmdc/Module/ModuleFile.h"
#include "spmdc/Module/ModuleSignature.h"
#include "spmdc/Pipeline/Pipeline.h"
#include "spmdc/Report/CompileReport.h"
#include "spmdc/Report/NetworkEstimate.h"
#include "spmdc/Runtime/AtomicFile.h"
#include "spmdc/Runtime/StoredTensor.h"
#include "spmdc/Sharding/ShardSpec.h"
#include "spmdc/Support/Diagnostics.h"
#include "spmdc/Support/Logging.h"
#include "spmdc/Target/NativeCode.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <numeric>
#include <cstdlib>

using namespace mlir;

/// Puts every use-list of `module` in one fixed order: by position in the
/// module, last use first, as reading the module creates them. MLIR's
/// bytecode records use-list orders, which follow the order passes created
/// the uses in, and that order depends on pointer values in places (the
/// affine vectorizer's sets of loops): without this, two compiles of one
/// step wrote different bytes.
static void fixUseListOrders(ModuleOp module) {
  llvm::DenseMap<Operation *, unsigned> position;
  module.walk<WalkOrder::PreOrder>(
      [&](Operation *op) { position[op] = position.size(); });
  // New positions for the uses in their current order; the key of a use is
  // (its owner's position, its operand number), largest first.
  auto order = [&](auto uses) {
    SmallVector<std::pair<unsigned, unsigned>> keys;
    for (auto &use : uses)
      keys.emplace_back(position.lookup(use.getOwner()),
                        use.getOperandNumber());
    SmallVector<unsigned> byKey(keys.size());
    std::iota(byKey.begin(), byKey.end(), 0);
    llvm::sort(byKey, [&](unsigned a, unsigned b) { return keys[a] > keys[b]; });
    SmallVector<unsigned> indices(keys.size());
    for (auto [newPosition, use] : llvm::enumerate(byKey))
      indices[use] = newPosition;
    return indices;
  };
  auto fix = [&](auto &&object) {
    if (!object.use_empty() && !object.hasOneUse())
      object.shuffleUseList(order(object.getUses()));
  };
  module.walk([&](Operation *op) {
    for (Value result : op->getResults())
      fix(result);
    for (Region &region : op->getRegions())
      for (Block &block : region) {
        fix(block);
        for (BlockArgument argument : block.getArguments())
          fix(argument);
      }
  });
}

/// Writes what `produce` gives its sink to `path` ("-": stdout) whole or
/// not at all: a temporary file renamed over `path` (AtomicFile.h), so a
/// full disk leaves a previous file intact. False with `error` set.
static bool writeOutput(
    llvm::StringRef path, std::string &error,
    llvm::function_ref<bool(const spmdc::rt::ByteSink &, std::string &)>
        produce) {
  if (path == "-") {
    llvm::raw_fd_ostream &os = llvm::outs();
    bool ok = produce(
        [&](const char *data, size_t size) {
          os.write(data, size);
          return !os.has_error();
        },
        error);
    os.flush();
    if (ok && os.has_error())
      error = "<stdout>: write failed";
    return ok && !os.has_error();
  }
  spmdc::rt::AtomicFile file;
  std::string writeError;
  if (!file.open(path.str(), error))
    return false;
  bool ok = produce(
      [&](const char *data, size_t size) {
        return file.write(data, size, writeError);
      },
      error);
  if (!writeError.empty()) {
    error = writeError;
    return false;
  }
  if (!ok) {
    error = path.str() + ": " + error;
    return false;
  }
  return file.commit(error);
}

/// Writes each kernel module's PTX (the objects of the gpu.binary ops the
/// CUDA lowering leaves) to dir/NAME.ptx.
static LogicalResult writeKernels(ModuleOp module, llvm::StringRef dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    llvm::errs() << "spmdc: error: " << dir << ": " << ec.message() << "\n";
    return failure();
  }
  WalkResult walk = module.walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects()) {
      llvm::SmallString<128> path(dir);
      llvm::sys::path::append(path, binary.getSymName() + ".ptx");
      std::string error;
      std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
      if (!file) {
        llvm::errs() << "spmdc: error: " << path << ": " << error << "\n";
        return WalkResult::interrupt();
      }
      file->os() << cast<gpu::ObjectAttr>(object).getObject().getValue();
      file->keep();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// Kernels' math calls libdevice, which MLIR's NVVM serializer links from
/// the CUDA toolkit it finds through CUDA_ROOT, CUDA_HOME or CUDA_PATH, and
/// silently skips when it finds none. The driver resolves the toolkit (those
/// variables, else /usr/local/cuda) and fails clearly without libdevice.
static LogicalResult findLibdevice() {
  std::string toolkit = "/usr/local/cuda";
  for (const char *name : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *value = std::getenv(name); value && *value) {
      toolkit = value;
      break;
    }
  llvm::SmallString<256> libdevice(toolkit);
  llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
  if (!llvm::sys::fs::exists(libdevice)) {
    llvm::errs() << "spmdc: error: --target=cuda needs CUDA's libdevice for "
                    "the math in kernels, and "
                 << libdevice
                 << " does not exist; set CUDA_HOME to the CUDA toolkit\n";
    return failure();
  }
  // CUDA_ROOT is the serializer's first choice.
  ::setenv("CUDA_ROOT", toolkit.c_str(), /*overwrite=*/1);
  return success();
}

int main(int argc, char **argv) {
  // A builder that cannot infer an op's type ends the process through
  // LLVM's fatal-error path, after the op's shape rule has printed its
  // diagnostic at the node: that is bad input, exit 1, not a crash with a
  // stack dump (docs/reliability.md).
  llvm::install_fatal_error_handler([](void *, const char *reason, bool) {
    llvm::errs() << "spmdc: error: " << reason << "\n";
    llvm::errs().flush();
    std::_Exit(1);
  });
  llvm::InitLLVM initLLVM(argc, argv);
  spmdc::DriverOptions options;
  if (std::optional<int> exitCode =
          spmdc::parseDriverOptions(argc, argv, options))
    return *exitCode;
  spmdc::setupLogging("spmdc", options.logLevel);

  // MLIR's own flags, forwarded from the command line.
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  std::vector<const char *> mlirArgv;
  for (const std::string &arg : options.mlirArgs)
    mlirArgv.push_back(arg.c_str());
  if (!llvm::cl::ParseCommandLineOptions(static_cast<int>(mlirArgv.size()),
                                         mlirArgv.data(), "spmdc",
                                         &llvm::errs()))
    return 2;

  spmdc::PipelineOptions pipeline;
  pipeline.emit = *spmdc::parseStage(options.emit);
  pipeline.partition = options.partition;
  pipeline.fsdpGroup = options.fsdpGroup;
  pipeline.bucketMiB = options.bucketMiB;
  pipeline.gradAccum = options.gradAccum;
  pipeline.lowering = options.lowering;
  bool cuda = options.lowering.target == spmdc::Target::Cuda;
  if (cuda && pipeline.emit >= spmdc::Stage::Lower && failed(findLibdevice()))
    return 1;
  if (options.lowering.gpuKernelsOnCpu && cuda) {
    llvm::errs() << "spmdc: error: --gpu-kernels-on-cpu runs the kernels on "
                    "the host; it goes with --target=cpu\n";
    return 2;
  }
  if (!options.aot &&
      (options.aotCpu != "native" || options.aotOptLevel != 1)) {
    llvm::errs() << "spmdc: error: --aot-cpu and --aot-opt-level go with "
                    "--aot\n";
    return 2;
  }
  if (options.network && options.report.empty()) {
    llvm::errs() << "spmdc: error: --network adds a step-time estimate to the "
                    "report; it goes with --report\n";
    return 2;
  }
  if (options.aot && pipeline.emit != spmdc::Stage::Module) {
    llvm::errs() << "spmdc: error: --aot compiles the module's host code; it "
                    "goes with --emit=module\n";
    return 2;
  }
  // --mlir-timing's report: the passes, and the driver's own phases around
  // them (the context, the import, the module's bytes).
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope rootTiming = timing.getRootScope();
  TimingScope contextTiming = rootTiming.nest("Context");
  // MLIR's own dialects and passes: the lowering stages run them.
  DialectRegistry registry;
  // An op keeps the interface model attached first: the project's
  // replacement for MLIR's func.call bufferization model goes before MLIR's.
  spmdc::registerCallOpBufferization(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // The CUDA path serialises kernels through LLVM IR (gpu-module-to-binary).
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::registerAllPasses();
  spmdc::registerAllPasses();
  spmdc::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  contextTiming.stop();

  std::string errorMessage;
  llvm::SourceMgr sourceMgr;
  if (!spmdc::loadMainFile(sourceMgr, options.input, errorMessage)) {
    llvm::errs() << "spmdc: error: " << errorMessage << "\n";
    return 1;
  }
  spmdc::ToolDiagnosticHandler diagnostics(sourceMgr, context, llvm::errs());

  auto started = std::chrono::steady_clock::now();
  // Optimizer and network settings: the spec's, then the command line's on
  // top.
  spmdc::OptimizerOptions &optimizer = pipeline.optimizer;
  std::optional<spmdc::NetworkSettings> network;
  if (!options.shardSpec.empty()) {
    std::optional<spmdc::ShardSpec> spec =
        spmdc::readShardSpec(options.shardSpec, context);
    if (!spec)
      return 1;
    pipeline.spec = spec;
    if (!spec->networkSettings.empty()) {
      network.emplace();
      for (auto &[key, value] : spec->networkSettings) {
        if (key == "alpha_us")
          network->alphaUs = value;
        else if (key == "gbps")
          network->gbps = value;
        else if (key == "flops")
          network->gflops = value;
        else if (key == "membw")
          network->membw = value;
        else if (key == "ranks")
          network->ranks = static_cast<int64_t>(value);
      }
    }
    if (spec->optimizer)
      optimizer.kind = *spec->optimizer;
    auto setting = [&](const char *key) -> std::optional<double> {
      auto it = spec->optimizerSettings.find(key);
      if (it == spec->optimizerSettings.end())
        return std::nullopt;
      return it->second;
    };
    optimizer.lr = setting("lr");
    optimizer.momentum = setting("momentum");
    optimizer.weightDecay = setting("weight_decay");
    optimizer.beta1 = setting("beta1");
    optimizer.beta2 = setting("beta2");
    optimizer.eps = setting("eps");
    optimizer.clipGradNorm = setting("clip_grad_norm");
  }
  if (options.optimizer)
    optimizer.kind = *options.optimizer;
  auto override = [](std::optional<double> &value,
                     const std::optional<double> &flag) {
    if (flag)
      value = flag;
  };
  override(optimizer.lr, options.lr);
  override(optimizer.momentum, options.momentum);
  override(optimizer.weightDecay, options.weightDecay);
  override(optimizer.beta1, options.beta1);
  override(optimizer.beta2, options.beta2);
  override(optimizer.eps, options.eps);
  override(optimizer.clipGradNorm, options.clipGradNorm);
  if (options.network) {
    if (!network)
      network.emplace();
    network->overrideWith(*options.network);
  }
  if (network && !options.report.empty()) {
    if (std::string missing = network->missingKeys(); !missing.empty()) {
      llvm::errs() << "spmdc: error: the network estimate needs alpha-us, "
                      "gbps and flops (--network, or the spec's \"network\" "
                      "as alpha_us, gbps and flops); missing: "
                   << missing << "\n";
      return options.network ? 2 : 1;
    }
  }

  auto format = spmdc::parseInputFormat(options.inputFormat);
  spdlog::info("importing {}", options.input);
  spmdc::ImportOptions importOptions;
  importOptions.appendLoss = options.loss;
  TimingScope importTiming = rootTiming.nest("Import");
  OwningOpRef<ModuleOp> module =
      spmdc::importGraph(sourceMgr, *format, context, importOptions);
  if (!module)
    return 1;
  importTiming.stop();

  // The passes of the stages up to --emit; MLIR's instrumentation flags
  // (--mlir-print-ir-after-all, --mlir-timing) apply to them. The report
  // and the module's signature are read at the shard stage, before the
  // lowering leaves the tensor graph.
  bool lowers = pipeline.emit >= spmdc::Stage::Lower;
  spmdc::PipelineOptions graphStages = pipeline;
  if (lowers)
    graphStages.emit = spmdc::Stage::Shard;
  // The pass managers live until the timing report is printed: its timers
  // are keyed by the passes' addresses, and a pass freed before a later
  // group's was allocated at its address had the later pass's time shown
  // under its own name (FuseElementwise's as TgDecompose's).
  std::vector<std::unique_ptr<PassManager>> passManagers;
  auto runPasses = [&](auto build) -> int {
    PassManager &pm =
        *passManagers.emplace_back(std::make_unique<PassManager>(&context));
    pm.enableTiming(rootTiming);
    // Verifying after each of the lowering's ~40 passes was a sixth of
    // GPT-2 small's compile; the IR is verified once after each group.
    pm.enableVerifier(options.verifyEach);
    if (failed(applyPassManagerCLOptions(pm)))
      return 2;
    if (failed(build(pm)))
      return 1;
    if (failed(pm.run(*module)))
      return 1;
    TimingScope verifyTiming = rootTiming.nest("Verify");
    return failed(verify(*module)) ? 1 : 0;
  };
  if (int rc = runPasses([&](PassManager &pm) {
        return spmdc::buildPipeline(pm, graphStages);
      }))
    return rc;

  // The report is of the sharded graph; written once the lowering, if it
  // runs, has measured the step's buffers.
  std::string report;
  if (!options.report.empty()) {
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - started)
                    .count();
    // With --overlap the report describes the step as it runs: its
    // collectives in the order they are started, each marked `started`,
    // and the network estimate overlapping them with the compute between
    // start and wait.
    OwningOpRef<ModuleOp> overlapped;
    if (lowers && options.lowering.overlap) {
      overlapped = module->clone();
      PassManager pm(&context);
      pm.addPass(spmdc::dist::createDistAsyncCollectives(
          {options.lowering.prefetchDepth}));
      if (failed(pm.run(*overlapped)))
        return 1;
    }
    ModuleOp described = overlapped ? *overlapped : *module;
    report = spmdc::buildCompileReport(described, ms);
    if (network) {
      std::optional<std::string> estimated =
          spmdc::withNetworkEstimate(report, described, *network, errorMessage);
      if (!estimated) {
        llvm::errs() << "spmdc: error: "
                     << (options.network && options.network->ranks
                             ? "--network: "
                             : options.shardSpec + ": network: ")
                     << errorMessage << "\n";
        return options.network && options.network->ranks ? 2 : 1;
      }
      report = std::move(*estimated);
    }
  }
  auto writeReport = [&]() {
    if (options.report.empty())
      return true;
    if (auto peak =
            (*module)->getAttrOfType<IntegerAttr>("spmdc.buffer_peak_bytes"))
      report = spmdc::withBufferPeak(
          report, peak.getInt(),
          (*module)->getAttrOfType<DictionaryAttr>(
              "spmdc.buffer_peak_bytes_in"),
          (*module)->getAttrOfType<ArrayAttr>("spmdc.buffer_peak_held"));
    if (writeOutput(options.report, errorMessage,
                    [&](const spmdc::rt::ByteSink &sink, std::string &) {
                      return sink(report.data(), report.size());
                    }))
      return true;
    llvm::errs() << "spmdc: error: " << errorMessage << "\n";
    return false;
  };

  std::optional<spmdc::ModuleFile> moduleFile;
  // The lowered program carries the loss alone as @eval, for spmd-run
  // --eval-dataset; added after the report, which is of the step.
  if (lowers)
    if (int rc = runPasses([&](PassManager &pm) {
          pm.addPass(spmdc::tg::createTgEvalEntry());
          return success();
        }))
      return rc;
  if (pipeline.emit == spmdc::Stage::Module) {
    TimingScope signatureTiming = rootTiming.nest("Signature");
    FailureOr<spmdc::ModuleFile> signature = spmdc::moduleSignature(*module);
    if (failed(signature))
      return 1;
    moduleFile = *signature;
    moduleFile->target = spmdc::targetName(options.lowering.target);
  }
  if (lowers) {
    if (int rc = runPasses([&](PassManager &pm) {
          spmdc::buildLoweringPipeline(pm, pipeline.lowering);
          return success();
        }))
      return rc;
  }

  if (!writeReport())
    return 1;
  if (!options.ptxDir.empty() && failed(writeKernels(*module, options.ptxDir)))
    return 1;

  if (moduleFile) {
    if (auto peak =
            (*module)->getAttrOfType<IntegerAttr>("spmdc.buffer_peak_bytes"))
      moduleFile->bufferPeakBytes = peak.getInt();
    TimingScope bytecodeTiming = rootTiming.nest("Bytecode");
    llvm::raw_string_ostream program(moduleFile->program);
    fixUseListOrders(*module);
    if (failed(writeBytecodeToFile(*module, program)))
      return 1;
    bytecodeTiming.stop();
    if (options.aot) {
      TimingScope nativeTiming = rootTiming.nest("NativeCode");
      spmdc::NativeCodeOptions native;
      native.entry = moduleFile->entry;
      native.evalEntry = moduleFile->evalEntry;
      native.cpu = options.aotCpu;
      native.optLevel = options.aotOptLevel;
      FailureOr<spmdc::NativeObject> object =
          spmdc::compileToObject(*module, native);
      if (failed(object))
        return 1;
      moduleFile->native = std::move(object->bytes);
      moduleFile->nativeTriple = object->triple;
      moduleFile->nativeCpu = object->cpu;
      moduleFile->nativeFeatures = object->features;
    }
    // The weights stream from their files into the module's tail.
    TimingScope writeTiming = rootTiming.nest("Write");
    if (!writeOutput(options.output, errorMessage,
                     [&](const spmdc::rt::ByteSink &sink, std::string &error) {
                       return moduleFile->write(sink, error);
                     })) {
      llvm::errs() << "spmdc: error: " << errorMessage << "\n";
      return 1;
    }
    writeTiming.stop();
    // Freeing the lowered module's IR, timed (it was part of "Rest").
    TimingScope freeTiming = rootTiming.nest("Free");
    module = nullptr;
    return 0;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  os << "\n";
  if (!writeOutput(options.output, errorMessage,
                   [&](const spmdc::rt::ByteSink &sink, std::string &) {
                     return sink(text.data(), text.size());
                   })) {
    llvm::errs() << "spmdc: error: " << errorMessage << "\n";
    return 1;
  }
  return 0;
}
