//===- TraceEvents.cpp - the trace's recorder, for spmd-run --trace -------===//
//
// No dependencies: also compiled into the shared BLAS runtime that
// mlir-runner loads, which keeps its own (unused) recorder.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/Trace.h"

#include <ctime>

namespace spmdc::rt::trace {

namespace {
bool on = false;
std::vector<Event> recorded;
} // namespace

void enable() { on = true; }
bool enabled() { return on; }

double nowMicros() {
  // CLOCK_MONOTONIC is one clock for every process of the machine, so the
  // ranks' tracks line up.
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e6 +
         static_cast<double>(t.tv_nsec) / 1e3;
}

void record(std::string name, const char *category, double startMicros,
            std::string args) {
  if (!on)
    return;
  recorded.push_back({std::move(name), category, startMicros,
                      nowMicros() - startMicros, std::move(args)});
}

const std::vector<Event> &events() { return recorded; }

} // namespace spmdc::rt::trace
