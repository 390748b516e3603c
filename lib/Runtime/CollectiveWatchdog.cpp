//===- CollectiveWatchdog.cpp - how a rank fails and ends the job ---------===//
//
// Every failure prints one line that names the rank and the step first and
// aborts the whole job. A watchdog thread aborts it when a collective has
// run longer than the timeout (SPMD_COLLECTIVE_TIMEOUT_S, 60 s by default;
// spmd-run --collective-timeout), naming the call and its group. An
// uncaught exception and the SIGTERM with which mpirun ends the ranks of a
// failed job say so in the same form (docs/reliability.md).
//
// Fault injection for the tests: SPMD_RUN_TEST_FAULT=kill:R:S or stop:R:S
// makes rank R raise SIGKILL or SIGSTOP on itself as it enters its first
// collective of step S, while the others wait in it.
//
//===----------------------------------------------------------------------===//

#include "CollectiveState.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include <unistd.h>

namespace spmdc::rt::collectives {

State &state() {
  static State *s = new State;
  return *s;
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Writes `line` to stderr in one write(2), so that lines from the ranks
/// and threads never interleave mid-line.
void writeLine(const std::string &line) {
  std::string text = line + "\n";
  const char *p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(2, p, left);
    if (n <= 0)
      break;
    p += n;
    left -= n;
  }
}

namespace {

std::string vformat(const char *fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(n > 0 ? n : 0, '\0');
  if (n > 0)
    std::vsnprintf(out.data(), n + 1, fmt, args);
  return out;
}

} // namespace

std::string format(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string out = vformat(fmt, args);
  va_end(args);
  return out;
}

/// "spmd-run: rank R: step S: " (the rank left out before it is known).
std::string prefix() {
  State &s = state();
  if (s.rank < 0)
    return "spmd-run: ";
  return format("spmd-run: rank %d: step %lld: ", s.rank,
                static_cast<long long>(s.step.load()));
}

/// Ends the whole job: MPI_Abort, which OpenMPI's mpirun turns into the end
/// of every rank. An alarm ends this process should MPI_Abort itself hang;
/// mpirun then sees a dead rank and ends the rest. A second caller (the
/// watchdog and the main thread at once) waits for the first.
[[noreturn]] void abortJob() {
  State &s = state();
  if (s.aborting.exchange(true))
    for (;;)
      pause();
  std::signal(SIGALRM, SIG_DFL);
  alarm(10);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Abort(MPI_COMM_WORLD, 1);
  _exit(1);
}

/// Prints "spmd-run: rank R: step S: <call>: <message>" and ends the job.
[[noreturn]] void fail(const char *call, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string message = vformat(fmt, args);
  va_end(args);
  writeLine(prefix() + call + ": " + message);
  abortJob();
}

/// A failure every rank detects alike (a bad mesh, a wrong rank count):
/// rank 0 reports it and aborts; the others give it time to, so the job
/// prints the message once.
[[noreturn]] void failOnce(const char *call, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string message = vformat(fmt, args);
  va_end(args);
  if (state().rank <= 0) {
    writeLine(prefix() + call + ": " + message);
    abortJob();
  }
  sleep(10);
  abortJob();
}

void checkMpi(int rc, const char *call, const char *mpiCall) {
  if (rc == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS)
    length = 0;
  text[length] = '\0';
  fail(call, "%s failed: %s", mpiCall, length ? text : "unknown error");
}

void requireInit(const char *call) {
  State &s = state();
  if (!s.initialized || s.finalized) {
    writeLine(prefix() + call + ": called " +
              (s.finalized ? "after spmd_rt_finalize" : "before spmd_rt_init"));
    abortJob();
  }
}

namespace {

void watchdogLoop() {
  State &s = state();
  auto poll = std::chrono::milliseconds(std::max<int64_t>(
      10, std::min<int64_t>(200, static_cast<int64_t>(s.timeoutS * 50))));
  std::unique_lock<std::mutex> lock(s.mutex);
  while (!s.stop) {
    s.wake.wait_for(lock, poll);
    if (s.stop)
      break;
    uint64_t seq = s.seq.load(std::memory_order_acquire);
    int64_t deadline = s.deadlineNs.load(std::memory_order_acquire);
    if (deadline == 0 || nowNs() < deadline)
      continue;
    const char *call = s.callName.load(std::memory_order_relaxed);
    uint64_t axes = s.callAxes.load(std::memory_order_relaxed);
    if (s.deadlineNs.load(std::memory_order_acquire) != deadline ||
        s.seq.load(std::memory_order_acquire) != seq)
      continue;
    int32_t list[SPMD_RT_MAX_MESH_AXES];
    int32_t n = static_cast<int32_t>((axes >> 32) & 0xF);
    for (int32_t i = 0; i < n; ++i)
      list[i] = static_cast<int32_t>((axes >> (4 * i)) & 0xF);
    // Set-up and finalisation wait for every rank (no axis list).
    std::string group = format("all %d ranks", s.size);
    if (n > 0) {
      std::vector<int64_t> ranks = groupRanks(list, n);
      group = "group over mesh axes " + axesText(axes) + ": ranks ";
      for (size_t i = 0; i < ranks.size() && i < 16; ++i)
        group += (i ? ", " : "") + std::to_string(ranks[i]);
      if (ranks.size() > 16)
        group += ", ...";
    }
    writeLine(prefix() + format("%s did not complete within %g s (%s; a "
                                "member is stuck or dead)",
                                call ? call : "a collective", s.timeoutS,
                                group.c_str()));
    abortJob();
  }
}

/// SIGTERM: mpirun ending the job's ranks after another failed (or the
/// user's kill). One line, then the default action, so the exit status
/// still says SIGTERM. Only async-signal-safe calls.
void onTerminateSignal(int signo) {
  State &s = state();
  char line[160];
  size_t n = 0;
  auto put = [&](const char *text) {
    while (*text && n + 1 < sizeof(line))
      line[n++] = *text++;
  };
  auto putNumber = [&](long long v) {
    char digits[24];
    int k = 0;
    bool negative = v < 0;
    unsigned long long u = negative ? 0ull - static_cast<unsigned long long>(v)
                                    : static_cast<unsigned long long>(v);
    do
      digits[k++] = static_cast<char>('0' + u % 10);
    while ((u /= 10) && k < 22);
    if (negative)
      digits[k++] = '-';
    while (k > 0 && n + 1 < sizeof(line))
      line[n++] = digits[--k];
  };
  put("spmd-run: rank ");
  putNumber(s.rank);
  put(": step ");
  putNumber(static_cast<long long>(s.step.load()));
  put(": ended by SIGTERM (mpirun ends every rank when one fails)\n");
  if (!s.aborting.load())
    (void)!::write(2, line, n);
  std::signal(signo, SIG_DFL);
  ::raise(signo);
}

/// An exception no one caught: its message in the usual form, then the
/// job's end.
[[noreturn]] void onTerminate() {
  std::string what = "an unknown exception";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception &x) {
      what = std::string("'") + x.what() + "'";
    } catch (...) {
    }
  }
  writeLine(prefix() + "uncaught exception " + what + "; ending the job");
  abortJob();
}

