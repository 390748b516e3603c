//===- Collectives.cpp - MPI collectives over mesh axes -------------------===//
//
// The C ABI of Collectives.h on MPI. One sub-communicator per set of mesh
// axes, created up front with MPI_Comm_split; its rank order is the group
// order with the axes ascending, and a call that lists the axes in another
// order permutes blocks while it rearranges them. MPI's collectives move
// contiguous blocks, so a collective along any dim but the outermost packs
// its blocks into a scratch buffer first or unpacks them after.
//
// A watchdog thread aborts the job when a collective has run longer than
// the timeout; every other failure aborts from the calling thread. Both
// print one line that names the rank and the step first.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/Collectives.h"
#include "spmdc/Runtime/MemRefView.h"

// The C API only: without these, mpi.h pulls in MPI's deprecated C++
// bindings, which want libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

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
  /// Where collectives' bytes travel; null: MPI on host buffers.
  const spmd_rt_transport *transport = nullptr;
  /// Scratch buffers for packed chunks: host ones (malloc) for MPI, the
  /// transport's (device memory) for it.
  struct Scratch {
    char *data = nullptr;
    size_t size = 0;
  } hostScratch[2], transportScratch[2];
};

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

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

uint64_t packAxes(const int32_t *axes, int32_t n) {
  uint64_t packed = static_cast<uint64_t>(n) << 32;
  for (int32_t i = 0; i < n; ++i)
    packed |= static_cast<uint64_t>(axes[i] & 0xF) << (4 * i);
  return packed;
}

std::string axesText(uint64_t packed) {
  int n = static_cast<int>((packed >> 32) & 0xF);
  std::string text = "[";
  for (int i = 0; i < n; ++i)
    text += (i ? ", " : "") + std::to_string((packed >> (4 * i)) & 0xF);
  return text + "]";
}

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
std::vector<int64_t> groupRanks(const int32_t *axes, int32_t n) {
  State &s = state();
  int64_t size = 1;
  for (int32_t i = 0; i < n; ++i)
    size *= s.shape[axes[i]];
  std::vector<int64_t> ranks;
  for (int64_t index = 0; index < size; ++index) {
    std::vector<int64_t> c = s.coords;
    int64_t rest = index;
    for (int32_t i = n - 1; i >= 0; --i) {
      c[axes[i]] = rest % s.shape[axes[i]];
      rest /= s.shape[axes[i]];
    }
    int64_t r = 0;
    for (size_t a = 0; a < c.size(); ++a)
      r = r * s.shape[a] + c[a];
    ranks.push_back(r);
  }
  return ranks;
}

/// Checks the axis list and resolves it to this rank's group.
Group resolveGroup(const char *call, const int32_t *axes, int32_t n) {
  State &s = state();
  int32_t meshRank = static_cast<int32_t>(s.shape.size());
  if (n < 0 || n > meshRank || (n > 0 && !axes))
    fail(call, "bad axis list (%d axes) for a mesh of %d axes", n, meshRank);
  uint32_t mask = 0;
  bool ascending = true;
  for (int32_t i = 0; i < n; ++i) {
    if (axes[i] < 0 || axes[i] >= meshRank)
      fail(call, "mesh axis %d out of range: the mesh has %d axes", axes[i],
           meshRank);
    if (mask & (1u << axes[i]))
      fail(call, "mesh axis %d listed twice", axes[i]);
    mask |= 1u << axes[i];
    if (i > 0 && axes[i] < axes[i - 1])
      ascending = false;
  }
  Group g;
  for (int32_t i = 0; i < n; ++i) {
    g.size *= s.shape[axes[i]];
    g.index = g.index * s.shape[axes[i]] + s.coords[axes[i]];
  }
  if (g.size == 1)
    return g;
  g.comm = s.comms[mask];
  g.mask = mask;
  if (ascending)
    return g;
  // Communicator rank j is the ascending-order index; decode it into
  // coordinates over the axes, then encode those in the listed order.
  g.perm.resize(g.size);
  std::vector<int64_t> c(meshRank, 0);
  for (int64_t j = 0; j < g.size; ++j) {
    int64_t rest = j;
    for (int32_t a = meshRank - 1; a >= 0; --a)
      if (mask & (1u << a)) {
        c[a] = rest % s.shape[a];
        rest /= s.shape[a];
      }
    int64_t listed = 0;
    for (int32_t i = 0; i < n; ++i)
      listed = listed * s.shape[axes[i]] + c[axes[i]];
    g.perm[j] = listed;
  }
  return g;
}

