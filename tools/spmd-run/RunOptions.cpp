//===- RunOptions.cpp - the spmd-run command line -------------------------===//

#include "RunOptions.h"

#include "spmdc/Runner/Relaunch.h"
#include "spmdc/Runtime/Limits.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>

namespace spmdc {

/// A CLI11 check: a whole number of steps, at least `least`.
static std::function<std::string(const std::string &)>
stepsAtLeast(long long least) {
  return [least](const std::string &v) -> std::string {
    try {
      size_t end = 0;
      if (std::stoll(v, &end) >= least && end == v.size())
        return "";
    } catch (...) {
    }
    return "a number of steps >= " + std::to_string(least) + ", not '" + v +
           "'";
  };
}

std::optional<int> parseRunOptions(int argc, char **argv,
                                   runner::RunOptions &options,
                                   std::string &logLevel) {
  CLI::App app{"spmd-run: runs a compiled spmdc module on N ranks, or any "
               "stage's IR through the reference interpreter (--interpret).\n"
               "stdout carries one 'step K loss X' line per step; logs go to "
               "stderr."};
  app.add_option("input", options.input, "module or IR file, - for stdin")
      ->required();
  app.add_option("--nranks", options.nranks, "number of ranks")
      ->check(CLI::PositiveNumber);
  app.add_option("--steps", options.steps, "training steps to run")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--params", options.params,
                 "safetensors file of logical parameters (and optimizer "
                 "state) by name");
  CLI::Option *data =
      app.add_option("--data", options.data,
                     "safetensors file of logical data inputs by name (one "
                     "batch, every step)");
  CLI::Option *dataset =
      app.add_option("--dataset", options.dataset,
                     "a new batch of the data inputs every step from this "
                     "file: uint16 token ids (nanoGPT's train.bin), uint32 "
                     "(*.u32.bin), or safetensors with a leading sample dim")
          ->excludes(data);
  app.add_option("--dataset-dtype", options.datasetDtype,
                 "token width of a --dataset token file (default: u32 for "
                 "*.u32.bin, else u16)")
      ->check(CLI::IsMember({"u16", "u32"}))
      ->needs(dataset);
  app.add_flag("--shuffle", options.shuffle,
               "draw --dataset batches at random from --seed: random "
               "windows of a token file, a permutation a pass of samples")
      ->needs(dataset);
  CLI::Option *evalDataset = app.add_option(
      "--eval-dataset", options.evalDataset,
      "a held-out dataset (the formats of --dataset, --dataset-dtype "
      "applies): the mean loss of its first --eval-batches batches, by the "
      "forward alone, after every --eval-every steps and the last");
  app.add_option("--eval-every", options.evalEvery,
                 "steps between evaluations (default: only after the last)")
      ->check(stepsAtLeast(1))
      ->needs(evalDataset);
  app.add_option("--eval-batches", options.evalBatches,
                 "batches of --eval-dataset an evaluation averages "
                 "(default 8)")
      ->check(stepsAtLeast(1))
      ->needs(evalDataset);
  app.add_option("--seed", options.seed,
                 "seed of the deterministic values of tensors not in a file, "
                 "and of --shuffle");
  app.add_option("--save-params", options.saveParams,
                 "write the logical parameters after the last step here");
  app.add_option("--save-outputs", options.saveOutputs,
                 "write the last step's loss, gradients and other outputs "
                 "here, keyed '<role>/<name>'");
  CLI::Option *checkpointDir = app.add_option(
      "--checkpoint-dir", options.checkpointDir,
      "write sharded checkpoints here (each rank its blocks of the "
      "parameters and optimizer state, and an index): every "
      "--checkpoint-every steps and after the last step");
  CLI::Option *checkpointEvery =
      app.add_option("--checkpoint-every", options.checkpointEvery,
                     "steps between checkpoints (needs --checkpoint-dir, or "
                     "--resume to write into the resumed directory)")
          ->check(stepsAtLeast(1));
  CLI::Option *resume = app.add_option(
      "--resume", options.resume,
      "continue from the last good checkpoint in this directory, on this "
      "module's mesh (--steps counts the whole run)");
  app.add_option("--export-params", options.exportParams,
                 "write the logical parameters of the last good checkpoint "
                 "in the directory given as input to this safetensors "
                 "file, and run nothing")
      ->excludes(resume)
      ->excludes(checkpointDir)
      ->excludes(checkpointEvery);
  resume->excludes("--params");
  app.add_option("--trace", options.trace,
                 "write a Chrome/Perfetto trace here: one track per rank, "
                 "with each step, collective and GEMM (compiled modules)");
  app.add_flag("--interpret", options.interpret,
               "run IR of any stage through the reference interpreter");
  app.add_flag("--f64", options.f64,
               "interpreter: compute in f64 instead of each op's dtype");
  app.add_option("--opt-level", options.optLevel,
                 "compiled modules: LLVM optimisation of the JIT: 0 none "
                 "(fastest to compile), 1 instruction selection and "
                 "scheduling (default), 2 and 3 also LLVM's IR passes; "
                 "native code (spmdc --aot) is linked as compiled")
      ->check(CLI::Range(0, 3));
  app.add_option("--threads", options.threads,
                 "compiled modules: threads of each GEMM and each large "
                 "loop nest in a rank, or 'all': the cores this process may "
                 "use over the ranks on its node (default 1: one core per "
                 "rank)")
      ->check([](const std::string &v) -> std::string {
        if (v == "all")
          return "";
        try {
          if (std::stoi(v) >= 1)
            return "";
        } catch (...) {
        }
        return "--threads takes a positive number or 'all', got '" + v + "'";
      });
  app.add_flag("--serial-nests", options.serialNests,
               "compiled modules: run loop nests on one thread even where "
               "--threads gives a rank more (its GEMMs still use them)");
  app.add_flag("--huge-pages", options.hugePages,
               "compiled CPU modules: back the step's buffers with "
               "transparent huge pages (steady steps a little faster; the "
               "first step's fresh pages can cost far more, as on virtual "
               "machines that hand freed memory back to their host)");
  std::string maxTensorBytes;
  app.add_option("--max-tensor-bytes", maxTensorBytes,
                 "refuse a tensor or file entry of more bytes than this "
                 "(K, M, G, T suffixes: powers of 1024; default 16G)")
      ->check([](const std::string &v) -> std::string {
        return rt::parseByteCount(v) ? "" : "--max-tensor-bytes takes a byte "
                                            "count such as 1048576 or 16G, "
                                            "got '" + v + "'";
      });
  std::string collectiveTimeout;
  app.add_option("--collective-timeout", collectiveTimeout,
                 "seconds a collective may take before its watchdog ends "
                 "the job, naming the rank and the step (default 60; 0: no "
                 "watchdog)")
      ->check([](const std::string &v) -> std::string {
        char *end = nullptr;
        double seconds = std::strtod(v.c_str(), &end);
        if (v.empty() || *end != '\0' || !(seconds >= 0) ||
            seconds > 1e9)
          return "--collective-timeout takes a number of seconds >= 0, got '" +
                 v + "'";
        return "";
      });
  app.add_option("--log-every", options.logEvery,
                 "a progress line on stderr every N steps, and a summary "
                 "(default: every step when stderr is a terminal; 0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--metrics", options.metrics,
                 "write one JSON object a step to this file (JSON Lines): "
                 "step, loss, lr, ms, tokens or samples a second");
  // The learning-rate schedule (LearningRate.h), fed to the step's `lr`.
  auto nonNegative = [](const std::string &v) -> std::string {
    char *end = nullptr;
    double value = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(value >= 0) || std::isinf(value))
      return "a finite number >= 0, not '" + v + "'";
    return "";
  };
  app.add_option("--lr-schedule", options.lrSchedule,
                 "the learning rate of each step: constant (after the "
                 "warmup), or cosine or linear decay from --lr to --min-lr "
                 "at --total-steps (nanoGPT's get_lr; default constant)")
      ->check(CLI::IsMember({"constant", "cosine", "linear"}));
  double lr = 0, minLr = 0;
  int64_t warmupSteps = 0, totalSteps = 0;
  CLI::Option *lrOption =
      app.add_option("--lr", lr,
                     "the peak learning rate (default: the module's, "
                     "spmdc's --lr)")
          ->check(nonNegative);
  CLI::Option *minLrOption =
      app.add_option("--min-lr", minLr,
                     "where cosine and linear decay end (default 0)")
          ->check(nonNegative);
  CLI::Option *warmupOption =
      app.add_option("--warmup-steps", warmupSteps,
                     "steps of linear warmup: step k < W+1 takes "
                     "lr k/(W+1) (default 0)")
          ->check(stepsAtLeast(0));
  CLI::Option *totalOption =
      app.add_option("--total-steps", totalSteps,
                     "the step count the decay spans; --min-lr from there "
                     "on (default --steps)")
          ->check(stepsAtLeast(0));
  app.add_option("--yield-when-idle", options.yieldWhenIdle,
                 "ranks waiting in a collective sleep instead of spinning: "
                 "on, off, or auto (default): when the ranks exceed the "
                 "cores")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app.add_option("--hostfile", options.hostfile,
                 "start the ranks on the hosts of this mpirun hostfile "
                 "(over TCP; every host needs this spmd-run and the module "
                 "at the same paths: docs/cluster.md)");
  app.add_option("--log-level", logLevel, "log level (stderr)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError &e) {
    std::cerr << "spmd-run: error: " << e.what() << "\n"
              << "run 'spmd-run --help' for usage\n";
    return 2;
  }
  if (options.checkpointEvery > 0 && options.checkpointDir.empty() &&
      options.resume.empty()) {
    std::cerr << "spmd-run: error: --checkpoint-every requires "
                 "--checkpoint-dir (or --resume, to write into the resumed "
                 "directory)\n"
              << "run 'spmd-run --help' for usage\n";
    return 2;
  }
  // spmd-run started alone copies a module from stdin to a file for the
  // ranks it starts; a file on this host, which ranks on others cannot read.
  if (!options.hostfile.empty() && options.input == "-") {
    std::cerr << "spmd-run: error: --hostfile starts ranks on other hosts, "
                 "which cannot read this process's stdin: give the module "
                 "as a file at the same path on every host, not '-'\n"
              << "run 'spmd-run --help' for usage\n";
    return 2;
  }
  // Started by the user's mpirun, only rank 0 has the stdin. Rank 0 says
  // so and its exit is the job's; the others leave quietly with 0, since a
  // failed rank would make mpirun end rank 0 before it has spoken.
  if (std::optional<int> rank = runner::mpirunRank();
      rank && options.input == "-") {
    if (*rank != 0)
      return 0;
    std::cerr << "spmd-run: error: under mpirun only rank 0 reads stdin: "
                 "give the module as a file every rank can read, not '-' "
                 "(spmd-run started alone takes '-' and starts mpirun "
                 "itself)\n";
    return 2;
  }
  if (lrOption->count())
    options.lr = lr;
  if (minLrOption->count())
    options.minLr = minLr;
  if (warmupOption->count())
    options.warmupSteps = warmupSteps;
  if (totalOption->count())
    options.totalSteps = totalSteps;
  if (warmupSteps > options.totalSteps.value_or(options.steps)) {
    std::cerr << "spmd-run: error: --warmup-steps " << warmupSteps
              << " is more than the "
              << (options.totalSteps
                      ? "--total-steps "
                      : "--steps (the default --total-steps) ")
              << options.totalSteps.value_or(options.steps) << "\n"
              << "run 'spmd-run --help' for usage\n";
    return 2;
  }
  if (!maxTensorBytes.empty())
    rt::setMaxTensorBytes(*rt::parseByteCount(maxTensorBytes));
  // The runtime reads it as each rank starts (every rank parses this same
  // command line).
  if (!collectiveTimeout.empty())
    setenv("SPMD_COLLECTIVE_TIMEOUT_S", collectiveTimeout.c_str(),
           /*overwrite=*/1);
  return std::nullopt;
}

} // namespace spmdc