void onExit() {
  State &s = state();
  if (s.initialized && !s.finalized && !s.aborting.load())
    writeLine(prefix() + "the process is exiting without spmd_rt_finalize; "
                         "the job will be aborted");
}

} // namespace

void readWatchdogTimeout(const char *call) {
  State &s = state();
  if (const char *env = std::getenv("SPMD_COLLECTIVE_TIMEOUT_S")) {
    char *end = nullptr;
    double value = std::strtod(env, &end);
    if (end == env || *end != '\0' || !std::isfinite(value) || value < 0)
      failOnce(call,
               "SPMD_COLLECTIVE_TIMEOUT_S='%s' is not a number of seconds "
               ">= 0",
               env);
    s.timeoutS = value;
  }
}

void startWatchdog() {
  State &s = state();
  std::atexit(onExit);
  std::set_terminate(onTerminate);
  std::signal(SIGTERM, onTerminateSignal);
  if (s.timeoutS > 0)
    s.watchdog = std::thread(watchdogLoop);
}

void stopWatchdog() {
  State &s = state();
  if (s.watchdog.joinable()) {
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.stop = true;
    }
    s.wake.notify_all();
    s.watchdog.join();
  }
}

} // namespace spmdc::rt::collectives

namespace spmdc::rt::collectives {

void injectTestFault() {
  // Parsed once: KIND:RANK:STEP.
  static const struct Fault {
    int signo = 0;
    long long rank = -1, step = -1;
  } fault = [] {
    Fault f;
    const char *spec = std::getenv("SPMD_RUN_TEST_FAULT");
    char kind[16] = {0};
    if (spec && std::sscanf(spec, "%15[a-z]:%lld:%lld", kind, &f.rank,
                            &f.step) == 3)
      f.signo = std::strcmp(kind, "kill") == 0   ? SIGKILL
                : std::strcmp(kind, "stop") == 0 ? SIGSTOP
                                                 : 0;
    return f;
  }();
  if (!fault.signo)
    return;
  State &s = state();
  if (s.rank == fault.rank && s.step.load() == fault.step)
    ::raise(fault.signo);
}

} // namespace spmdc::rt::collectives

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPMDC_LSAN 1
#endif
#endif
#if defined(SPMDC_LSAN) || defined(__SANITIZE_ADDRESS__)
/// LeakSanitizer's hook: no leak check at the exit of a process that
/// started MPI through the runtime (a rank). OpenMPI's allocations outlive
/// every rank by design, and its frames (built without frame pointers) show
/// as `<unknown module>`, which no suppression can name; processes without
/// MPI (spmdc, spmd-run on one rank, the interpreter) are still checked
/// (docs/reliability.md#sanitizers).
extern "C" int __lsan_is_turned_off() {
  return spmdc::rt::collectives::state().initialized ? 1 : 0;
}
#endif
