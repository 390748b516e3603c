//===- CollectiveAlgorithms.cpp - the collectives on MPI or a transport ---===//
//
// MPI's collectives (or an installed transport's, NCCL) move contiguous
// blocks, so a collective along any dim but the outermost packs its blocks
// into a staging buffer of its own first or unpacks them after; a group
// listed in another order than its communicator's permutes the blocks while
// it does.
//
// Waiting: MPI's blocking calls spin until the other ranks arrive, which is
// fastest while each rank has a core; where ranks share cores with each
// other or with other work (SPMD_RT_WAIT=sleep, which spmd-run sets: see
// Relaunch.cpp), a spinning rank takes the core the rank it waits for
// needs, so the collectives are started non-blocking and the wait sleeps
// between polls (docs/reliability.md#ranks-that-share-cores).
//
//===----------------------------------------------------------------------===//

#include "CollectiveState.h"

#include "spmdc/Runtime/Trace.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unordered_map>
#include <vector>

namespace spmdc::rt::collectives {
namespace {

/// Waits for `request` (a non-blocking collective started in sleep mode):
/// polls for about 20 us, then sleeps between polls, 10 us at first and
/// doubling to 250 us, so that a waiting rank gives its core away.
void sleepUntilDone(MPI_Request &request, const char *call,
                    const char *mpiCall) {
  int done = 0;
  int64_t spinUntil = nowNs() + 20000, pauseNs = 10000;
  while (true) {
    checkMpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call, mpiCall);
    if (done)
      return;
    if (nowNs() < spinUntil)
      continue;
    timespec pause{0, static_cast<long>(pauseNs)};
    nanosleep(&pause, nullptr);
    pauseNs = std::min<int64_t>(pauseNs * 2, 250000);
  }
}

/// Runs one MPI collective: the blocking call, or in sleep mode its
/// non-blocking form and sleepUntilDone.
template <typename Blocking, typename NonBlocking>
void runMpi(const char *call, const char *mpiCall, Blocking blocking,
            NonBlocking nonBlocking) {
  if (!state().sleepWhenIdle) {
    checkMpi(blocking(), call, mpiCall);
    return;
  }
  MPI_Request request;
  checkMpi(nonBlocking(&request), call, mpiCall);
  sleepUntilDone(request, call, mpiCall);
}

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

/// A collective's own staging buffer for packed chunks: host memory on MPI,
/// the transport's (device memory) with one; freed with the collective (a
/// blocking one's at its return, a started one's at its wait), so its bytes
/// go back to the heap for the step's own buffers rather than being held
/// for the whole run.
class Staging {
public:
  Staging() = default;
  Staging(const spmd_rt_transport *transport, size_t bytes)
      : transport(transport) {
    bytes = std::max<size_t>(bytes, 1);
    data = static_cast<char *>(transport ? transport->alloc(bytes)
                                         : std::malloc(bytes));
    if (!data)
      fail("collective staging", "cannot allocate %zu bytes", bytes);
  }
  Staging(Staging &&other) noexcept { *this = std::move(other); }
  Staging &operator=(Staging &&other) noexcept {
    std::swap(transport, other.transport);
    std::swap(data, other.data);
    return *this;
  }
  ~Staging() {
    if (data)
      transport ? transport->release(data) : std::free(data);
  }
  char *get() const { return data; }
  explicit operator bool() const { return data; }

private:
  const spmd_rt_transport *transport = nullptr;
  char *data = nullptr;
};


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

// A reduce-scatter around a ring of the group's members (in communicator
// order), point to point: Open MPI 4.1's MPI_Reduce_scatter_block sums a
// 27 MB bucket over two ranks on one host in 8 to 15 ms, more than its
// MPI_Allreduce of the whole bucket (6 ms), while trading halves and adding
// takes 2 (docs/benchmarks.md). Each element is summed in the members'
// ring order; over two members that is one addition, whose result does not
// depend on the order, so a 2-rank sum is MPI's bit for bit.

/// Sends `count` elements at `send` to member `to` while receiving as many
/// into `recv` from member `source`; in sleep mode the wait sleeps between
/// polls.
void exchange(const char *call, const char *send, char *recv, int count,
              const DTypeInfo &t, int to, int source, MPI_Comm comm) {
  constexpr int kTag = 7321;
  MPI_Request requests[2];
  checkMpi(MPI_Irecv(recv, count, t.mpi, source, kTag, comm, &requests[0]),
           call, "MPI_Irecv");
  checkMpi(MPI_Isend(send, count, t.mpi, to, kTag, comm, &requests[1]), call,
           "MPI_Isend");
  if (!state().sleepWhenIdle) {
    checkMpi(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE), call,
             "MPI_Waitall");
    return;
  }
  sleepUntilDone(requests[0], call, "MPI_Irecv");
  sleepUntilDone(requests[1], call, "MPI_Isend");
}

