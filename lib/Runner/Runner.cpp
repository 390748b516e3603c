//===- Runner.cpp - run a training step for K steps -----------------------===//
//
// Reads the step's signature (a compiled module's header, or IR's @main),
// starts the ranks under mpirun where the module has several, gives each
// rank its block of the logical inputs, runs the step K times on all ranks
// feeding updated parameters and optimizer state back by name and the
// learning rate of each step to its `lr` input, prints `step K loss X` on
// stdout and saves the logical parameters and outputs.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runner/Runner.h"

#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"
#include "spmdc/InitAll.h"
#include "spmdc/Interpreter/Interpreter.h"
#include "spmdc/Module/ModuleFile.h"
#include "spmdc/Runner/Checkpoint.h"
#include "spmdc/Runner/CompiledStep.h"
#include "spmdc/Runner/CudaRuntimeLibrary.h"
#include "spmdc/Runner/Dataset.h"
#include "spmdc/Runner/Inputs.h"
#include "spmdc/Runner/LearningRate.h"
#include "spmdc/Runner/Relaunch.h"
#include "spmdc/Runner/SavedTensors.h"
#include "spmdc/Runner/ScatterGather.h"
#include "spmdc/Runner/StepSignature.h"
#ifdef SPMDC_HAVE_MPI
#include "spmdc/Runtime/Collectives.h"
#endif
#include "spmdc/Runtime/SafeTensors.h"
#include "spmdc/Runtime/Trace.h"
#include "spmdc/Support/Bytes.h"
#include "spmdc/Support/Diagnostics.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

using namespace mlir;
using spmdc::interp::Tensor;

namespace spmdc::runner {

namespace {

/// The GEMM threads `options.threads` asks of a process that is one of
/// `localRanks` ranks on its node.
int gemmThreads(const RunOptions &options, int localRanks) {
  if (options.threads != "all")
    return std::max(1, std::stoi(options.threads));
  cpu_set_t cores;
  int available =
      sched_getaffinity(0, sizeof(cores), &cores) == 0 ? CPU_COUNT(&cores) : 1;
  return std::max(1, available / std::max(1, localRanks));
}

DialectRegistry allDialects() {
  DialectRegistry registry;
  registerAllDialects(registry);
  return registry;
}

/// The step's arguments at their logical types, as a dataset feeds them.
std::vector<tg::GraphValueInfo> logicalArguments(const StepSignature &signature) {
  std::vector<tg::GraphValueInfo> logical = signature.arguments;
  for (size_t i = 0; i < logical.size(); ++i)
    logical[i].type = signature.argumentShardings[i].logicalType;
  return logical;
}

/// One run, phase by phase; each phase gives an exit code where the run
/// ends there.
class Run {
public:
  Run(const RunOptions &options, int argc, char **argv)
      : options(options), argc(argc), argv(argv), context(allDialects()),
        inputs(options.seed), evalInputs(options.seed) {
    context.loadAllAvailableDialects();
  }
  ~Run() {
    if (!stdinCopy.empty())
      llvm::sys::fs::remove(stdinCopy);
  }

  int run();

private:
  /// The step's signature and how to run it: a compiled module (which may
  /// start its ranks under mpirun here), or IR for the interpreter.
  std::optional<int> openModule();
  std::optional<int> openProgram();
  /// --resume: the checkpoint, checked against the step's signature before
  /// any rank starts (and again on each rank).
  std::optional<int> openCheckpoint();
  /// The values of the step's hyperparameters: the learning rate's
  /// schedule (--lr-schedule and its flags, the module's lr by default),
  /// others' defaults. Checked before any rank starts.
  std::optional<int> resolveHyperparameters();
  /// Feeds each local rank the hyperparameters of `step`.
  void feedHyperparameters(int step);
  /// A compiled module's step, opened before its inputs are built so that
  /// each goes straight into the step's buffer of its dtype.
  std::optional<int> openCompiledStep();
  /// Each local rank's block of each input, read or generated on its own.
  std::optional<int> buildInputs();
  /// Results that feed the next step: updated parameters and optimizer
  /// state go back to the argument of the same role and name.
  std::optional<int> matchFeedback();
  std::optional<int> runSteps();
  std::optional<int> save();
  /// Writes the checkpoint of `step` where --checkpoint-dir asks for one.
  std::optional<int> checkpoint(int step);
  /// One step on all local ranks.
  FailureOr<RankValues> runStep();
  /// --eval-dataset: the step's loss alone (@eval) and the held-out
  /// dataset that feeds its data inputs.
  std::optional<int> openEvaluation();
  /// The mean loss of the first --eval-batches batches of --eval-dataset,
  /// on the current parameters; failure with `errorMessage` set.
  FailureOr<double> evaluate();
  /// fail(), for an error this rank may meet alone (a bad token id in its
  /// slice of a batch): a rank other than 0 says it too, naming itself.
  int failOnThisRank(const std::string &message);

