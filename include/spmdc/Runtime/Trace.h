//===- Trace.h - what a rank did when, for spmd-run --trace -------*- C++ -*-===//
//
// A recorder of complete events (Chrome's trace format, "ph": "X"): each
// step, each collective and each GEMM of this process, on one clock that
// all processes of a machine share (CLOCK_MONOTONIC), so that ranks line
// up. Off unless spmd-run --trace turns it on; then each event costs two
// clock reads and an append. No MLIR, no MPI.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNTIME_TRACE_H
#define SPMDC_RUNTIME_TRACE_H

#include <string>
#include <vector>

namespace spmdc::rt::trace {

struct Event {
  std::string name;
  /// "step", "collective" or "gemm".
  const char *category;
  double startMicros, durationMicros;
  /// A JSON object's text ("{...}"), or empty.
  std::string args;
};

void enable();
bool enabled();
/// Microseconds on the clock the events use.
double nowMicros();
/// Records an event from `startMicros` to now.
void record(std::string name, const char *category, double startMicros,
            std::string args = "");
const std::vector<Event> &events();

/// Writes this process's events as a file of its own (`{"rank": R,
/// "events": [...]}`); false with `error` set if it cannot.
bool writeRankEvents(const std::string &path, int rank, std::string &error);
/// Merges the files writeRankEvents wrote (`rankFiles`, one per rank) into
/// one Chrome trace at `path` (`{"traceEvents": [...]}`, one track per
/// rank, times from the first event), and removes them.
bool mergeRankEvents(const std::string &path,
                     const std::vector<std::string> &rankFiles,
                     std::string &error);

} // namespace spmdc::rt::trace

#endif // SPMDC_RUNTIME_TRACE_H