template <typename T>
void add(T *out, const T *a, const T *b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
}

/// out = a + b, elementwise, in `dtype`.
void add(int32_t dtype, void *out, const void *a, const void *b, int64_t n) {
  switch (dtype) {
  case SPMD_DTYPE_F32:
    return add(static_cast<float *>(out), static_cast<const float *>(a),
               static_cast<const float *>(b), n);
  case SPMD_DTYPE_F64:
    return add(static_cast<double *>(out), static_cast<const double *>(a),
               static_cast<const double *>(b), n);
  case SPMD_DTYPE_I64:
    return add(static_cast<int64_t *>(out), static_cast<const int64_t *>(a),
               static_cast<const int64_t *>(b), n);
  default:
    return add(static_cast<int32_t *>(out), static_cast<const int32_t *>(a),
               static_cast<const int32_t *>(b), n);
  }
}

/// Ring reduce-scatter: `send` holds one block of `block` elements per
/// member in communicator order; `out` gets the sum of this member's block.
/// Step s passes on the partial sum of block (me - 1 - s) and adds this
/// member's own to the partial sum of block (me - 2 - s) it receives; the
/// last received is this member's block, summed into `out` itself.
/// `block` is within MPI's int count (blockCount).
void ringReduceScatter(const char *call, const char *send, char *out,
                       int block, int32_t dtype, const DTypeInfo &t,
                       const Group &g) {
  int me = 0, size = static_cast<int>(g.size);
  checkMpi(MPI_Comm_rank(g.comm, &me), call, "MPI_Comm_rank");
  int next = (me + 1) % size, prev = (me + size - 1) % size;
  size_t bytes = block * t.bytes;
  auto own = [&](int member) { return send + member * bytes; };
  std::vector<char> partial, received;
  if (size > 2) {
    partial.resize(bytes);
    received.resize(bytes);
  }
  const char *outgoing = own((me + size - 1) % size);
  for (int step = 0; step < size - 1; ++step) {
    int incoming = (me + 2 * size - 2 - step) % size;
    bool last = step == size - 2;
    char *into = last ? out : received.data();
    exchange(call, outgoing, into, block, t, next, prev, g.comm);
    char *sum = last ? out : partial.data();
    add(dtype, sum, into, own(incoming), block);
    outgoing = sum;
  }
}

} // namespace

int allReduce(void *inout, int64_t count, int32_t dtype, const int32_t *axes,
              int32_t num_axes, const spmd_rt_transport *transport,
              bool max) {
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
                   transport->all_reduce(inout, count, dtype, g.mask, max));
    return 0;
  }
  MPI_Op op = max ? MPI_MAX : MPI_SUM;
  // Sums are elementwise, so a buffer past MPI's int count goes in pieces.
  const int64_t piece = int64_t(1) << 30;
  for (int64_t done = 0; done < count; done += piece) {
    int n = static_cast<int>(std::min(piece, count - done));
    char *at = static_cast<char *>(inout) + done * t.bytes;
    runMpi(
        call, "MPI_Allreduce",
        [&] {
          return MPI_Allreduce(MPI_IN_PLACE, at, n, t.mpi, op, g.comm);
        },
        [&](MPI_Request *r) {
          return MPI_Iallreduce(MPI_IN_PLACE, at, n, t.mpi, op, g.comm, r);
        });
  }
  return 0;
}