  /// A copy: a resumed run takes its checkpoint's seed.
  RunOptions options;
  int argc;
  char **argv;
  MLIRContext context;
  std::string errorMessage;
  llvm::SourceMgr sourceMgr;
  llvm::StringRef inputBytes;
  std::optional<ToolDiagnosticHandler> diagnostics;
  StepSignature signature;
  /// Set for a module of several ranks run under mpirun: this process is
  /// one rank, and gathers what it prints or saves from the others.
  bool underMpi = false;
  /// Set for a module of several ranks started outside mpirun: this
  /// process starts them once the inputs it can check are checked.
  bool launch = false;
  /// --resume's checkpoint, and the steps it has done.
  std::unique_ptr<Checkpoint> resumed;
  int firstStep = 0;
  /// Where checkpoints go; null: nowhere.
  std::unique_ptr<CheckpointWriter> checkpoints;
  std::optional<ModuleFile> moduleFile;
  OwningOpRef<ModuleOp> module;
  func::FuncOp entry;
  std::unique_ptr<CompiledStep> compiled;
  /// The ranks this process runs: all of them in the interpreter, its own
  /// under mpirun.
  std::vector<int64_t> localRanks;
  bool printing = false;
  InputBuilder inputs;
  /// A module from stdin, copied to a file to read its weights from.
  llvm::SmallString<128> stdinCopy;
  RankValues args;
  std::vector<std::pair<size_t, size_t>> feedback;
  /// The arguments --dataset gives a new batch every step.
  std::vector<size_t> datasetArguments;
  /// --eval-dataset: its batches' inputs, the step's arguments @eval takes
  /// and those of them the held-out dataset gives, and (for the
  /// interpreter) @eval itself.
  InputBuilder evalInputs;
  std::vector<size_t> evalArguments, evalDataArguments;
  func::FuncOp evalFunction;
  std::optional<size_t> lossIndex;
  RankValues lastOutputs;
  /// The `lr` argument and its schedule; the other hyperparameters, fed
  /// their defaults.
  std::optional<size_t> lrIndex;
  LrSchedule schedule;
  std::vector<std::pair<size_t, double>> fixedHyperparameters;
};

int Run::run() {
  if (!options.exportParams.empty())
    return exportCheckpointParams(options.input, options.exportParams);
  if (!loadMainFile(sourceMgr, options.input, errorMessage))
    return fail(errorMessage);
  inputBytes =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer();
  diagnostics.emplace(sourceMgr, context, llvm::errs());

  bool isModule = ModuleFile::looksLikeModule(inputBytes);
  if (std::optional<int> stop = isModule ? openModule() : openProgram())
    return *stop;
  if (std::optional<int> stop = openCheckpoint())
    return *stop;
  if (std::optional<int> stop = resolveHyperparameters())
    return *stop;
#ifdef SPMDC_HAVE_MPI
  if (launch)
    return launchRanks(argc, argv, options.input, inputBytes,
                       signature.mesh.numRanks(), options.yieldWhenIdle,
                       options.hostfile);
#endif
  if (underMpi)
    localRanks.push_back(*mpirunRank());
  else
    for (int64_t rank = 0; rank < signature.mesh.numRanks(); ++rank)
      localRanks.push_back(rank);
  printing = localRanks.front() == 0;
  if (underMpi)
    spdlog::info("rank {} on host {}", localRanks.front(), hostName());

  if (!options.saveOutputs.empty() && options.steps == 0)
    return fail("--save-outputs needs at least one step");
  if (!options.trace.empty())
    rt::trace::enable();
  for (auto phase : {&Run::openCompiledStep, &Run::buildInputs,
                     &Run::openEvaluation, &Run::matchFeedback,
                     &Run::runSteps, &Run::save})
    if (std::optional<int> stop = (this->*phase)())
      return *stop;
  // Each rank writes its events; once all have (the barrier of
  // spmd_rt_finalize), rank 0 merges them into one trace.
  std::vector<std::string> traceFiles;
  if (!options.trace.empty()) {
    for (int64_t rank = 0;
         rank < (underMpi ? signature.mesh.numRanks() : 1); ++rank)
      traceFiles.push_back(options.trace + ".rank" + std::to_string(rank));
    if (!rt::trace::writeRankEvents(
            traceFiles[underMpi ? localRanks.front() : 0],
            static_cast<int>(localRanks.front()), errorMessage))
      return fail(errorMessage);
  }
#ifdef SPMDC_HAVE_MPI
  if (underMpi)
    spmd_rt_finalize();
#endif
  if (printing && !traceFiles.empty() &&
      !rt::trace::mergeRankEvents(options.trace, traceFiles, errorMessage))
    return fail(errorMessage);
  return 0;
}

std::optional<int> Run::openModule() {
  if (options.interpret)
    return fail(options.input + ": is a compiled module; --interpret runs "
                                "IR (spmdc --emit=<stage> other than module)");
  if (options.f64)
    return fail("--f64 applies to --interpret; a compiled module computes "
                "in its own dtypes");
  moduleFile = ModuleFile::parse(inputBytes, errorMessage);
  if (!moduleFile)
    return fail(options.input + ": " + errorMessage);
  const dist::Mesh &mesh = signature.mesh;
  if (!readModuleMesh(*moduleFile, signature.mesh))
    return fail(options.input + ": the module's mesh is malformed");
  if (mesh.numRanks() != options.nranks)
    return fail("the module's mesh has " + std::to_string(mesh.numRanks()) +
                " ranks but --nranks is " + std::to_string(options.nranks));
  // Said once, before any rank starts.
  if (moduleFile->target == "cuda" && !mpirunRank())
    if (std::optional<std::string> why = CudaRuntimeLibrary::unavailable())
      return fail(options.input + ": " + *why);
  if (mesh.numRanks() > 1) {
#ifdef SPMDC_HAVE_MPI
    launch = !mpirunRank();
    underMpi = !launch;
#else
    return fail("this spmd-run was built without MPI, so it runs modules "
                "of one rank only");
#endif
  }
  if (!readModuleSignature(*moduleFile, context, signature, errorMessage))
    return fail(options.input + ": " + errorMessage);
  return std::nullopt;
}

std::optional<int> Run::openProgram() {
  if (!options.interpret)
    return fail(options.input +
                ": is IR, not a compiled module: run it with --interpret, "
                "or compile it with spmdc --emit=module");
  module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module || failed(tg::verifyGraphSignature(*module)))
    return 1;
  entry = tg::getEntryFunction(*module);
  tg::annotateIndexBounds(entry);