//===----------------------------------------------------------------------===//
// Watchdog
//===----------------------------------------------------------------------===//

/// Arms the watchdog for the lifetime of the object.
class Armed {
public:
  Armed(const char *call, const int32_t *axes, int32_t n) {
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

void onExit() {
  State &s = state();
  if (s.initialized && !s.finalized && !s.aborting.load())
    writeLine(prefix() + "the process is exiting without spmd_rt_finalize; "
                         "the job will be aborted");
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

struct DTypeInfo {
  MPI_Datatype mpi;
  size_t bytes;
};

DTypeInfo dtypeInfo(const char *call, int32_t dtype) {
  switch (dtype) {
  case SPMD_DTYPE_F32:
    return {MPI_FLOAT, 4};
  case SPMD_DTYPE_F64:
    return {MPI_DOUBLE, 8};
  case SPMD_DTYPE_I64:
    return {MPI_INT64_T, 8};
  case SPMD_DTYPE_I32:
    return {MPI_INT32_T, 4};
  default:
    fail(call, "unknown dtype %d (expected 0 f32, 1 f64, 2 i64, 3 i32)", dtype);
  }
}

/// A row-major tensor seen as [outer][dimSize][inner] around one dim.
struct Layout {
  int64_t outer = 1, dimSize = 1, inner = 1;
  int64_t count() const { return outer * dimSize * inner; }
};

Layout layoutOf(const char *call, int32_t rank, const int64_t *shape,
                int32_t dim, const char *what) {
  if (rank < 1 || !shape)
    fail(call, "a tensor needs at least one dim (got rank %d)", rank);
  if (dim < 0 || dim >= rank)
    fail(call, "%s %d out of range for a tensor of %d dims", what, dim, rank);
  Layout l;
  for (int32_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      fail(call, "negative size %lld in dim %d",
           static_cast<long long>(shape[i]), i);
    if (i < dim)
      l.outer *= shape[i];
    else if (i == dim)
      l.dimSize = shape[i];
    else
      l.inner *= shape[i];
  }
  return l;
}

void checkDivisible(const char *call, const Layout &l, int64_t groupSize,
                    int32_t dim, const char *what) {
  if (l.dimSize % groupSize != 0)
    fail(call, "%s %d has size %lld, which the group of %lld does not divide",
         what, dim, static_cast<long long>(l.dimSize),
         static_cast<long long>(groupSize));
}

/// MPI counts are ints; one member's block must fit.
int blockCount(const char *call, int64_t count) {
  if (count > INT_MAX)
    fail(call, "a block of %lld elements exceeds MPI's count limit (%d)",
         static_cast<long long>(count), INT_MAX);
  return static_cast<int>(count);
}

/// Scratch buffer `which` (0 or 1) of at least `bytes` for `t` (null: MPI).
char *scratch(const spmd_rt_transport *t, int which, size_t bytes) {
  State::Scratch &buffer =
      t ? state().transportScratch[which] : state().hostScratch[which];
  if (buffer.size >= bytes)
    return buffer.data;
  if (buffer.data)
    t ? t->release(buffer.data) : std::free(buffer.data);
  buffer.data = static_cast<char *>(t ? t->alloc(bytes) : std::malloc(bytes));
  if (!buffer.data)
    fail("scratch", "cannot allocate %zu bytes", bytes);
  buffer.size = bytes;
  return buffer.data;
}

/// Fails the job when the transport reports an error.
void checkTransport(const char *call, const spmd_rt_transport *t,
                    const char *error) {
  if (error)
    fail(call, "%s: %s", t->name, error);
}

/// dst[j][o] = src[o][pos(j)]: src is [outer][n][row], dst [n][outer][row]
/// (row in bytes). Packs the chunk each member gets into contiguous blocks.
void packChunks(char *dst, const char *src, const Group &g, int64_t outer,
                size_t row) {
  for (int64_t j = 0; j < g.size; ++j)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + (j * outer + o) * row,
                  src + (o * g.size + g.position(j)) * row, row);
}

/// dst[o][pos(j)] = src[j][o]: the inverse of packChunks.
void unpackChunks(char *dst, const char *src, const Group &g, int64_t outer,
                  size_t row) {
  for (int64_t j = 0; j < g.size; ++j)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + (o * g.size + g.position(j)) * row,
                  src + (j * outer + o) * row, row);
}

/// dst[o] = src[o][index]: chunk `index` of n along the middle dim.
void copyChunk(char *dst, const char *src, int64_t n, int64_t index,
               int64_t outer, size_t row) {
  for (int64_t o = 0; o < outer; ++o)
    std::memmove(dst + o * row, src + (o * n + index) * row, row);
}

bool contiguousIdentity(const Group &g, int64_t outer) {
  return outer == 1 && g.perm.empty();
}

} // namespace

