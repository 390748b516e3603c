//===- Relaunch.h - this process among the ranks of a job -------*- C++ -*-===//
//
// A module of several ranks runs one process per rank under mpirun: the
// runner started alone starts itself under mpirun, and each rank finds its
// own number in mpirun's environment. Every rank checks the same inputs, so
// only rank 0 reports what is wrong with them.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNNER_RELAUNCH_H
#define SPMDC_RUNNER_RELAUNCH_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace spmdc::runner {

/// This process's rank when mpirun (or Slurm's srun) started it, else
/// nullopt.
std::optional<int> mpirunRank();

/// This rank's index among the ranks on its host, and their count, from
/// mpirun's environment or srun's; nullopt where the launcher does not say.
std::optional<int> mpirunLocalRank();
std::optional<int> mpirunLocalSize();

/// Prints `spmd-run: error: <message>` (on rank 0 only under mpirun) and
/// gives the exit code of bad input, 1.
int fail(const std::string &message);

/// Starts `ranks` copies of this executable under mpirun with the command
/// line `argv` (`input` replaced by a file holding `inputBytes` when it is
/// "-", stdin) and gives their exit code: 0, or 1 when any failed.
/// `yieldWhenIdle` ("on", "off", "auto": shouldYield) makes the ranks'
/// collectives sleep while they wait (SPMD_RT_WAIT=sleep). A `hostfile`
/// goes to mpirun (`--hostfile`): the ranks start on its hosts, each of
/// which runs this executable and reads `input` at the same paths, so stdin
/// is refused there (docs/cluster.md).
int launchRanks(int argc, char **argv, const std::string &input,
                llvm::StringRef inputBytes, int64_t ranks,
                llvm::StringRef yieldWhenIdle = "auto",
                llvm::StringRef hostfile = "");

/// Whether `ranks` ranks on one machine like this one should yield their
/// core while they wait: "on", "off", or "auto": when the ranks exceed the
/// cores this process may use.
bool shouldYield(llvm::StringRef yieldWhenIdle, int64_t ranks);

/// This machine's host name, which a rank logs so that a job over several
/// hosts shows where each rank ran.
std::string hostName();

} // namespace spmdc::runner

#endif // SPMDC_RUNNER_RELAUNCH_H