  // The mesh: the program's, or one rank of no axes.
  bool sharded = (*module)->hasAttr(dist::kMeshAttr);
  if (sharded) {
    FailureOr<dist::Mesh> programMesh = dist::Mesh::of(*module);
    if (failed(programMesh))
      return 1;
    signature.mesh = *programMesh;
    if (signature.mesh.numRanks() != options.nranks)
      return fail("the program's mesh has " +
                  std::to_string(signature.mesh.numRanks()) +
                  " ranks but --nranks is " + std::to_string(options.nranks));
  } else if (options.nranks != 1) {
    return fail("this program has no device mesh (it was not sharded), so "
                "it runs on one rank; use --nranks 1");
  }
  if (!readProgramSignature(entry, sharded, signature, errorMessage))
    return fail(errorMessage);
  return std::nullopt;
}

std::optional<int> Run::openCheckpoint() {
  std::string directory = options.checkpointDir;
  if (directory.empty() && options.checkpointEvery > 0)
    directory = options.resume;
  if (!directory.empty())
    checkpoints = std::make_unique<CheckpointWriter>(directory, signature,
                                                     underMpi, options.f64);
  if (options.resume.empty())
    return std::nullopt;
  resumed = Checkpoint::open(options.resume, errorMessage);
  if (!resumed)
    return fail(errorMessage);
  if (!resumed->checkCompatible(signature, errorMessage))
    return fail(errorMessage);
  const CheckpointProgress &progress = resumed->progress();
  firstStep = static_cast<int>(progress.step);
  // Said once, by the process that starts the ranks or is the only one.
  if (!underMpi) {
    if (resumed->sameModule(signature))
      spdlog::info("resuming from {} (step {}), written by this module",
                   resumed->folder(), progress.step);
    else
      spdlog::info("resuming from {} (step {}), written on mesh {}: each "
                   "rank reads the parts of the stored blocks it holds",
                   resumed->folder(), progress.step,
                   resumed->meshDescription());
    if (progress.seed != options.seed)
      spdlog::warn("--seed {} differs from the checkpoint's seed {}; "
                   "resuming with the checkpoint's",
                   options.seed, progress.seed);
    if (progress.dataset != options.dataset ||
        (!options.dataset.empty() && progress.shuffle != options.shuffle))
      spdlog::warn("the checkpoint was written with --dataset '{}'{}, this "
                   "run has '{}'{}: the batches from step {} on are not "
                   "those the interrupted run would have drawn",
                   progress.dataset, progress.shuffle ? " --shuffle" : "",
                   options.dataset, options.shuffle ? " --shuffle" : "",
                   firstStep + 1);
    if (options.steps <= firstStep)
      spdlog::warn("the checkpoint has done {} steps and --steps is {}: "
                   "no step to run",
                   firstStep, options.steps);
  }
  if (!options.saveOutputs.empty() && options.steps <= firstStep)
    return fail("--save-outputs needs at least one step to run, and the "
                "checkpoint has done " + std::to_string(firstStep) +
                " of --steps " + std::to_string(options.steps));
  options.seed = progress.seed;
  inputs.setSeed(progress.seed);
  inputs.checkpoint = resumed.get();
  // The batch the next step draws.
  inputs.batch = progress.nextBatch;
  return std::nullopt;
}

std::optional<int> Run::resolveHyperparameters() {
  for (size_t a = 0; a < signature.arguments.size(); ++a) {
    const tg::GraphValueInfo &info = signature.arguments[a];
    if (info.role != tg::Role::hyper)
      continue;
    if (info.name == "lr") {
      lrIndex = a;
      continue;
    }
    if (!info.defaultValue)
      return fail(options.input + ": hyperparameter '" + info.name +
                  "' has no default value, and spmd-run has no flag that "
                  "sets it");
    fixedHyperparameters.emplace_back(a, *info.defaultValue);
  }
  bool scheduled = !options.lrSchedule.empty() || options.lr || options.minLr ||
                   options.warmupSteps || options.totalSteps;
  if (!lrIndex) {
    if (scheduled)
      return fail(options.input +
                  ": has no learning-rate input (an argument 'lr' of role "
                  "hyper), so --lr-schedule, --lr, --min-lr, --warmup-steps "
                  "and --total-steps cannot set it: it has no optimizer, or "
                  "was compiled before the learning rate became an input "
                  "(compile it again with this spmdc)");
    return std::nullopt;
  }
  std::optional<double> peak =
      options.lr ? options.lr : signature.arguments[*lrIndex].defaultValue;
  if (!peak)
    return fail(options.input + ": its learning-rate input 'lr' has no "
                                "default value: give one with --lr");
  schedule.kind =
      LrSchedule::kindOf(options.lrSchedule.empty() ? "constant"
                                                    : options.lrSchedule)
          .value_or(LrSchedule::Kind::Constant);
  schedule.lr = *peak;
  schedule.minLr = options.minLr.value_or(0.0);
  schedule.warmupSteps = options.warmupSteps.value_or(0);
  schedule.totalSteps = options.totalSteps.value_or(options.steps);
  if (!underMpi) {
    if (schedule.kind == LrSchedule::Kind::Constant &&
        (options.minLr || options.totalSteps))
      spdlog::warn("--min-lr and --total-steps shape a decay: the constant "
                   "schedule ignores them (use --lr-schedule cosine or "
                   "linear)");
    spdlog::info("learning rate: {} {:.9g}, warmup {} steps, min {:.9g} at "
                 "step {}",
                 LrSchedule::name(schedule.kind), schedule.lr,
                 schedule.warmupSteps, schedule.minLr, schedule.totalSteps);
  }
  return std::nullopt;
}

void Run::feedHyperparameters(int step) {
  auto feed = [&](size_t a, double value) {
    Tensor scalar(interp::Shape{}, value);
    for (size_t k = 0; k < localRanks.size(); ++k) {
      if (compiled)
        compiled->stage(a, scalar);
      else
        args[k][a] = scalar;
    }
  };
  if (lrIndex)
    feed(*lrIndex, schedule.at(step));
  for (auto [a, value] : fixedHyperparameters)
    feed(a, value);
}

std::optional<int> Run::openCompiledStep() {
  if (!moduleFile)
    return std::nullopt;
#ifdef SPMDC_HAVE_MPI
  if (underMpi)
    spmd_rt_init(nullptr, nullptr,
                 static_cast<int32_t>(signature.mesh.shape.size()),
                 signature.mesh.shape.data());
#endif
  CompiledStep::Options load;
  load.optLevel = options.optLevel;
  load.multiRank = underMpi;
  load.gemmThreads = gemmThreads(options, mpirunLocalSize().value_or(1));
  load.nestThreads = options.serialNests ? 1 : load.gemmThreads;
  load.hugePages = options.hugePages;
  inputs.threads = load.gemmThreads;
  if (std::optional<int> local = mpirunLocalRank())
    load.localRank = *local;
  compiled = CompiledStep::open(*moduleFile, context, load, errorMessage);
  if (!compiled)
    return fail(options.input + ": " + errorMessage);
  if (uint64_t huge = compiled->heapInHugePages())
    spdlog::info("heap: {:.1f} MiB reserved for the step's buffers, in "
                 "transparent huge pages",
                 huge / 1048576.0);
  return std::nullopt;
}

/// The most memory this process has held resident, in MiB.
static double peakResidentMiB() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  return static_cast<double>(usage.ru_maxrss) / 1024; // ru_maxrss is in KiB
}

