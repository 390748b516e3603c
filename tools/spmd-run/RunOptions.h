//===- RunOptions.h - the spmd-run command line ----------------*- C++ -*-===//
//
// Parsed by CLI11 in a translation unit of its own (CLI11 needs RTTI and
// exceptions; the MLIR side is built without RTTI) into the runner's plain
// options.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_TOOLS_SPMD_RUN_RUNOPTIONS_H
#define SPMDC_TOOLS_SPMD_RUN_RUNOPTIONS_H

#include "spmdc/Runner/Runner.h"

#include <optional>
#include <string>

namespace spmdc {

/// Parses the command line into `options` and the log level; returns an
/// exit code when the tool should stop (0 after --help, 2 after a usage
/// error, printed to stderr).
std::optional<int> parseRunOptions(int argc, char **argv,
                                   runner::RunOptions &options,
                                   std::string &logLevel);

} // namespace spmdc

#endif // SPMDC_TOOLS_SPMD_RUN_RUNOPTIONS_H
