//===- Relaunch.cpp - this process among the ranks of a job ---------------===//

#include "spmdc/Runner/Relaunch.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <vector>

namespace spmdc::runner {

std::optional<int> mpirunRank() {
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char *value = std::getenv(name))
      return std::atoi(value);
  return std::nullopt;
}

int fail(const std::string &message) {
  // One write: another rank's last words must not land inside the line.
  if (mpirunRank().value_or(0) == 0)
    llvm::errs() << ("spmd-run: error: " + message + "\n");
  return 1;
}

int launchRanks(int argc, char **argv, const std::string &input,
                llvm::StringRef inputBytes, int64_t ranks) {
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
                                      "--oversubscribe", "--bind-to", "none",
                                      "-np", std::to_string(ranks), self};
  for (int i = 1; i < argc; ++i)
    command.push_back(argv[i] == input ? modulePath : argv[i]);
  std::vector<llvm::StringRef> commandRefs(command.begin(), command.end());
  llvm::ErrorOr<std::string> mpirun = llvm::sys::findProgramByName("mpirun");
  if (!mpirun)
    return fail("this module runs on " + std::to_string(ranks) +
                " ranks, which needs mpirun (Debian: openmpi-bin); or start "
                "spmd-run under mpirun -np " +
                std::to_string(ranks));
  spdlog::info("starting {} ranks: {}", ranks, llvm::join(commandRefs, " "));
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
