//===- CollectiveAlgorithms.cpp - the collectives on MPI or a transport ---===//
//
// MPI's collectives (or an installed transport's, NCCL) move contiguous
// blocks, so a collective along any dim but the outermost packs its blocks
// into a scratch buffer first or unpacks them after; a group listed in
// another order than its communicator's permutes the blocks while it does.
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

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>

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
  char *gathered = scratch(transport, 0, bytes * g.size);
  gatherInto(gathered);
  unpackChunks(static_cast<char *>(out), gathered, g, l.outer,
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
    runMpi(
        call, "MPI_Reduce_scatter_block",
        [&] {
          return MPI_Reduce_scatter_block(send, out, block, t.mpi, MPI_SUM,
                                          g.comm);
        },
        [&](MPI_Request *r) {
          return MPI_Ireduce_scatter_block(send, out, block, t.mpi, MPI_SUM,
                                           g.comm, r);
        });
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
  char *received = scratch(transport, 1, bytes);
  exchangeInto(received);
  unpackChunks(static_cast<char *>(out), received, g, concat.outer,
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

void releaseTransportScratch(const spmd_rt_transport *transport) {
  for (State::Scratch &buffer : state().transportScratch)
    if (buffer.data)
      transport->release(buffer.data);
}

} // namespace spmdc::rt::collectives