//===----------------------------------------------------------------------===//
// C ABI
//===----------------------------------------------------------------------===//

extern "C" {

int spmd_rt_init(int *argc, char ***argv, int32_t mesh_rank,
                 const int64_t *mesh_shape) {
  const char *call = "spmd_rt_init";
  State &s = state();
  if (s.initialized)
    fail(call, "called twice");
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) !=
        MPI_SUCCESS) {
      writeLine(prefix() + call + ": MPI_Init_thread failed");
      _exit(1);
    }
    s.ownsMpi = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  if (mesh_rank < 1 || mesh_rank > SPMD_RT_MAX_MESH_AXES || !mesh_shape)
    failOnce(call, "a mesh needs 1 to %d axes, got %d", SPMD_RT_MAX_MESH_AXES,
             mesh_rank);
  int64_t meshSize = 1;
  std::string shapeText = "[";
  for (int32_t a = 0; a < mesh_rank; ++a) {
    if (mesh_shape[a] < 1)
      failOnce(call, "mesh axis %d has size %lld; sizes must be >= 1", a,
               static_cast<long long>(mesh_shape[a]));
    meshSize *= mesh_shape[a];
    shapeText += (a ? ", " : "") + std::to_string(mesh_shape[a]);
  }
  shapeText += "]";
  if (meshSize != s.size)
    failOnce(call,
             "the mesh %s has %lld ranks but the job has %d (run it with "
             "mpirun -np %lld)",
             shapeText.c_str(), static_cast<long long>(meshSize), s.size,
             static_cast<long long>(meshSize));

  s.shape.assign(mesh_shape, mesh_shape + mesh_rank);
  s.coords.assign(mesh_rank, 0);
  for (int64_t a = mesh_rank - 1, rest = s.rank; a >= 0; --a) {
    s.coords[a] = rest % s.shape[a];
    rest /= s.shape[a];
  }

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
  s.initialized = true;
  std::atexit(onExit);
  if (s.timeoutS > 0)
    s.watchdog = std::thread(watchdogLoop);

  // One communicator per set of axes; key = group index with the axes
  // ascending, color = the rank with those axes' coordinates zeroed.
  Armed armed(call, nullptr, 0);
  uint32_t sets = 1u << mesh_rank;
  s.comms.assign(sets, MPI_COMM_NULL);
  for (uint32_t mask = 1; mask < sets; ++mask) {
    int64_t color = 0, key = 0;
    for (int32_t a = 0; a < mesh_rank; ++a) {
      bool in = mask & (1u << a);
      color = color * s.shape[a] + (in ? 0 : s.coords[a]);
      if (in)
        key = key * s.shape[a] + s.coords[a];
    }
    checkMpi(MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color),
                            static_cast<int>(key), &s.comms[mask]),
             call, "MPI_Comm_split");
  }
  return 0;
}

