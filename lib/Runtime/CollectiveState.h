//===- CollectiveState.h - what the MPI collectives share -------*- C++ -*-===//
//
// Private to SPMDCRuntimeMPI: the runtime's state, how a rank reports a
// failure and ends the job (CollectiveWatchdog.cpp), this rank's group over
// a list of mesh axes (CollectiveGroups.cpp) and the collectives on MPI or
// an installed transport (CollectiveAlgorithms.cpp); Collectives.cpp is the
// C ABI over them.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_LIB_RUNTIME_COLLECTIVESTATE_H
#define SPMDC_LIB_RUNTIME_COLLECTIVESTATE_H

#include "spmdc/Runtime/Collectives.h"

// The C API only: without these, mpi.h pulls in MPI's deprecated C++
// bindings, which want libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace spmdc::rt::collectives {

/// Everything the runtime holds. Allocated once and never freed, so that a
/// process that exits without spmd_rt_finalize runs no destructor of a
/// running thread or of a communicator.
struct State {
  bool initialized = false;
  bool finalized = false;
  bool ownsMpi = false;
  int rank = -1;
  int size = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> coords;
  /// comms[mask]: the group of this rank over the axes whose bits are set in
  /// mask, ranked in ascending-axis group order. comms[0] is unused.
  std::vector<MPI_Comm> comms;
  std::atomic<int64_t> step{0};

  // Watchdog. The calling thread writes callName and callAxes, then the
  // deadline (release); the watchdog reads the deadline (acquire), then the
  // call, then checks that seq and the deadline have not moved meanwhile.
  double timeoutS = 60;
  std::thread watchdog;
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
  std::atomic<uint64_t> seq{0};
  std::atomic<int64_t> deadlineNs{0};
  std::atomic<const char *> callName{nullptr};
  /// Up to 8 axes, 4 bits each, the count in bits 32 to 35.
  std::atomic<uint64_t> callAxes{0};

  std::atomic<bool> aborting{false};
  /// SPMD_RT_WAIT=sleep: collectives wait sleeping, not spinning
  /// (CollectiveAlgorithms.cpp).
  bool sleepWhenIdle = false;
  /// Where collectives' bytes travel; null: MPI on host buffers.
  const spmd_rt_transport *transport = nullptr;
};

/// The one State of the process.
State &state();

//===----------------------------------------------------------------------===//
// Failures (CollectiveWatchdog.cpp)
//===----------------------------------------------------------------------===//

int64_t nowNs();
/// Writes `line` to stderr in one write(2), so that lines from the ranks
/// and threads never interleave mid-line.
void writeLine(const std::string &line);
std::string format(const char *fmt, ...);
/// "spmd-run: rank R: step S: " (the rank left out before it is known).
std::string prefix();
/// Ends the whole job: MPI_Abort, which OpenMPI's mpirun turns into the end
/// of every rank.
[[noreturn]] void abortJob();
/// Prints "spmd-run: rank R: step S: <call>: <message>" and ends the job.
[[noreturn]] void fail(const char *call, const char *fmt, ...);
/// A failure every rank detects alike (a bad mesh, a wrong rank count):
/// rank 0 reports it and aborts; the others give it time to, so the job
/// prints the message once.
[[noreturn]] void failOnce(const char *call, const char *fmt, ...);
void checkMpi(int rc, const char *call, const char *mpiCall);
/// Ends the job when the runtime is not initialized (or finalized).
void requireInit(const char *call);

//===----------------------------------------------------------------------===//
// Groups (CollectiveGroups.cpp)
//===----------------------------------------------------------------------===//

/// Up to 8 axes, 4 bits each, the count in bits 32 to 35.
uint64_t packAxes(const int32_t *axes, int32_t n);
/// "[0, 2]".
std::string axesText(uint64_t packed);

/// This rank's group over an ordered axis list.
struct Group {
  MPI_Comm comm = MPI_COMM_NULL;
  /// The set of axes (bit a: axis a): which communicator or transport
  /// group.
  uint32_t mask = 0;
  int64_t size = 1;
  /// This rank's index in the listed order.
  int64_t index = 0;
  /// perm[j]: the listed-order index of the member of communicator rank j.
  /// Empty when the two orders agree.
  std::vector<int64_t> perm;
  int64_t position(int64_t commRank) const {
    return perm.empty() ? commRank : perm[commRank];
  }
};