int allGather(const void *in, void *out, int32_t rank,
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
      runMpi(
          call, "MPI_Allgather",
          [&] {
            return MPI_Allgather(in, block, t.mpi, to, block, t.mpi, g.comm);
          },
          [&](MPI_Request *r) {
            return MPI_Iallgather(in, block, t.mpi, to, block, t.mpi, g.comm,
                                  r);
          });
  };
  if (contiguousIdentity(g, l.outer)) {
    gatherInto(out);
    return 0;
  }
  Staging gathered(transport, bytes * g.size);
  gatherInto(gathered.get());
  unpackChunks(static_cast<char *>(out), gathered.get(), g, l.outer,
               l.dimSize * l.inner * t.bytes);
  return 0;
}

int reduceScatter(const void *in, void *out, int32_t rank,
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
  Staging packed;
  if (!contiguousIdentity(g, l.outer)) {
    packed = Staging(transport, bytes);
    packChunks(packed.get(), static_cast<const char *>(in), g, l.outer,
               chunkRows * l.inner * t.bytes);
    send = packed.get();
  }
  if (transport)
    checkTransport(call, transport,
                   transport->reduce_scatter(send, out, block, dtype, g.mask));
  else
    ringReduceScatter(call, static_cast<const char *>(send),
                      static_cast<char *>(out), block, dtype, t, g);
  return 0;
}

int allToAll(const void *in, void *out, int32_t rank, const int64_t *in_shape,
             int32_t split_dim, int32_t concat_dim, int32_t dtype,
             const int32_t *axes, int32_t num_axes,
             const spmd_rt_transport *transport) {
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
  Staging packed;
  if (!contiguousIdentity(g, split.outer)) {
    packed = Staging(transport, bytes);
    packChunks(packed.get(), static_cast<const char *>(in), g, split.outer,
               chunkShape[split_dim] * split.inner * t.bytes);
    send = packed.get();
  }
  auto exchangeInto = [&](void *to) {
    if (transport)
      checkTransport(call, transport,
                     transport->all_to_all(send, to, block, dtype, g.mask));
    else
      runMpi(
          call, "MPI_Alltoall",
          [&] {
            return MPI_Alltoall(send, block, t.mpi, to, block, t.mpi, g.comm);
          },
          [&](MPI_Request *r) {
            return MPI_Ialltoall(send, block, t.mpi, to, block, t.mpi, g.comm,
                                 r);
          });
  };
  if (contiguousIdentity(g, concat.outer)) {
    exchangeInto(out);
    return 0;
  }
  Staging received(transport, bytes);
  exchangeInto(received.get());
  unpackChunks(static_cast<char *>(out), received.get(), g, concat.outer,
               concat.dimSize * concat.inner * t.bytes);
  return 0;
}

int localSlice(const void *in, void *out, int32_t rank, const int64_t *in_shape,
               int32_t dim, int32_t dtype, const int32_t *axes,
               int32_t num_axes) {
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

} // namespace spmdc::rt::collectives

//===----------------------------------------------------------------------===//
// Started collectives: MPI's non-blocking collectives, or a transport's
// started ones (NCCL on its communication stream), kept in a table from
// spmd_collective_start_<dtype> to spmd_collective_wait.
//
// The layout work is the blocking path's, split at the transfer: chunks
// along a non-leading dim are packed on the host at the start and the
// received blocks unpacked on the host at the wait, once the transfer is
// done, so every layout can be started. On the CUDA target this is safe
// because the compute stream is idle whenever the host runs (every launch
// waits for it) and NCCL's transport starts collectives only on devices
// where the host may touch managed memory while the device runs
// (NcclTransport.cpp); the staging buffers are the collective's own, not
// a shared one, since several may be under way.
//===----------------------------------------------------------------------===//