int spmd_rt_rank(void) {
  requireInit("spmd_rt_rank");
  return state().rank;
}

int spmd_rt_size(void) {
  requireInit("spmd_rt_size");
  return state().size;
}

void spmd_rt_set_step(int64_t step) { state().step.store(step); }

int64_t spmd_rt_group_size(const int32_t *axes, int32_t num_axes) {
  requireInit("spmd_rt_group_size");
  return resolveGroup("spmd_rt_group_size", axes, num_axes).size;
}

int64_t spmd_rt_group_index(const int32_t *axes, int32_t num_axes) {
  requireInit("spmd_rt_group_index");
  return resolveGroup("spmd_rt_group_index", axes, num_axes).index;
}

void spmd_rt_fail(const char *call, const char *message) {
  fail(call ? call : "spmd-run", "%s", message ? message : "failed");
}

int spmd_rt_set_transport(const spmd_rt_transport *transport) {
  const char *call = "spmd_rt_set_transport";
  requireInit(call);
  State &s = state();
  if (!transport || s.transport)
    fail(call, transport ? "a transport is installed already" : "null");
  Armed armed(call, nullptr, 0);
  std::vector<char> id(transport->id_bytes);
  // Every rank walks the sets of axes in the same order, as
  // spmd_rt_init made the communicators.
  for (uint32_t mask = 1; mask < s.comms.size(); ++mask) {
    int size = 0, rank = 0;
    checkMpi(MPI_Comm_size(s.comms[mask], &size), call, "MPI_Comm_size");
    if (size == 1)
      continue;
    checkMpi(MPI_Comm_rank(s.comms[mask], &rank), call, "MPI_Comm_rank");
    if (rank == 0 && transport->make_id) {
      if (const char *error = transport->make_id(id.data()))
        fail(call, "%s: %s", transport->name, error);
    }
    checkMpi(MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_BYTE, 0,
                       s.comms[mask]),
             call, "MPI_Bcast");
    if (const char *error = transport->init_group(mask, size, rank, id.data()))
      fail(call, "%s: %s", transport->name, error);
  }
  s.transport = transport;
  return 0;
}

void spmd_rt_finalize(void) {
  const char *call = "spmd_rt_finalize";
  requireInit(call);
  State &s = state();
  {
    Armed armed(call, nullptr, 0);
    checkMpi(MPI_Barrier(MPI_COMM_WORLD), call, "MPI_Barrier");
  }
  if (s.watchdog.joinable()) {
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.stop = true;
    }
    s.wake.notify_all();
    s.watchdog.join();
  }
  if (const spmd_rt_transport *t = s.transport) {
    for (State::Scratch &buffer : s.transportScratch)
      if (buffer.data)
        t->release(buffer.data);
    if (t->finalize)
      t->finalize();
    s.transport = nullptr;
  }
  for (MPI_Comm &comm : s.comms)
    if (comm != MPI_COMM_NULL)
      MPI_Comm_free(&comm);
  s.finalized = true;
  if (s.ownsMpi)
    MPI_Finalize();
}

