//===- Collectives.cpp - the C ABI of the MPI collectives -----------------===//
//
// Collectives.h on MPI: set-up and teardown, the collectives over mesh axes
// (spmd_all_reduce, ...) and the entry points compiled code calls on
// buffer descriptors (spmd_collective_<dtype>). CollectiveGroups.cpp,
// CollectiveWatchdog.cpp and CollectiveAlgorithms.cpp do the work.
//
//===----------------------------------------------------------------------===//

#include "CollectiveState.h"

#include "spmdc/Runtime/MemRefView.h"
#include "spmdc/Runtime/Trace.h"

#include <cstdlib>
#include <cstring>

#include <unistd.h>

using namespace spmdc::rt::collectives;

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

  setMesh(call, mesh_rank, mesh_shape);

  readWatchdogTimeout(call);
  if (const char *wait = std::getenv("SPMD_RT_WAIT"))
    s.sleepWhenIdle = std::strcmp(wait, "sleep") == 0;
  s.initialized = true;
  startWatchdog();

  Armed armed(call, nullptr, 0);
  createCommunicators(call);
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
  stopWatchdog();
  if (const spmd_rt_transport *t = s.transport) {
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
  return localSlice(in, out, rank, in_shape, dim, dtype, axes, num_axes);
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

/// The trace's name and arguments of a collective.
const char *traceName(int32_t kind) {
  static const char *const names[] = {"all_reduce",  "all_gather",
                                      "reduce_scatter", "all_to_all",
                                      "local_slice", "all_reduce by max"};
  return kind >= 0 && kind <= SPMD_COLLECTIVE_ALL_REDUCE_MAX ? names[kind]
                                                             : "collective";
}

std::string traceArgs(const spmdc::rt::MemRefView &in, size_t elementBytes,
                      const std::vector<int32_t> &axes) {
  int64_t bytes = static_cast<int64_t>(elementBytes);
  for (int64_t size : in.shape)
    bytes *= size;
  std::string args =
      "{\"input_bytes\": " + std::to_string(bytes) + ", \"axes\": [";
  for (size_t i = 0; i < axes.size(); ++i)
    args += (i ? ", " : "") + std::to_string(axes[i]);
  return args + "]}";
}

/// A collective on the trace (spmd-run --trace): its kind, its input's
/// bytes and its mesh axes.
struct TracedCollective {
  int32_t kind;
  const spmdc::rt::MemRefView &in;
  size_t elementBytes;
  const std::vector<int32_t> &axes;
  double start = spmdc::rt::trace::enabled() ? spmdc::rt::trace::nowMicros() : 0;
  ~TracedCollective() {
    // A local slice moves nothing between ranks.
    if (!spmdc::rt::trace::enabled() || kind == SPMD_COLLECTIVE_LOCAL_SLICE)
      return;
    spmdc::rt::trace::record(traceName(kind), "collective", start,
                             traceArgs(in, elementBytes, axes));
  }
};

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
  TracedCollective traced{kind, in, elementBytes, axes};
  switch (kind) {
  case SPMD_COLLECTIVE_ALL_REDUCE:
  case SPMD_COLLECTIVE_ALL_REDUCE_MAX: {
    int64_t count = 1;
    for (int64_t size : in.shape)
      count *= size;
    // One buffer where the input dies at the call (--all-reduce-in-place).
    if (out.data != in.data)
      std::memcpy(out.data, in.data, count * elementBytes);
    allReduce(out.data, count, dtype, axes.data(), numAxes, transport,
              kind == SPMD_COLLECTIVE_ALL_REDUCE_MAX);
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
    localSlice(in.data, out.data, rank, in.shape.data(),
               static_cast<int32_t>(dim), dtype, axes.data(), numAxes);
    return;
  default:
    fail(call, "unknown collective kind %d", kind);
  }
}

/// A started collective (spmd_collective_start_<dtype>): on MPI, its
/// non-blocking form; with a transport, the transport's start (NCCL on its
/// communication stream); where nothing would be under way (a group of
/// one, a local slice) or the transport cannot start one, the blocking
/// collective now, and handle 0, whose wait does nothing.
int64_t startCollective(int32_t dtype, size_t elementBytes, int32_t kind,
                        int64_t dim, int64_t dim2, int64_t axesCode,
                        int64_t inRank, void *inDesc, int64_t outRank,
                        void *outDesc) {
  const char *call = "spmd_collective_start";
  requireInit(call);
  std::vector<int32_t> axes;
  for (int64_t code = axesCode; code; code >>= 4)
    axes.push_back(static_cast<int32_t>((code & 15) - 1));
  auto numAxes = static_cast<int32_t>(axes.size());
  const spmd_rt_transport *transport = state().transport;
  if (kind == SPMD_COLLECTIVE_LOCAL_SLICE ||
      (transport && (!transport->start || !transport->test)) ||
      resolveGroup(call, axes.data(), numAxes).size == 1) {
    collective(dtype, elementBytes, kind, dim, dim2, axesCode, inRank, inDesc,
               outRank, outDesc);
    return 0;
  }
  spmdc::rt::MemRefView in = viewOf(call, inRank, inDesc, elementBytes);
  spmdc::rt::MemRefView out = viewOf(call, outRank, outDesc, elementBytes);
  return spmdc::rt::collectives::startCollective(
      kind, in.data, out.data, static_cast<int32_t>(inRank), in.shape.data(),
      static_cast<int32_t>(dim), static_cast<int32_t>(dim2), dtype, axes.data(),
      numAxes, transport, traceName(kind),
      spmdc::rt::trace::enabled() ? traceArgs(in, elementBytes, axes)
                                  : std::string());
}

} // namespace

extern "C" {

#define SPMD_COLLECTIVE_START(suffix, dtype, type)                             \
  int64_t spmd_collective_start_##suffix(                                      \
      int32_t kind, int64_t dim, int64_t dim2, int64_t axes, int64_t in_rank,  \
      void *in_desc, int64_t out_rank, void *out_desc) {                       \
    return startCollective(dtype, sizeof(type), kind, dim, dim2, axes,         \
                           in_rank, in_desc, out_rank, out_desc);              \
  }                                                                            \
  void spmd_collective_wait_##suffix(int64_t handle, int64_t, void *, int64_t, \
                                     void *) {                                 \
    if (handle)                                                                \
      spmdc::rt::collectives::waitCollective(handle);                          \
  }
SPMD_COLLECTIVE_START(f32, SPMD_DTYPE_F32, float)
SPMD_COLLECTIVE_START(f64, SPMD_DTYPE_F64, double)
SPMD_COLLECTIVE_START(i64, SPMD_DTYPE_I64, int64_t)
SPMD_COLLECTIVE_START(i32, SPMD_DTYPE_I32, int32_t)
#undef SPMD_COLLECTIVE_START

void spmd_collective_progress(void) {
  spmdc::rt::collectives::progressCollectives();
}

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
