//===- Relaunch.cpp - this process among the ranks of a job ---------------===//

#include "spmdc/Runner/Relaunch.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <initializer_list>
#include <vector>

#include <sched.h>
#include <unistd.h>

namespace spmdc::runner {

namespace {

/// The first of the environment variables `names` that is set, as a
/// number.
std::optional<int> firstOf(std::initializer_list<const char *> names) {
  for (const char *name : names)
    if (const char *value = std::getenv(name))
      return std::atoi(value);
  return std::nullopt;
}

} // namespace

std::optional<int> mpirunRank() {
  return firstOf({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"});
}

// OpenMPI's mpirun, MPICH's (Hydra), then srun (whose per-node task count
// is set only when the job asked for one).
std::optional<int> mpirunLocalRank() {
  return firstOf(
      {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"});
}

std::optional<int> mpirunLocalSize() {
  return firstOf({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                  "SLURM_NTASKS_PER_NODE"});
}

int fail(const std::string &message) {
  // One write: another rank's last words must not land inside the line.
  if (mpirunRank().value_or(0) == 0)
    llvm::errs() << ("spmd-run: error: " + message + "\n");
  return 1;
}

bool shouldYield(llvm::StringRef yieldWhenIdle, int64_t ranks) {
  if (yieldWhenIdle != "auto")
    return yieldWhenIdle == "on";
  // More ranks than cores. Not the machine's load: that changes from run
  // to run, and a collective's algorithm (so the rounding of a sum over
  // more than two ranks) with it.
  cpu_set_t set;
  int64_t cores =
      sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  return ranks > cores;
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0)
    return "(unknown)";
  return name;
}

int launchRanks(int argc, char **argv, const std::string &input,
                llvm::StringRef inputBytes, int64_t ranks,
                llvm::StringRef yieldWhenIdle, llvm::StringRef hostfile) {
  // Checked here, not by the command line: the ranks parse it too, on hosts
  // that need not hold the file.
  if (!hostfile.empty() && !llvm::sys::fs::is_regular_file(hostfile))
    return fail("cannot read the hostfile '" + hostfile.str() + "'");
  std::string modulePath = input;
  llvm::SmallString<128> temporary;
  if (input == "-") {
    int fd;
    if (llvm::sys::fs::createTemporaryFile("spmd-run", "mod", fd, temporary))
      return fail("cannot write the module from stdin to a temporary file");
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << inputBytes;
    modulePath = temporary.str().str();
  }
  std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&fail);
  std::vector<std::string> command = {"mpirun", "--allow-run-as-root",
                                      "--oversubscribe", "--bind-to", "none"};
  // A rank that spins in a wait takes the core a rank with work needs when
  // they share cores (a 2-rank step went from 0.05 ms to 24-56 ms next to
  // one busy process): then waiting ranks sleep.
  // Yielding: the runtime's collectives sleep between polls while they
  // wait (SPMD_RT_WAIT=sleep). OpenMPI's mpi_yield_when_idle alone was
  // measured and made such steps slower (sched_yield hands the core to the
  // busy process for its whole slice): docs/reliability.md.
  // Over several hosts, how many ranks share one is mpirun's choice: there
  // `auto` counts on a core a rank, as a cluster's jobs are sized.
  bool yield = (hostfile.empty() || yieldWhenIdle != "auto") &&
               shouldYield(yieldWhenIdle, ranks);
  if (yield)
    command.insert(command.end(), {"-x", "SPMD_RT_WAIT=sleep"});
  // On one host the messages go through ob1's shared-memory transport
  // (vader); naming it spares MPI_Init the probing of the other PMLs'
  // network libraries (cm's PSM2 and OFI): 0.40 s to 0.14 s to start two
  // ranks on a 2-core machine (docs/benchmarks.md). A choice the user made
  // in the environment stands.
  if (hostfile.empty() && !std::getenv("OMPI_MCA_pml"))
    command.insert(command.end(), {"--mca", "pml", "ob1"});
  if (!hostfile.empty())
    command.insert(command.end(), {"--hostfile", hostfile.str()});
  command.insert(command.end(), {"-np", std::to_string(ranks), self});
  for (int i = 1; i < argc; ++i)
    command.push_back(argv[i] == input ? modulePath : argv[i]);
  std::vector<llvm::StringRef> commandRefs(command.begin(), command.end());
  llvm::ErrorOr<std::string> mpirun = llvm::sys::findProgramByName("mpirun");
  if (!mpirun)
    return fail("this module runs on " + std::to_string(ranks) +
                " ranks, which needs mpirun (Debian: openmpi-bin); or start "
                "spmd-run under mpirun -np " +
                std::to_string(ranks));
  spdlog::info("starting {} ranks ({} when idle): {}", ranks,
               yield ? "yielding" : "spinning", llvm::join(commandRefs, " "));
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(*mpirun, commandRefs, std::nullopt, {}, 0,
                                     0, &error);
  if (!temporary.empty())
    llvm::sys::fs::remove(temporary);
  if (rc < 0)
    return fail("mpirun failed: " + error);
  return rc == 0 ? 0 : 1;
}

} // namespace spmdc::runner