static int allReduce(void *inout, int64_t count, int32_t dtype,
                     const int32_t *axes, int32_t num_axes,
                     const spmd_rt_transport *transport) {
  const char *call = "spmd_all_reduce";
  requireInit(call);
  DTypeInfo t = dtypeInfo(call, dtype);
  Group g = resolveGroup(call, axes, num_axes);
  if (count < 0 || (count > 0 && !inout))
    fail(call, "bad buffer (%lld elements)", static_cast<long long>(count));
  if (g.size == 1)
    return 0;
  Armed armed(call, axes, num_axes);
  if (transport) {
    checkTransport(call, transport,
                   transport->all_reduce(inout, count, dtype, g.mask));
    return 0;
  }
  // Sums are elementwise, so a buffer past MPI's int count goes in pieces.
  const int64_t piece = int64_t(1) << 30;
  for (int64_t done = 0; done < count; done += piece) {
    int n = static_cast<int>(std::min(piece, count - done));
    checkMpi(MPI_Allreduce(MPI_IN_PLACE,
                           static_cast<char *>(inout) + done * t.bytes, n,
                           t.mpi, MPI_SUM, g.comm),
             call, "MPI_Allreduce");
  }
  return 0;
}

static int allGather(const void *in, void *out, int32_t rank,
                     const int64_t *local_shape, int32_t dim, int32_t dtype,
                     const int32_t *axes, int32_t num_axes,
                     const spmd_rt_transport *transport) {
  const char *call = "spmd_all_gather";
  requireInit(call);
  DTypeInfo t = dtypeInfo(call, dtype);
  Layout l = layoutOf(call, rank, local_shape, dim, "dim");
  Group g = resolveGroup(call, axes, num_axes);
  size_t bytes = l.count() * t.bytes;
  if (bytes && (!in || !out))
    fail(call, "null buffer");
  if (g.size == 1) {
    if (bytes)
      std::memmove(out, in, bytes);
    return 0;
  }
  int block = blockCount(call, l.count());
  Armed armed(call, axes, num_axes);
  auto gatherInto = [&](void *to) {
    if (transport)
      checkTransport(call, transport,
                     transport->all_gather(in, to, block, dtype, g.mask));
    else
      checkMpi(MPI_Allgather(in, block, t.mpi, to, block, t.mpi, g.comm), call,
               "MPI_Allgather");
  };
  if (contiguousIdentity(g, l.outer)) {
    gatherInto(out);
    return 0;
  }
  char *gathered = scratch(transport, 0, bytes * g.size);
  gatherInto(gathered);
  unpackChunks(static_cast<char *>(out), gathered, g, l.outer,
               l.dimSize * l.inner * t.bytes);
  return 0;
}

static int reduceScatter(const void *in, void *out, int32_t rank,
                         const int64_t *in_shape, int32_t dim, int32_t dtype,
                         const int32_t *axes, int32_t num_axes,
                         const spmd_rt_transport *transport) {
  const char *call = "spmd_reduce_scatter";
  requireInit(call);
  DTypeInfo t = dtypeInfo(call, dtype);
  Layout l = layoutOf(call, rank, in_shape, dim, "dim");
  Group g = resolveGroup(call, axes, num_axes);
  checkDivisible(call, l, g.size, dim, "dim");
  size_t bytes = l.count() * t.bytes;
  if (bytes && (!in || !out))
    fail(call, "null buffer");
  if (g.size == 1) {
    if (bytes)
      std::memmove(out, in, bytes);
    return 0;
  }
  int64_t chunkRows = l.dimSize / g.size;
  int block = blockCount(call, l.outer * chunkRows * l.inner);
  Armed armed(call, axes, num_axes);
  const void *send = in;
  if (!contiguousIdentity(g, l.outer)) {
    char *packed = scratch(transport, 0, bytes);
    packChunks(packed, static_cast<const char *>(in), g, l.outer,
               chunkRows * l.inner * t.bytes);
    send = packed;
  }
  if (transport)
    checkTransport(call, transport,
                   transport->reduce_scatter(send, out, block, dtype, g.mask));
  else
    checkMpi(MPI_Reduce_scatter_block(send, out, block, t.mpi, MPI_SUM, g.comm),
             call, "MPI_Reduce_scatter_block");
  return 0;
}

