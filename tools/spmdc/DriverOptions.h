//===- DriverOptions.h - the spmdc command line ----------------*- C++ -*-===//
//
// Parsed by CLI11 in a translation unit of its own (CLI11 needs RTTI and
// exceptions, MLIR code is built without them). Flags CLI11 does not know
// are MLIR's own (--mlir-print-ir-after-all, ...) and go to llvm::cl.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_TOOLS_SPMDC_DRIVEROPTIONS_H
#define SPMDC_TOOLS_SPMDC_DRIVEROPTIONS_H

#include "spmdc/Dialect/Dist/Transforms/PassOptions.h"
#include "spmdc/Dialect/TensorGraph/Transforms/PassOptions.h"
#include "spmdc/Pipeline/LoweringOptions.h"
#include "spmdc/Report/NetworkEstimate.h"

#include <optional>
#include <string>
#include <vector>

namespace spmdc {

struct DriverOptions {
  std::string input;
  std::string output = "-";
  std::string inputFormat = "auto";
  std::string shardSpec;
  /// --target, --cuda-arch, --precision and --gpu-kernels-on-cpu.
  LoweringOptions lowering;
  /// Where to write each kernel module's PTX (cuda), or empty.
  std::string ptxDir;
  /// Compile the host code ahead of time (module stage), for this CPU.
  bool aot = false;
  std::string aotCpu = "native";
  unsigned aotOptLevel = 1;
  std::string emit = "module";
  tg::PartitionPolicy partition = tg::PartitionPolicy::MinCut;
  dist::FsdpGroup fsdpGroup = dist::FsdpGroup::layer();
  double bucketMiB = dist::kDefaultBucketMiB;
  std::optional<tg::OptimizerKind> optimizer;
  std::optional<double> lr, momentum, weightDecay, beta1, beta2, eps;
  std::optional<double> clipGradNorm;
  /// --grad-accum: micro-batches an optimizer step.
  int64_t gradAccum = 1;
  std::string report;
  /// --network: the simulated cluster of the report's network estimate
  /// (over the spec's "network", key by key).
  std::optional<NetworkSettings> network;
  std::string loss;
  std::string logLevel = "warn";
  bool verifyEach = false;
  /// Arguments for llvm::cl, argv[0] first.
  std::vector<std::string> mlirArgs;
};

/// Parses the command line; returns an exit code when the tool should stop
/// (0 after --help, 2 after a usage error, printed to stderr).
std::optional<int> parseDriverOptions(int argc, char **argv,
                                      DriverOptions &options);

} // namespace spmdc

#endif // SPMDC_TOOLS_SPMDC_DRIVEROPTIONS_H