/// Starts the kernel's count of the most memory resident (VmHWM) afresh, so
/// that the steps' peak is told apart from the setup's; false where the
/// kernel does not offer it.
static bool resetPeakResident() {
  std::FILE *f = std::fopen("/proc/self/clear_refs", "w");
  if (!f)
    return false;
  bool written = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && written;
}

/// The most memory resident since resetPeakResident, in MiB (0: unknown).
static double peakResidentSinceResetMiB() {
  double kib = 0;
  if (std::FILE *f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "VmHWM: %lf kB", &kib) == 1)
        break;
    std::fclose(f);
  }
  return kib / 1024;
}

/// The memory this process holds resident now, in MiB.
static double residentMiB() {
  long pages = 0, resident = 0;
  if (FILE *f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
      resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * sysconf(_SC_PAGESIZE) / (1 << 20);
}

/// What malloc has taken from the kernel (its arenas and mmapped blocks)
/// and how much of that is in use, in MiB; {0, 0} off glibc. With the
/// step's heap policy (spmd_keep_freed_memory) the heap never shrinks, so
/// the first is its highest since then.
static std::pair<double, double> heapMiB() {
#if defined(__GLIBC__)
  struct mallinfo2 info = mallinfo2();
  return {static_cast<double>(info.arena + info.hblkhd) / (1 << 20),
          static_cast<double>(info.uordblks + info.hblkhd) / (1 << 20)};
#else
  return {0, 0};
#endif
}

/// "rank 1: <what> 850.2 MiB (heap 620.0 MiB, 400.1 MiB of it in use)".
static void logResident(int64_t rank, const char *what, double mib) {
  auto [heap, used] = heapMiB();
  spdlog::info("rank {}: {} {:.1f} MiB (heap {:.1f} MiB, {:.1f} MiB of it "
               "in use)",
               rank, what, mib, heap, used);
}

std::optional<int> Run::buildInputs() {
  // What the process holds before any tensor: the binary, its libraries,
  // MPI (a module's code is linked after the inputs, in matchFeedback).
  if (localRanks.size() == 1)
    logResident(localRanks[0], "resident memory before the inputs",
                residentMiB());
  // Fault injection for the tests: SPMD_RUN_TEST_FAULT=throw:R:0 makes rank
  // R throw as it builds its inputs, as a failed allocation would.
  if (const char *fault = std::getenv("SPMD_RUN_TEST_FAULT")) {
    long long rank;
    if (std::sscanf(fault, "throw:%lld:0", &rank) == 1 &&
        llvm::is_contained(localRanks, rank))
      throw std::runtime_error("injected fault: rank " + std::to_string(rank) +
                               " failed while building its inputs");
  }
  if (!inputs.openFiles(options.params, options.data, errorMessage))
    return fail(errorMessage);
  if (!options.dataset.empty()) {
    DatasetOptions datasetOptions{options.dataset, options.datasetDtype,
                                  options.shuffle, options.seed};
    std::vector<tg::GraphValueInfo> logical = logicalArguments(signature);
    inputs.dataset = Dataset::open(datasetOptions, logical, errorMessage);
    if (!inputs.dataset)
      return fail(errorMessage);
    spdlog::info("dataset {}", inputs.dataset->summary());
    for (size_t i = 0; i < logical.size(); ++i)
      if (logical[i].role == tg::Role::data &&
          inputs.dataset->feeds(logical[i].name))
        datasetArguments.push_back(i);
  }
  // A module's initial values: a rank reads its blocks from the module's
  // weights section (from a copy in a file if the module came on stdin).
  if (moduleFile && moduleFile->weightsBytes) {
    std::string path = options.input;
    if (path == "-") {
      int fd;
      if (llvm::sys::fs::createTemporaryFile("spmd-run", "mod", fd, stdinCopy))
        return fail("cannot write the module from stdin to a temporary file");
      llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
      os << inputBytes;
      path = stdinCopy.str().str();
    }
    inputs.moduleWeights = rt::SafeTensorsReader::open(
        path, errorMessage, moduleFile->weightsOffset,
        moduleFile->weightsBytes);
    if (!inputs.moduleWeights)
      return fail(options.input + ": the module's weights: " + errorMessage);
  }
  if (!scatterArguments(signature, localRanks, inputs, options.f64,
                        compiled.get(), args, errorMessage))
    return inputs.dataset ? failOnThisRank(errorMessage) : fail(errorMessage);
  if (resumed)
    spdlog::info("{} read {} of the checkpoint's {} bytes",
                 underMpi ? "rank " + std::to_string(localRanks.front())
                          : std::string("the ranks"),
                 resumed->bytesRead(), resumed->bytesStored());
  return std::nullopt;
}

std::optional<int> Run::matchFeedback() {
  const std::vector<tg::GraphValueInfo> &argInfos = signature.arguments;
  const std::vector<tg::GraphValueInfo> &resultInfos = signature.results;
  for (size_t r = 0; r < resultInfos.size(); ++r) {
    if (resultInfos[r].role == tg::Role::loss)
      lossIndex = r;
    for (size_t a = 0; a < argInfos.size(); ++a)
      if (tg::feedsBack(resultInfos[r], argInfos[a])) {
        const Sharded &out = signature.resultShardings[r];
        const Sharded &in = signature.argumentShardings[a];
        if (out.sharding != in.sharding ||
            resultInfos[r].type != argInfos[a].type)
          return fail(tg::stringifyRole(*resultInfos[r].role).str() + " '" +
                      resultInfos[r].name +
                      "' comes back as " +
                      describe(resultInfos[r].type, out, signature.mesh) +
                      " but goes in as " +
                      describe(argInfos[a].type, in, signature.mesh));
        feedback.emplace_back(r, a);
      }
  }
  // A compiled module: compiled (or its native code linked) once its inputs
  // are known good.
  if (compiled) {
    if (!compiled->compile(errorMessage))
      return fail(options.input + ": " + errorMessage);
    spdlog::info("running on {}", compiled->device());
    compiled->keepResident(feedback);
  }
  return std::nullopt;
}

FailureOr<RankValues> Run::runStep() {
  if (!compiled) {
    interp::InterpreterOptions interpreterOptions;
    interpreterOptions.f64 = options.f64;
    return interp::runFunctionSPMD(entry, args, signature.mesh,
                                   interpreterOptions);
  }
  RankValues results(1);
  if (!compiled->run(results[0], errorMessage)) {
    spdlog::error("{}", errorMessage);
    return failure();
  }
  return results;
}

std::optional<int> Run::openEvaluation() {
  if (options.evalDataset.empty())
    return std::nullopt;
  if (!lossIndex && llvm::none_of(signature.results,
                                  [](const tg::GraphValueInfo &info) {
                                    return info.role == tg::Role::loss;
                                  }))
    return fail("--eval-dataset: the step has no loss to evaluate");
  // The step's loss alone: a module carries it (spmdc puts it there);
  // IR gets it here, as spmdc would.
  std::vector<std::string> names;
  if (moduleFile) {
    if (moduleFile->evalEntry.empty())
      return fail(options.input +
                  ": the module carries no eval program (@eval) for "
                  "--eval-dataset; compile it again with this spmdc");
    evalArguments = moduleFile->evalArguments;
  } else {
    evalFunction = module->lookupSymbol<func::FuncOp>("eval");
    if (!evalFunction) {
      PassManager pm(&context);
      pm.addPass(tg::createTgEvalEntry());
      if (failed(pm.run(*module)))
        return fail("--eval-dataset: cannot make the step's loss alone");
      evalFunction = module->lookupSymbol<func::FuncOp>("eval");
    }
    for (const tg::GraphValueInfo &info : tg::getArgumentInfos(evalFunction)) {
      auto same = llvm::find_if(signature.arguments,
                                [&](const tg::GraphValueInfo &a) {
                                  return a.name == info.name &&
                                         a.role == info.role;
                                });
      if (same == signature.arguments.end())
        return fail("@eval's argument '" + info.name +
                    "' is none of the step's");
      evalArguments.push_back(same - signature.arguments.begin());
    }
  }
  // The held-out dataset feeds every data input the loss reads, batch by
  // batch from the first, in order.
  DatasetOptions datasetOptions{options.evalDataset, options.datasetDtype,
                                /*shuffle=*/false, options.seed};
  std::vector<tg::GraphValueInfo> logical = logicalArguments(signature);
  evalInputs.dataset = Dataset::open(datasetOptions, logical, errorMessage);
  if (!evalInputs.dataset)
    return fail("--eval-dataset: " + errorMessage);
  for (size_t i : evalArguments) {
    if (logical[i].role != tg::Role::data)
      continue;
    if (!evalInputs.dataset->feeds(logical[i].name))
      return fail("--eval-dataset " + options.evalDataset +
                  " does not give the data input '" + logical[i].name +
                  "' that the loss reads");
    evalDataArguments.push_back(i);
  }
  spdlog::info("eval dataset {}", evalInputs.dataset->summary());
  return std::nullopt;
}

FailureOr<double> Run::evaluate() {
  Gatherer gather(signature.mesh, underMpi, options.f64);
  size_t loss = *lossIndex;
  RankValues batch(localRanks.size(),
                   std::vector<Tensor>(signature.arguments.size()));
  double sum = 0;
  for (int b = 0; b < options.evalBatches; ++b) {
    evalInputs.batch = b;
    if (!rescatterArguments(signature, evalDataArguments, localRanks,
                            evalInputs, options.f64, /*compiled=*/nullptr,
                            batch, errorMessage))
      return failure();
    RankValues losses(localRanks.size());
    if (compiled) {
      std::vector<std::pair<size_t, Tensor>> given;
      for (size_t i : evalDataArguments)
        given.emplace_back(i, std::move(batch[0][i]));
      losses[0].resize(1);
      if (!compiled->evaluate(given, losses[0][0], errorMessage))
        return failure();
    } else {
      RankValues evalArgs(localRanks.size());
      for (size_t k = 0; k < localRanks.size(); ++k)
        for (size_t i : evalArguments)
          evalArgs[k].push_back(llvm::is_contained(evalDataArguments, i)
                                    ? batch[k][i]
                                    : args[k][i]);
      interp::InterpreterOptions interpreterOptions;
      interpreterOptions.f64 = options.f64;
      FailureOr<RankValues> results = interp::runFunctionSPMD(
          evalFunction, evalArgs, signature.mesh, interpreterOptions);
      if (failed(results)) {
        errorMessage = "the eval program failed";
        return failure();
      }
      losses = std::move(*results);
    }
    sum += gather.logical(losses, 0, signature.resultShardings[loss],
                          "the eval loss")
               .data.front();
  }
  return sum / options.evalBatches;
}

int Run::failOnThisRank(const std::string &message) {
  if (!underMpi || localRanks.front() == 0)
    return fail(message);
  // One write, as fail() does.
  llvm::errs() << ("spmd-run: error: rank " +
                   std::to_string(localRanks.front()) + ": " + message + "\n");
  return 1;
}

/// What one step consumes, for the progress line: the elements of the
/// first integer data input of rank 2 or more (token ids [batch, seq]:
/// "tokens"), else the batch of the first data input ("samples").
static std::pair<int64_t, const char *>
itemsPerStep(const StepSignature &signature) {
  const tg::GraphValueInfo *first = nullptr;
  for (const tg::GraphValueInfo &info : signature.arguments) {
    if (info.role != tg::Role::data)
      continue;
    if (isa<IntegerType>(info.type.getElementType()) &&
        info.type.getRank() >= 2)
      return {info.type.getNumElements(), "tokens"};
    if (!first)
      first = &info;
  }
  if (first && first->type.getRank() >= 1)
    return {first->type.getDimSize(0), "samples"};
  return {0, "samples"};
}

/// The shortest decimal that reads back as `value` ("0.00055", not
/// "0.00055000000000000003"), as Python's repr writes it.
static std::string shortestDecimal(double value) {
  char text[32];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  return text;
}

/// "1m05s", "7.3 s".
static std::string duration(double seconds) {
  char text[32];
  if (seconds >= 60)
    std::snprintf(text, sizeof text, "%dm%02ds", static_cast<int>(seconds) / 60,
                  static_cast<int>(seconds) % 60);
  else
    std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

std::optional<int> Run::runSteps() {
  // Progress on stderr and metrics, from the rank that prints.
  int every = options.logEvery >= 0 ? options.logEvery
                                    : (isatty(STDERR_FILENO) ? 1 : 0);
  auto [items, itemName] = itemsPerStep(signature);
  std::FILE *metrics = nullptr;
  if (printing && !options.metrics.empty() &&
      !(metrics = std::fopen(options.metrics.c_str(), "w")))
    return fail("cannot write the metrics to " + options.metrics + ": " +
                std::strerror(errno));
  double totalMs = 0, lastLoss = 0;
  // What the inputs and the compiled code hold before the first step, and
  // of it the step's arguments: the rest (binary, libraries, linked code,
  // MPI) is not the step's tensors, so the steps' peak less it is what the
  // report's peak_memory_bytes estimates (docs/benchmarks.md,
  // bench/memory_vs_report.py).
  bool stepsPeakKnown = false;
  if (localRanks.size() == 1) {
    int64_t argumentBytes = 0;
    for (const tg::GraphValueInfo &info : signature.arguments)
      argumentBytes += storageBytes(info.type);
    logResident(localRanks[0],
                llvm::formatv("resident memory before step 1 {0:F1} MiB, the "
                              "step's arguments",
                              residentMiB())
                    .str()
                    .c_str(),
                static_cast<double>(argumentBytes) / (1 << 20));
    stepsPeakKnown = resetPeakResident();
  }
  // Fault injection for the tests: SPMD_RUN_TEST_EXIT=R:S makes rank R
  // exit with status 3 as step S begins, as a crashed rank would.
  std::optional<std::pair<int64_t, int>> injectedExit;
  if (const char *spec = std::getenv("SPMD_RUN_TEST_EXIT")) {
    long long rank;
    int step;
    if (std::sscanf(spec, "%lld:%d", &rank, &step) == 2)
      injectedExit = {rank, step};
  }
  Gatherer gather(signature.mesh, underMpi, options.f64);
  for (int step = firstStep + 1; step <= options.steps; ++step) {
#ifdef SPMDC_HAVE_MPI
    if (underMpi)
      spmd_rt_set_step(step);
#endif
    if (injectedExit && injectedExit->second == step &&
        llvm::is_contained(localRanks, injectedExit->first)) {
      std::fflush(stdout);
      std::exit(3);
    }
    // A new batch: step k draws batch k - 1 (the first was built with the
    // other inputs). Outside the step's time, which benchmarks read.
    if (step > firstStep + 1 && !datasetArguments.empty()) {
      inputs.batch = step - 1;
      if (!rescatterArguments(signature, datasetArguments, localRanks, inputs,
                              options.f64, compiled.get(), args, errorMessage))
        return failOnThisRank("step " + std::to_string(step) + ": " +
                              errorMessage);
    }
    feedHyperparameters(step);
    std::optional<double> lr;
    if (lrIndex)
      lr = schedule.at(step);
    auto started = std::chrono::steady_clock::now();
    double traceStart = rt::trace::nowMicros();
    FailureOr<RankValues> results = runStep();
    if (failed(results))
      return fail("step " + std::to_string(step) + " failed");
    rt::trace::record("step " + std::to_string(step), "step", traceStart);
    // The step alone, for benchmarks (bench/step_time.py reads it).
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - started)
                    .count();
    spdlog::info("step {} took {:.3f} ms", step, ms);
    std::optional<double> lossValue;
    if (lossIndex) {
      Tensor loss =
          gather.logical(*results, *lossIndex,
                         signature.resultShardings[*lossIndex], "the loss");
      lossValue = lastLoss = loss.data.front();
      if (printing)
        std::printf("step %d loss %.9g\n", step, *lossValue);
    }
    std::fflush(stdout);
    for (size_t k = 0; k < localRanks.size(); ++k)
      for (auto [r, a] : feedback)
        // A compiled step keeps them in its buffers; release the copies.
        args[k][a] = compiled ? Tensor() : (*results)[k][r];
    std::optional<double> evalLoss;
    if (!options.evalDataset.empty() &&
        ((options.evalEvery > 0 && step % options.evalEvery == 0) ||
         step == options.steps)) {
      FailureOr<double> mean = evaluate();
      if (failed(mean))
        return failOnThisRank("the evaluation after step " +
                              std::to_string(step) + ": " + errorMessage);
      evalLoss = *mean;
      if (printing)
        std::fprintf(stderr, "spmd-run: eval after step %d: loss %.6f (%d "
                             "batches of %s)\n",
                     step, *evalLoss, options.evalBatches,
                     options.evalDataset.c_str());
    }
    totalMs += ms;
    double rate = ms > 0 ? items / (ms / 1000) : 0;
    if (metrics) {
      std::fprintf(metrics, "{\"step\": %d", step);
      if (lossValue)
        std::fprintf(metrics, ", \"loss\": %.9g", *lossValue);
      if (evalLoss)
        std::fprintf(metrics, ", \"eval_loss\": %.9g", *evalLoss);
      // Digits enough to read back the double fed to the step.
      if (lr)
        std::fprintf(metrics, ", \"lr\": %s", shortestDecimal(*lr).c_str());
      std::fprintf(metrics, ", \"ms\": %.3f, \"%s_per_s\": %.1f}\n", ms,
                   itemName, rate);
      std::fflush(metrics);
    }
    if (printing && every > 0 && (step % every == 0 || step == options.steps)) {
      std::string loss =
          lossValue ? llvm::formatv("  loss {0:F5}", *lossValue).str() : "";
      char lrText[32] = "";
      if (lr)
        std::snprintf(lrText, sizeof lrText, "  lr %.3e", *lr);
      std::fprintf(
          stderr, "spmd-run: step %d/%d%s%s  %.1f ms  %.0f %s/s  eta %s\n",
          step, options.steps, loss.c_str(), lrText, ms, rate, itemName,
          duration(ms * (options.steps - step) / 1000).c_str());
    }
    lastOutputs = std::move(*results);
    if (std::optional<int> stop = checkpoint(step))
      return *stop;
  }
  if (metrics)
    std::fclose(metrics);
  int ran = std::max(0, options.steps - firstStep);
  if (printing && every > 0 && ran > 0)
    std::fprintf(stderr,
                 "spmd-run: %d steps in %s (%.1f ms a step, %.0f %s/s)%s\n",
                 ran, duration(totalMs / 1000).c_str(), totalMs / ran,
                 totalMs > 0 ? items * ran / (totalMs / 1000) : 0,
                 itemName,
                 lossIndex
                     ? llvm::formatv(", last loss {0:F5}", lastLoss).str().c_str()
                     : "");
  // Each rank's process says what it held at most (the ranks the
  // interpreter simulates share one process).
  if (localRanks.size() == 1) {
    spdlog::info("rank {}: peak resident memory {:.1f} MiB", localRanks[0],
                 peakResidentMiB());
    if (stepsPeakKnown && ran > 0)
      logResident(localRanks[0], "peak resident memory in the steps",
                  peakResidentSinceResetMiB());
  } else {
    spdlog::info("ranks 0 to {} (one process): peak resident memory {:.1f} "
                 "MiB",
                 localRanks.size() - 1, peakResidentMiB());
  }
  return std::nullopt;
}

std::optional<int> Run::checkpoint(int step) {
  if (!checkpoints ||
      !(step == options.steps || (options.checkpointEvery > 0 &&
                                  step % options.checkpointEvery == 0)))
    return std::nullopt;
  // A compiled step holds the current values in its buffers.
  RankValues resident;
  if (compiled) {
    resident.assign(1, std::vector<Tensor>(signature.arguments.size()));
    for (size_t a : checkpointedArguments(signature))
      resident[0][a] = compiled->argument(a);
  }
  // The persistent buffers, for --export-params: rank 0 writes them.
  std::vector<rt::NamedTensor> buffers;
  if (printing) {
    if (moduleFile &&
        !collectModuleBuffers(moduleFile->constantBuffers,
                              inputs.moduleWeights.get(), context, options.f64,
                              buffers, errorMessage))
      return fail(options.input + ": " + errorMessage);
    if (module &&
        !collectProgramBuffers(*module, options.f64, buffers, errorMessage))
      return fail(errorMessage);
  }
  CheckpointProgress progress;
  progress.step = step;
  progress.nextBatch = step; // step k draws batch k - 1
  progress.seed = options.seed;
  progress.dataset = options.dataset;
  progress.shuffle = options.shuffle;
  if (!checkpoints->write(progress, localRanks, compiled ? resident : args,
                          buffers, errorMessage))
    return fail(errorMessage);
  return std::nullopt;
}

std::optional<int> Run::save() {
  // Parameters and state to save, read back from the step's buffers.
  if (compiled && !options.saveParams.empty())
    for (auto [r, a] : feedback)
      args[0][a] = compiled->argument(a);

  // Each file holds logical tensors, assembled from the ranks' blocks.
  Gatherer gather(signature.mesh, underMpi, options.f64);
  if (!options.saveParams.empty()) {
    std::vector<rt::NamedTensor> saved;
    collectParameters(signature, args, gather, options.f64, saved);
    // Persistent buffers the step only reads, as the model holds them.
    if (printing) {
      if (moduleFile &&
          !collectModuleBuffers(moduleFile->constantBuffers,
                                inputs.moduleWeights.get(), context,
                                options.f64, saved, errorMessage))
        return fail(options.input + ": " + errorMessage);
      if (module &&
          !collectProgramBuffers(*module, options.f64, saved, errorMessage))
        return fail(errorMessage);
    }
    if (printing &&
        !rt::writeSafeTensors(options.saveParams, saved, errorMessage))
      return fail(errorMessage);
    spdlog::info("saved {} parameters to {}", saved.size(), options.saveParams);
  }
  if (!options.saveOutputs.empty()) {
    std::vector<rt::NamedTensor> saved;
    collectOutputs(signature, lastOutputs, gather, options.f64, saved);
    if (printing &&
        !rt::writeSafeTensors(options.saveOutputs, saved, errorMessage))
      return fail(errorMessage);
  }
  return std::nullopt;
}

} // namespace

int run(const RunOptions &options, int argc, char **argv) {
  return Run(options, argc, argv).run();
}

} // namespace spmdc::runner