namespace spmdc::rt::collectives {
namespace {

/// One collective under way.
struct Started {
  /// The blocking form's name, for messages ("spmd_all_reduce").
  const char *call = nullptr;
  /// What the watchdog names while the wait blocks.
  const char *waitCall = nullptr;
  std::vector<int32_t> axes;
  /// On MPI: its requests. With a transport: the transport and the token
  /// its start gave.
  std::vector<MPI_Request> requests;
  const spmd_rt_transport *transport = nullptr;
  void *token = nullptr;
  /// Packed chunks to send, and received blocks to unpack into `out` at
  /// the wait (`unpackOuter` rows of `unpackRow` bytes per member).
  Staging packed, received;
  char *out = nullptr;
  Group group;
  int64_t unpackOuter = 0;
  size_t unpackRow = 0;
  /// The trace's event: name, arguments, when the start was issued.
  std::string traceName, traceArgs;
  double startMicros = 0;
};

/// The collectives under way, by handle. The mutex guards the table and
/// every MPI_Test of its requests (the progress thread tests them too).
struct StartedTable {
  std::mutex mutex;
  std::unordered_map<int64_t, Started> live;
  int64_t next = 1;
  std::atomic<int> count{0};
  /// SPMD_RT_PROGRESS: "test" (the default: spmd_collective_progress,
  /// which compiled code calls between loop nests, tests the requests),
  /// "thread" (a thread tests them every 50 us while any is under way) or
  /// "none" (only MPI calls made anyway, and the wait, advance them).
  enum class Progress { Test, Thread, None } progress = Progress::Test;
  bool configured = false;
  std::thread thread;
  std::condition_variable wake;
};

StartedTable &startedTable() {
  static StartedTable *table = new StartedTable;
  return *table;
}

/// Tests every request of the table once; the caller holds the mutex.
void testAllLocked(StartedTable &table) {
  for (auto &[handle, started] : table.live)
    for (MPI_Request &request : started.requests) {
      if (request == MPI_REQUEST_NULL)
        continue;
      int done = 0;
      checkMpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), started.call,
               "MPI_Test");
    }
}

void progressLoop() {
  StartedTable &table = startedTable();
  std::unique_lock<std::mutex> lock(table.mutex);
  while (true) {
    table.wake.wait(lock, [&] { return !table.live.empty(); });
    testAllLocked(table);
    lock.unlock();
    timespec pause{0, 50000};
    nanosleep(&pause, nullptr);
    lock.lock();
  }
}

/// Reads SPMD_RT_PROGRESS once; a thread needs MPI_THREAD_MULTIPLE.
void configureProgress(StartedTable &table) {
  if (table.configured)
    return;
  table.configured = true;
  const char *mode = std::getenv("SPMD_RT_PROGRESS");
  if (!mode || !*mode || std::strcmp(mode, "test") == 0)
    return;
  if (std::strcmp(mode, "none") == 0) {
    table.progress = StartedTable::Progress::None;
    return;
  }
  if (std::strcmp(mode, "thread") != 0)
    fail("spmd_collective_start",
         "SPMD_RT_PROGRESS is '%s'; expected test, thread or none", mode);
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE)
    fail("spmd_collective_start",
         "SPMD_RT_PROGRESS=thread needs MPI_THREAD_MULTIPLE, which this MPI "
         "does not provide");
  table.progress = StartedTable::Progress::Thread;
  // Never joined: like the rest of the runtime's state, it lives as long
  // as the process.
  table.thread = std::thread(progressLoop);
  table.thread.detach();
}

} // namespace