/// The members' ranks in listed group order, for messages.
std::vector<int64_t> groupRanks(const int32_t *axes, int32_t n);
/// Checks the axis list and resolves it to this rank's group.
Group resolveGroup(const char *call, const int32_t *axes, int32_t n);
/// The mesh's shape and this rank's coordinates in it, checked against the
/// job's size.
void setMesh(const char *call, int32_t meshRank, const int64_t *meshShape);
/// One communicator per set of mesh axes (State::comms).
void createCommunicators(const char *call);

//===----------------------------------------------------------------------===//
// Watchdog (CollectiveWatchdog.cpp)
//===----------------------------------------------------------------------===//

/// Arms the watchdog for the lifetime of the object.
/// SPMD_RUN_TEST_FAULT's kill or stop, where it names this rank and step
/// (CollectiveWatchdog.cpp).
void injectTestFault();

class Armed {
public:
  Armed(const char *call, const int32_t *axes, int32_t n) {
    injectTestFault();
    State &s = state();
    if (s.timeoutS <= 0)
      return;
    s.seq.fetch_add(1, std::memory_order_relaxed);
    s.callName.store(call, std::memory_order_relaxed);
    s.callAxes.store(packAxes(axes, n), std::memory_order_relaxed);
    s.deadlineNs.store(nowNs() + static_cast<int64_t>(s.timeoutS * 1e9),
                       std::memory_order_release);
  }
  ~Armed() { state().deadlineNs.store(0, std::memory_order_release); }
  Armed(const Armed &) = delete;
  Armed &operator=(const Armed &) = delete;
};

/// State::timeoutS from SPMD_COLLECTIVE_TIMEOUT_S, where set.
void readWatchdogTimeout(const char *call);
/// Starts the watchdog thread (unless the timeout is 0); warns at exit
/// about a missing spmd_rt_finalize.
void startWatchdog();
/// Stops and joins the watchdog thread.
void stopWatchdog();

//===----------------------------------------------------------------------===//
// The collectives (CollectiveAlgorithms.cpp); `transport` null: MPI on host
// buffers.
//===----------------------------------------------------------------------===//

/// Sums, or with `max` takes the elementwise max.
int allReduce(void *inout, int64_t count, int32_t dtype, const int32_t *axes,
              int32_t numAxes, const spmd_rt_transport *transport,
              bool max = false);
int allGather(const void *in, void *out, int32_t rank,
              const int64_t *localShape, int32_t dim, int32_t dtype,
              const int32_t *axes, int32_t numAxes,
              const spmd_rt_transport *transport);
int reduceScatter(const void *in, void *out, int32_t rank,
                  const int64_t *inShape, int32_t dim, int32_t dtype,
                  const int32_t *axes, int32_t numAxes,
                  const spmd_rt_transport *transport);
int allToAll(const void *in, void *out, int32_t rank, const int64_t *inShape,
             int32_t splitDim, int32_t concatDim, int32_t dtype,
             const int32_t *axes, int32_t numAxes,
             const spmd_rt_transport *transport);
int localSlice(const void *in, void *out, int32_t rank, const int64_t *inShape,
               int32_t dim, int32_t dtype, const int32_t *axes,
               int32_t numAxes);
/// Starts, non-blocking, the collective `kind` (an spmd_collective_kind
/// other than a local slice) over a group of more than one member, as
/// spmd_collective_<dtype> runs it: on MPI on host buffers, or through
/// `transport`'s start (which it must have) on its buffers; `in` must stay
/// and `out` goes unread until waitCollective. Returns the handle. The
/// trace names it `traceName` with `traceArgs`.
int64_t startCollective(int32_t kind, const void *in, void *out, int32_t rank,
                        const int64_t *inShape, int32_t dim, int32_t dim2,
                        int32_t dtype, const int32_t *axes, int32_t numAxes,
                        const spmd_rt_transport *transport,
                        std::string traceName, std::string traceArgs);
/// Blocks (under the watchdog) until the collective `handle` names is done
/// and finishes its layout work; its trace events end here.
void waitCollective(int64_t handle);
/// One MPI_Test of every started collective's requests, so MPI advances
/// them while compiled code computes (SPMD_RT_PROGRESS=test, the default).
/// A transport's started collectives advance on their own (NCCL: on the
/// device).
void progressCollectives();

} // namespace spmdc::rt::collectives

#endif // SPMDC_LIB_RUNTIME_COLLECTIVESTATE_H
