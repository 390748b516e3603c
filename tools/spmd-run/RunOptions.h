//===- RunOptions.h - the spmd-run command line ----------------*- C++ -*-===//
//
// Parsed by CLI11 in a translation unit of its own (CLI11 needs RTTI and
// exceptions; the MLIR side is built without RTTI).
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_TOOLS_SPMD_RUN_RUNOPTIONS_H
#define SPMDC_TOOLS_SPMD_RUN_RUNOPTIONS_H

#include <cstdint>
#include <optional>
#include <string>

namespace spmdc {

struct RunOptions {
  std::string input;
  int nranks = 1;
  int steps = 1;
  std::string params;
  std::string data;
  uint64_t seed = 0;
  std::string saveParams;
  std::string saveOutputs;
  bool interpret = false;
  bool f64 = false;
  /// LLVM's optimisation level for a compiled module's JIT.
  int optLevel = 1;
  /// GEMM threads per rank: a number, or "all" (this process's cores over
  /// the ranks on its node).
  std::string threads = "1";
  std::string logLevel = "warn";
};

/// The GEMM threads `options.threads` asks of a process that is one of
/// `localRanks` ranks on its node.
int gemmThreads(const RunOptions &options, int localRanks);

/// Parses the command line; returns an exit code when the tool should stop
/// (0 after --help, 2 after a usage error, printed to stderr).
std::optional<int> parseRunOptions(int argc, char **argv, RunOptions &options);

} // namespace spmdc

#endif // SPMDC_TOOLS_SPMD_RUN_RUNOPTIONS_H