int64_t startCollective(int32_t kind, const void *in, void *out, int32_t rank,
                        const int64_t *inShape, int32_t dim, int32_t dim2,
                        int32_t dtype, const int32_t *axes, int32_t numAxes,
                        const spmd_rt_transport *transport,
                        std::string traceName, std::string traceArgs) {
  static const char *const waitCalls[] = {
      "the wait of spmd_all_reduce", "the wait of spmd_all_gather",
      "the wait of spmd_reduce_scatter", "the wait of spmd_all_to_all"};
  const char *calls[] = {"spmd_all_reduce", "spmd_all_gather",
                         "spmd_reduce_scatter", "spmd_all_to_all"};
  bool max = kind == SPMD_COLLECTIVE_ALL_REDUCE_MAX;
  int which = max ? 0 : kind;
  if (which < 0 || which > 3)
    fail("spmd_collective_start", "kind %d has no started form", kind);
  const char *call = calls[which];
  requireInit(call);
  DTypeInfo t = dtypeInfo(call, dtype);
  // An all-reduce's buffer is flat (and may have no dims: a loss).
  Layout l;
  if (which == 0) {
    for (int32_t i = 0; i < rank; ++i)
      l.dimSize *= inShape[i];
  } else {
    l = layoutOf(call, rank, inShape, dim,
                 kind == SPMD_COLLECTIVE_ALL_TO_ALL ? "split_dim" : "dim");
  }
  Group g = resolveGroup(call, axes, numAxes);
  size_t bytes = l.count() * t.bytes;
  if (bytes && (!in || !out))
    fail(call, "null buffer");
  if (g.size == 1)
    fail(call, "a group of one has nothing to start");
  if (transport && (!transport->start || !transport->test))
    fail(call, "%s cannot start collectives", transport->name);
  StartedTable &table = startedTable();
  configureProgress(table);
  Started s;
  s.call = call;
  s.waitCall = waitCalls[which];
  s.axes.assign(axes, axes + numAxes);
  s.transport = transport;
  s.out = static_cast<char *>(out);
  s.group = g;
  s.traceName = std::move(traceName);
  s.traceArgs = std::move(traceArgs);
  s.startMicros = trace::enabled() ? trace::nowMicros() : 0;
  injectTestFault();

  // What the transfer sends and where it receives, packed as the blocking
  // collectives pack; `block`: elements per member (all elements for an
  // all-reduce).
  const void *send = in;
  void *to = out;
  int64_t block = l.count();
  switch (kind) {
  case SPMD_COLLECTIVE_ALL_GATHER:
    block = blockCount(call, l.count());
    if (!contiguousIdentity(g, l.outer)) {
      s.received = Staging(transport, bytes * g.size);
      to = s.received.get();
      s.unpackOuter = l.outer;
      s.unpackRow = l.dimSize * l.inner * t.bytes;
    }
    break;
  case SPMD_COLLECTIVE_REDUCE_SCATTER: {
    checkDivisible(call, l, g.size, dim, "dim");
    int64_t chunkRows = l.dimSize / g.size;
    block = blockCount(call, l.outer * chunkRows * l.inner);
    if (!contiguousIdentity(g, l.outer)) {
      s.packed = Staging(transport, bytes);
      packChunks(s.packed.get(), static_cast<const char *>(in), g, l.outer,
                 chunkRows * l.inner * t.bytes);
      send = s.packed.get();
    }
    break;
  }
  case SPMD_COLLECTIVE_ALL_TO_ALL: {
    Layout split = l;
    layoutOf(call, rank, inShape, dim2, "concat_dim");
    checkDivisible(call, split, g.size, dim, "split_dim");
    std::vector<int64_t> chunkShape(inShape, inShape + rank);
    chunkShape[dim] /= g.size;
    Layout concat = layoutOf(call, rank, chunkShape.data(), dim2, "concat_dim");
    block = blockCount(call, concat.count());
    if (!contiguousIdentity(g, split.outer)) {
      s.packed = Staging(transport, bytes);
      packChunks(s.packed.get(), static_cast<const char *>(in), g, split.outer,
                 chunkShape[dim] * split.inner * t.bytes);
      send = s.packed.get();
    }
    if (!contiguousIdentity(g, concat.outer)) {
      s.received = Staging(transport, bytes);
      to = s.received.get();
      s.unpackOuter = concat.outer;
      s.unpackRow = concat.dimSize * concat.inner * t.bytes;
    }
    break;
  }
  default:
    break;
  }

  if (transport) {
    checkTransport(
        call, transport,
        transport->start(kind, send, to, block, dtype, g.mask, &s.token));
  } else {
    auto issue = [&](int rc, const char *mpiCall) {
      checkMpi(rc, call, mpiCall);
    };
    auto request = [&]() -> MPI_Request * {
      s.requests.push_back(MPI_REQUEST_NULL);
      return &s.requests.back();
    };
    int n = static_cast<int>(block);
    switch (kind) {
    case SPMD_COLLECTIVE_ALL_REDUCE:
    case SPMD_COLLECTIVE_ALL_REDUCE_MAX: {
      // In place on `out`, in pieces within MPI's int counts.
      if (out != in)
        std::memcpy(out, in, bytes);
      const int64_t piece = int64_t(1) << 30;
      s.requests.reserve((block + piece - 1) / piece);
      for (int64_t done = 0; done < block; done += piece) {
        int count = static_cast<int>(std::min(piece, block - done));
        issue(MPI_Iallreduce(MPI_IN_PLACE, s.out + done * t.bytes, count, t.mpi,
                             max ? MPI_MAX : MPI_SUM, g.comm, request()),
              "MPI_Iallreduce");
      }
      break;
    }
    case SPMD_COLLECTIVE_ALL_GATHER:
      issue(MPI_Iallgather(send, n, t.mpi, to, n, t.mpi, g.comm, request()),
            "MPI_Iallgather");
      break;
    case SPMD_COLLECTIVE_REDUCE_SCATTER:
      issue(MPI_Ireduce_scatter_block(send, to, n, t.mpi, MPI_SUM, g.comm,
                                      request()),
            "MPI_Ireduce_scatter_block");
      break;
    case SPMD_COLLECTIVE_ALL_TO_ALL:
      issue(MPI_Ialltoall(send, n, t.mpi, to, n, t.mpi, g.comm, request()),
            "MPI_Ialltoall");
      break;
    }
  }
  std::lock_guard<std::mutex> lock(table.mutex);
  int64_t handle = table.next++;
  table.live.emplace(handle, std::move(s));
  table.count.fetch_add(1, std::memory_order_relaxed);
  if (table.progress == StartedTable::Progress::Thread)
    table.wake.notify_one();
  return handle;
}

