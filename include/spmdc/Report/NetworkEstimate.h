//===- NetworkEstimate.h - a step-time estimate for a network ---*- C++ -*-===//
//
// The report's `network_estimate` (spmdc --network, docs/report.md): one
// rank's step replayed in program order against a simulated cluster, each
// op at a flops rate and each collective at the ring algorithm's alpha-beta
// cost, so a user can plan past one machine.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_REPORT_NETWORKESTIMATE_H
#define SPMDC_REPORT_NETWORKESTIMATE_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <optional>
#include <string>

namespace spmdc {

/// The simulated cluster. Each field may be unset while the command line's
/// and the spec's settings are merged; the estimate needs the first three.
struct NetworkSettings {
  /// Latency of one step of a ring (one message), in microseconds (>= 0).
  std::optional<double> alphaUs;
  /// Link bandwidth per rank, in gigabits per second (> 0).
  std::optional<double> gbps;
  /// Compute rate of one rank, in GFLOP/s (> 0).
  std::optional<double> gflops;
  /// Memory bandwidth of one rank, in GB/s (> 0). Optional: when set, each
  /// op takes the longer of its flops over `gflops` and its bytes accessed
  /// over this (a roofline); unset, flops alone.
  std::optional<double> membw;
  /// The ranks to estimate for: the mesh's first (data-parallel) axis is
  /// rescaled to reach this many, weak scaling (docs/report.md).
  std::optional<int64_t> ranks;

  /// `other`'s settings over these ones, key by key.
  void overrideWith(const NetworkSettings &other);
  /// The required keys that are unset, as the command line spells them
  /// ("alpha-us, flops"); empty when complete.
  std::string missingKeys() const;
};

/// Parses `--network`'s value,
/// "alpha-us=A,gbps=G,flops=F[,membw=B][,ranks=N]" (keys
/// in any order, each at most once). On failure returns nullopt and says
/// why in `error` (without the flag's name).
std::optional<NetworkSettings> parseNetworkSettings(llvm::StringRef text,
                                                    std::string &error);

/// Checks one setting's value, as the command line spells the key
/// ("alpha-us", "gbps", "flops", "membw", "ranks"); an error message, or
/// empty.
std::string checkNetworkSetting(llvm::StringRef key, double value);

/// `report` (buildCompileReport's JSON) with a `network_estimate` for
/// `module`, the program it describes, on the network `settings` (complete:
/// missingKeys() empty). Fails, with `error` set, when `ranks` does not fit
/// the module's mesh.
std::optional<std::string> withNetworkEstimate(const std::string &report,
                                               mlir::ModuleOp module,
                                               const NetworkSettings &settings,
                                               std::string &error);

} // namespace spmdc

#endif // SPMDC_REPORT_NETWORKESTIMATE_H