static int allToAll(const void *in, void *out, int32_t rank,
                    const int64_t *in_shape, int32_t split_dim,
                    int32_t concat_dim, int32_t dtype, const int32_t *axes,
                    int32_t num_axes, const spmd_rt_transport *transport) {
  const char *call = "spmd_all_to_all";
  requireInit(call);
  DTypeInfo t = dtypeInfo(call, dtype);
  Layout split = layoutOf(call, rank, in_shape, split_dim, "split_dim");
  layoutOf(call, rank, in_shape, concat_dim, "concat_dim");
  Group g = resolveGroup(call, axes, num_axes);
  checkDivisible(call, split, g.size, split_dim, "split_dim");
  size_t bytes = split.count() * t.bytes;
  if (bytes && (!in || !out))
    fail(call, "null buffer");
  if (g.size == 1) {
    if (bytes)
      std::memmove(out, in, bytes);
    return 0;
  }
  // A received block has the chunk's shape; out concatenates them.
  std::vector<int64_t> chunkShape(in_shape, in_shape + rank);
  chunkShape[split_dim] /= g.size;
  Layout concat =
      layoutOf(call, rank, chunkShape.data(), concat_dim, "concat_dim");
  int block = blockCount(call, concat.count());
  Armed armed(call, axes, num_axes);
  const void *send = in;
  if (!contiguousIdentity(g, split.outer)) {
    char *packed = scratch(transport, 0, bytes);
    packChunks(packed, static_cast<const char *>(in), g, split.outer,
               chunkShape[split_dim] * split.inner * t.bytes);
    send = packed;
  }
  auto exchangeInto = [&](void *to) {
    if (transport)
      checkTransport(call, transport,
                     transport->all_to_all(send, to, block, dtype, g.mask));
    else
      checkMpi(MPI_Alltoall(send, block, t.mpi, to, block, t.mpi, g.comm), call,
               "MPI_Alltoall");
  };
  if (contiguousIdentity(g, concat.outer)) {
    exchangeInto(out);
    return 0;
  }
  char *received = scratch(transport, 1, bytes);
  exchangeInto(received);
  unpackChunks(static_cast<char *>(out), received, g, concat.outer,
               concat.dimSize * concat.inner * t.bytes);
  return 0;
}

int spmd_all_reduce(void *inout, int64_t count, int32_t dtype,
                    const int32_t *axes, int32_t num_axes) {
  return allReduce(inout, count, dtype, axes, num_axes, nullptr);
}

int spmd_all_gather(const void *in, void *out, int32_t rank,
                    const int64_t *local_shape, int32_t dim, int32_t dtype,
                    const int32_t *axes, int32_t num_axes) {
  return allGather(in, out, rank, local_shape, dim, dtype, axes, num_axes,
                   nullptr);
}

int spmd_reduce_scatter(const void *in, void *out, int32_t rank,
                        const int64_t *in_shape, int32_t dim, int32_t dtype,
                        const int32_t *axes, int32_t num_axes) {
  return reduceScatter(in, out, rank, in_shape, dim, dtype, axes, num_axes,
                       nullptr);
}

int spmd_all_to_all(const void *in, void *out, int32_t rank,
                    const int64_t *in_shape, int32_t split_dim,
                    int32_t concat_dim, int32_t dtype, const int32_t *axes,
                    int32_t num_axes) {
  return allToAll(in, out, rank, in_shape, split_dim, concat_dim, dtype, axes,
                  num_axes, nullptr);
}

int spmd_local_slice(const void *in, void *out, int32_t rank,
                     const int64_t *in_shape, int32_t dim, int32_t dtype,
                     const int32_t *axes, int32_t num_axes) {
  const char *call = "spmd_local_slice";
  requireInit(call);
  DTypeInfo t = dtypeInfo(call, dtype);
  Layout l = layoutOf(call, rank, in_shape, dim, "dim");
  Group g = resolveGroup(call, axes, num_axes);
  checkDivisible(call, l, g.size, dim, "dim");
  size_t bytes = l.count() * t.bytes;
  if (bytes && (!in || !out))
    fail(call, "null buffer");
  if (bytes == 0)
    return 0;
  copyChunk(static_cast<char *>(out), static_cast<const char *>(in), g.size,
            g.index, l.outer, l.dimSize / g.size * l.inner * t.bytes);
  return 0;
}

} // extern "C"

