//===- spmd-run.cpp - run a training step for K steps ---------------------===//
//
// The command line of the runner (lib/Runner): runs a compiled module on N
// ranks, or any stage's IR through the reference interpreter, for K steps,
// printing `step K loss X` on stdout.
//
//===----------------------------------------------------------------------===//

#include "RunOptions.h"

#include "spmdc/Runner/Runner.h"
#include "spmdc/Runtime/HeapPolicy.h"
#include "spmdc/Support/Logging.h"

#include "llvm/Support/InitLLVM.h"

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  spmdc::runner::RunOptions options;
  std::string logLevel = "warn";
  if (std::optional<int> exitCode =
          spmdc::parseRunOptions(argc, argv, options, logLevel))
    return *exitCode;
  spmdc::setupLogging("spmd-run", logLevel);
  // A step allocates and frees the same large buffers every time; keep
  // them in the heap rather than mmap'ing fresh pages the kernel must zero
  // on every step (page faults were a sixth of gpt2 medium's step and a
  // third of GPT-2 small's).
  spmd_keep_freed_memory();
  return spmdc::runner::run(options, argc, argv);
}