void waitCollective(int64_t handle) {
  StartedTable &table = startedTable();
  std::unique_lock<std::mutex> lock(table.mutex);
  auto it = table.live.find(handle);
  if (it == table.live.end())
    fail("spmd_collective_wait", "no collective under way has handle %lld",
         static_cast<long long>(handle));
  Started &s = it->second;
  double waitStart = trace::enabled() ? trace::nowMicros() : 0;
  {
    Armed armed(s.waitCall, s.axes.data(),
                static_cast<int32_t>(s.axes.size()));
    // Polls with the table unlocked between tests, so the progress
    // thread is never shut out; sleeps as the blocking collectives do
    // where ranks share cores.
    int64_t spinUntil = nowNs() + 20000, pauseNs = 10000;
    // A transport's collective is polled too (NCCL: its done event), so
    // that one which never completes is the watchdog's, as on MPI.
    while (true) {
      int done = 0;
      if (s.transport) {
        int32_t complete = 0;
        checkTransport(s.call, s.transport,
                       s.transport->test(s.token, &complete));
        done = complete;
      } else {
        checkMpi(MPI_Testall(static_cast<int>(s.requests.size()),
                             s.requests.data(), &done, MPI_STATUSES_IGNORE),
                 s.call, "MPI_Testall");
      }
      if (done)
        break;
      lock.unlock();
      if (state().sleepWhenIdle && nowNs() >= spinUntil) {
        timespec pause{0, static_cast<long>(pauseNs)};
        nanosleep(&pause, nullptr);
        pauseNs = std::min<int64_t>(pauseNs * 2, 250000);
      }
      lock.lock();
    }
  }
  Started done = std::move(s);
  table.live.erase(handle);
  table.count.fetch_sub(1, std::memory_order_relaxed);
  lock.unlock();
  if (done.received)
    unpackChunks(done.out, done.received.get(), done.group, done.unpackOuter,
                 done.unpackRow);
  if (trace::enabled()) {
    // The span from start to wait on a track of its own, and the wait's
    // blocking part as a collective (exposed communication).
    trace::record(done.traceName, "collective_async", done.startMicros,
                  done.traceArgs);
    trace::record("wait " + done.traceName, "collective", waitStart,
                  done.traceArgs);
  }
}

void progressCollectives() {
  StartedTable &table = startedTable();
  if (table.count.load(std::memory_order_relaxed) == 0 ||
      table.progress != StartedTable::Progress::Test)
    return;
  std::lock_guard<std::mutex> lock(table.mutex);
  testAllLocked(table);
}

} // namespace spmdc::rt::collectives