namespace {

/// A buffer of compiled code; the lowering hands over identity-layout
/// buffers, anything else is a compiler bug, not something to compute
/// wrongly on.
spmdc::rt::MemRefView viewOf(const char *call, int64_t rank, void *descriptor,
                             size_t elementBytes) {
  spmdc::rt::MemRefView view(rank, descriptor, elementBytes);
  if (!view.contiguous)
    fail(call, "a buffer is not contiguous");
  return view;
}

void collective(int32_t dtype, size_t elementBytes, int32_t kind, int64_t dim,
                int64_t dim2, int64_t axesCode, int64_t inRank, void *inDesc,
                int64_t outRank, void *outDesc) {
  const char *call = "spmd_collective";
  std::vector<int32_t> axes;
  for (; axesCode; axesCode >>= 4)
    axes.push_back(static_cast<int32_t>((axesCode & 15) - 1));
  spmdc::rt::MemRefView in = viewOf(call, inRank, inDesc, elementBytes);
  spmdc::rt::MemRefView out = viewOf(call, outRank, outDesc, elementBytes);
  auto numAxes = static_cast<int32_t>(axes.size());
  auto rank = static_cast<int32_t>(inRank);
  // Compiled code's buffers are the transport's (device memory) when one
  // is installed.
  const spmd_rt_transport *transport = state().transport;
  switch (kind) {
  case SPMD_COLLECTIVE_ALL_REDUCE: {
    int64_t count = 1;
    for (int64_t size : in.shape)
      count *= size;
    std::memcpy(out.data, in.data, count * elementBytes);
    allReduce(out.data, count, dtype, axes.data(), numAxes, transport);
    return;
  }
  case SPMD_COLLECTIVE_ALL_GATHER:
    allGather(in.data, out.data, rank, in.shape.data(),
              static_cast<int32_t>(dim), dtype, axes.data(), numAxes,
              transport);
    return;
  case SPMD_COLLECTIVE_REDUCE_SCATTER:
    reduceScatter(in.data, out.data, rank, in.shape.data(),
                  static_cast<int32_t>(dim), dtype, axes.data(), numAxes,
                  transport);
    return;
  case SPMD_COLLECTIVE_ALL_TO_ALL:
    allToAll(in.data, out.data, rank, in.shape.data(),
             static_cast<int32_t>(dim), static_cast<int32_t>(dim2), dtype,
             axes.data(), numAxes, transport);
    return;
  case SPMD_COLLECTIVE_LOCAL_SLICE:
    spmd_local_slice(in.data, out.data, rank, in.shape.data(),
                     static_cast<int32_t>(dim), dtype, axes.data(), numAxes);
    return;
  default:
    fail(call, "unknown collective kind %d", kind);
  }
}

} // namespace

extern "C" {

#define SPMD_COLLECTIVE(suffix, dtype, type)                                   \
  void spmd_collective_##suffix(int32_t kind, int64_t dim, int64_t dim2,       \
                                int64_t axes, int64_t in_rank, void *in_desc,  \
                                int64_t out_rank, void *out_desc) {            \
    collective(dtype, sizeof(type), kind, dim, dim2, axes, in_rank, in_desc,   \
               out_rank, out_desc);                                            \
  }
SPMD_COLLECTIVE(f32, SPMD_DTYPE_F32, float)
SPMD_COLLECTIVE(f64, SPMD_DTYPE_F64, double)
SPMD_COLLECTIVE(i64, SPMD_DTYPE_I64, int64_t)
SPMD_COLLECTIVE(i32, SPMD_DTYPE_I32, int32_t)
#undef SPMD_COLLECTIVE

} // extern "C"
