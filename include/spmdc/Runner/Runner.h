//===- Runner.h - run a training step for K steps ---------------*- C++ -*-===//
//
// What spmd-run does, as a library: reads a compiled module or IR, starts
// its ranks under mpirun when it has several, builds each rank's block of
// the logical inputs, runs the step K times, prints `step K loss X` on
// stdout and saves the logical parameters and outputs. Plain C++ here, so
// that a command line parsed with CLI11 (RTTI, exceptions) can include it.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNNER_RUNNER_H
#define SPMDC_RUNNER_RUNNER_H

#include <cstdint>
#include <optional>
#include <string>

namespace spmdc::runner {

struct RunOptions {
  /// The module or IR file, "-" for stdin.
  std::string input;
  int nranks = 1;
  int steps = 1;
  /// safetensors files of logical parameters (and optimizer state) and of
  /// data inputs, by name; empty: none.
  std::string params;
  std::string data;
  /// A dataset that gives the data inputs a new batch every step
  /// (Dataset.h): a token file or a safetensors file of samples; empty:
  /// none. `datasetDtype`: "u16", "u32" or empty (by the file's suffix).
  std::string dataset;
  std::string datasetDtype;
  /// A held-out dataset (same formats) whose first `evalBatches` batches
  /// the step's loss alone is measured on (the module's @eval), after
  /// every `evalEvery` steps (0: only after the last); empty: none.
  std::string evalDataset;
  int evalEvery = 0;
  int evalBatches = 8;
  /// Draw the dataset's batches at random from `seed`.
  bool shuffle = false;
  /// Seed of the deterministic values of tensors no file gives, and of
  /// --shuffle.
  uint64_t seed = 0;
  /// Where to write the logical parameters after the last step, and the
  /// last step's other outputs; empty: nowhere.
  std::string saveParams;
  std::string saveOutputs;
  /// Where to write checkpoints (Checkpoint.h), and every how many steps
  /// (0: only after the last step); empty: none (with --resume and
  /// `checkpointEvery`, the resumed directory).
  std::string checkpointDir;
  int checkpointEvery = 0;
  /// A checkpoint directory to resume from: its last good checkpoint's
  /// parameters, state, step, dataset position and seed; empty: none.
  std::string resume;
  /// spmd-run --export-params FILE D: write the logical parameters of D's
  /// last good checkpoint (`input`) to FILE and run nothing; empty: run.
  std::string exportParams;
  /// Where to write a Chrome trace of the steps, collectives and GEMMs of
  /// every rank (spmd-run --trace); empty: none.
  std::string trace;
  /// Run IR of any stage through the reference interpreter.
  bool interpret = false;
  /// Interpreter: compute in f64 instead of each op's dtype.
  bool f64 = false;
  /// LLVM's optimisation level for a compiled module's JIT.
  int optLevel = 1;
  /// GEMM threads per rank: a number, or "all" (this process's cores over
  /// the ranks on its node).
  std::string threads = "1";
  /// Loop nests on one thread even where `threads` gives a rank more
  /// (--serial-nests; GEMMs still use them).
  bool serialNests = false;
  /// The step's heap in transparent huge pages (--huge-pages).
  bool hugePages = false;
  /// Ranks waiting in a collective yield their core ("on"), spin ("off"),
  /// or yield when the ranks exceed the cores ("auto";
  /// docs/reliability.md).
  std::string yieldWhenIdle = "auto";
  /// The ranks go to the hosts of this mpirun hostfile (`--hostfile`, given
  /// to the mpirun spmd-run starts); empty: this machine.
  std::string hostfile;
  /// A progress line on stderr every N steps (loss, ms a step, tokens or
  /// samples a second, time left) and a summary at the end; 0: none; -1:
  /// every step when stderr is a terminal, else none.
  int logEvery = -1;
  /// Where to write one JSON object a step (`--metrics FILE.jsonl`);
  /// empty: nowhere.
  std::string metrics;
  /// The learning rate fed to the step's `lr` input (LearningRate.h):
  /// `lrSchedule` "constant", "cosine" or "linear" (empty: not given,
  /// constant); the peak `lr` (unset: the module's, spmdc's --lr), `minLr`
  /// (unset: 0), `warmupSteps` (unset: 0), `totalSteps` (unset: `steps`).
  /// Unset and empty tell a module without an `lr` input apart.
  std::string lrSchedule;
  std::optional<double> lr, minLr;
  std::optional<int64_t> warmupSteps, totalSteps;
};

/// Runs `options.input` for `options.steps` steps and gives the exit code:
/// 0, or 1 after an error printed to stderr (`spmd-run: error: ...`). A
/// module of several ranks started outside mpirun starts itself under
/// mpirun with the command line `argv` (the module from stdin passed on in
/// a file) and gives that job's code.
int run(const RunOptions &options, int argc, char **argv);

} // namespace spmdc::runner

#endif // SPMDC_RUNNER_RUNNER_H
