/*===- Collectives.h - MPI collectives over mesh axes (C ABI) -----*- C -*-===*\
|*                                                                            *|
|* What a compiled per-rank program calls to talk to the other ranks of its   *|
|* mesh on the CPU backend: start-up, the step counter that error messages    *|
|* name, and the collectives of the dist dialect over groups of mesh axes,    *|
|* on contiguous row-major buffers. Implemented on MPI (OpenMPI); no MLIR.    *|
|*                                                                            *|
|* Groups. The mesh has `mesh_rank` axes of sizes mesh_shape[0..mesh_rank);   *|
|* MPI rank r sits at the row-major multi-index of the mesh (last axis        *|
|* fastest). A collective names an ordered list of distinct mesh axes A.      *|
|* The group of rank r over A is every rank that agrees with r on each axis   *|
|* not in A; a member's index in the group is its multi-index over A,         *|
|* row-major in the order A lists the axes (first listed axis most            *|
|* significant). This is exactly the interpreter's Mesh::groupMembers and     *|
|* Mesh::groupIndex, so {1, 0} and {0, 1} name the same ranks in different    *|
|* orders. An empty list is the group of r alone.                             *|
|*                                                                            *|
|* Failure. No function returns an error: on bad arguments, a failed MPI      *|
|* call, or a collective that has not completed within the watchdog's         *|
|* timeout, the calling rank prints one line to stderr,                       *|
|*   spmd-run: rank R: step S: <call>: <what went wrong>                      *|
|* and calls MPI_Abort(MPI_COMM_WORLD, 1), which ends every rank of the job.  *|
|* The functions return 0 so that callers may still check.                    *|
|*                                                                            *|
|* docs/runtime.md describes all of this at more length.                      *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef SPMDC_RUNTIME_COLLECTIVES_H
#define SPMDC_RUNTIME_COLLECTIVES_H

#include "spmdc/Runtime/CollectiveKind.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Element types of collective buffers. Reductions sum (integers wrap as
/// MPI's MPI_SUM does for them).
enum spmd_dtype {
  SPMD_DTYPE_F32 = 0,
  SPMD_DTYPE_F64 = 1,
  SPMD_DTYPE_I64 = 2,
  SPMD_DTYPE_I32 = 3
};

/// The most mesh axes spmd_rt_init accepts.
#define SPMD_RT_MAX_MESH_AXES 8

/// Starts the runtime on this rank: MPI_Init_thread (asking for
/// MPI_THREAD_MULTIPLE) unless MPI is already initialised, a check that the
/// world size equals the product of `mesh_shape` (rank 0 prints the
/// mismatch and the job aborts otherwise), MPI_ERRORS_RETURN on
/// MPI_COMM_WORLD, one sub-communicator per non-empty set of mesh axes
/// (created up front, so every rank creates them in the same order), and the
/// watchdog thread. The watchdog's timeout is read from the environment
/// variable SPMD_COLLECTIVE_TIMEOUT_S (seconds, fractions allowed, default
/// 60; 0 turns the watchdog off). `argc` and `argv` go to MPI and may be
/// null. 0 < mesh_rank <= SPMD_RT_MAX_MESH_AXES, every size >= 1. Call once,
/// before any other function here.
int spmd_rt_init(int *argc, char ***argv, int32_t mesh_rank,
                 const int64_t *mesh_shape);

/// This process's rank in MPI_COMM_WORLD, which is its mesh rank.
int spmd_rt_rank(void);

/// The number of ranks (the mesh's rank count).
int spmd_rt_size(void);

/// Ends the job from this rank: prints `spmd-run: rank R: step S: <call>:
/// <message>` and aborts every rank. For the other runtime libraries (the
/// CUDA runtime reports its failures through it).
void spmd_rt_fail(const char *call, const char *message);

/// Where the bytes of a collective travel. Without one installed, MPI
/// moves them between host buffers; the CUDA runtime installs NCCL
/// (spmd_cuda_transport in Cuda.h) so that they move between device
/// buffers. The layout work (packing chunks along a dim, group order)
/// stays here either way. A group is named by its `mask` of mesh axes (bit
/// a: axis a); its members are ranked in ascending-axis group order, as in
/// the MPI sub-communicator of that set. Each function returns null on
/// success or a message. Members added later go at the end, so that a
/// transport written against fewer leaves them null.
typedef struct spmd_rt_transport {
  const char *name;
  /// Bytes of the id the first member of a group makes and MPI broadcasts
  /// to the others before init_group.
  size_t id_bytes;
  const char *(*make_id)(void *id);
  const char *(*init_group)(uint32_t mask, int size, int rank,
                            const void *id);
  /// Scratch buffers the transport can send from and receive into.
  void *(*alloc)(size_t bytes);
  void (*release)(void *buffer);
  /// Sums, or with `max` non-zero takes the elementwise max.
  const char *(*all_reduce)(void *inout, int64_t count, int32_t dtype,
                            uint32_t mask, int32_t max);
  /// `count` elements per member.
  const char *(*all_gather)(const void *in, void *out, int64_t count,
                            int32_t dtype, uint32_t mask);
  const char *(*reduce_scatter)(const void *in, void *out, int64_t count,
                                int32_t dtype, uint32_t mask);
  const char *(*all_to_all)(const void *in, void *out, int64_t count,
                            int32_t dtype, uint32_t mask);
  void (*finalize)(void);
  /// Optional; null for both: started collectives (spmd_collective_start_
  /// <dtype>) run blocking at the start. Issues the collective `kind` (an
  /// spmd_collective_kind other than a local slice) without waiting for
  /// it, on the buffers and counts the blocking functions above take, but
  /// an all-reduce reads `in` and writes `out` (which may be the same).
  /// `in` must not change and `out` goes unread until `test` says done.
  /// Stores in *token what `test` polls.
  const char *(*start)(int32_t kind, const void *in, void *out, int64_t count,
                       int32_t dtype, uint32_t mask, void **token);
  /// Sets *done to 1 when the collective `token` names is complete (the
  /// token is then spent), else to 0; never blocks.
  const char *(*test)(void *token, int32_t *done);
} spmd_rt_transport;

/// Installs `transport` for every later collective and bootstraps its
/// groups over MPI, one per set of mesh axes with more than one member.
/// Collective over all ranks; call after spmd_rt_init.
int spmd_rt_set_transport(const spmd_rt_transport *transport);

/// Records the training step under way, which every error message names.
/// It is 0 until the first call (set-up before the first step).
void spmd_rt_set_step(int64_t step);

/// The number of ranks in this rank's group over `axes` (`num_axes`
/// entries): the product of those axes' sizes.
int64_t spmd_rt_group_size(const int32_t *axes, int32_t num_axes);

/// This rank's index in its group over `axes`: its multi-index over the
/// listed axes, row-major in the listed order. With one axis, this rank's
/// coordinate on it.
int64_t spmd_rt_group_index(const int32_t *axes, int32_t num_axes);

/// Waits for every rank (under the watchdog), stops the watchdog, frees the
/// sub-communicators and calls MPI_Finalize if spmd_rt_init initialised MPI.
/// A rank whose process ends without calling this prints a line naming
/// itself and the step (OpenMPI then aborts the job).
void spmd_rt_finalize(void);

/// Sums `count` elements of `dtype` at `inout` over the group: afterwards
/// every member holds the elementwise sum of all members' buffers.
int spmd_all_reduce(void *inout, int64_t count, int32_t dtype,
                    const int32_t *axes, int32_t num_axes);

/// Concatenates the members' `in` tensors (shape `local_shape`, `rank`
/// dims, the same on every member) along `dim`, in group order, into `out`
/// (shape `local_shape` with dim `dim` multiplied by the group size).
int spmd_all_gather(const void *in, void *out, int32_t rank,
                    const int64_t *local_shape, int32_t dim, int32_t dtype,
                    const int32_t *axes, int32_t num_axes);

/// Sums the members' `in` tensors (shape `in_shape`) and leaves in `out` the
/// chunk this rank's group index selects: `in_shape[dim]` is cut into group
/// size equal chunks, and member i keeps chunk i (shape `in_shape` with dim
/// `dim` divided by the group size).
int spmd_reduce_scatter(const void *in, void *out, int32_t rank,
                        const int64_t *in_shape, int32_t dim, int32_t dtype,
                        const int32_t *axes, int32_t num_axes);

/// Every member cuts its `in` (shape `in_shape`) into group size equal
/// chunks along `split_dim` and sends chunk j to member j; member i's `out`
/// is the chunks it receives, concatenated along `concat_dim` in group order
/// of their senders. `out`'s shape is `in_shape` with `split_dim` divided by
/// the group size, then `concat_dim` multiplied by it.
int spmd_all_to_all(const void *in, void *out, int32_t rank,
                    const int64_t *in_shape, int32_t split_dim,
                    int32_t concat_dim, int32_t dtype, const int32_t *axes,
                    int32_t num_axes);

/// No communication: copies into `out` this rank's chunk of `in` (shape
/// `in_shape`) along `dim`, cut into group size equal chunks, member i
/// taking chunk i: the inverse of spmd_all_gather.
int spmd_local_slice(const void *in, void *out, int32_t rank,
                     const int64_t *in_shape, int32_t dim, int32_t dtype,
                     const int32_t *axes, int32_t num_axes);

/// What compiled code calls (--convert-dist-to-runtime): one collective on
/// buffers passed as unranked memrefs (rank, then a pointer to the
/// descriptor {allocated, aligned, offset, sizes[rank], strides[rank]}),
/// contiguous. `kind`: an spmd_collective_kind (CollectiveKind.h): 0
/// all-reduce (out = the sum of the members' in), 1 all-gather along `dim`,
/// 2 reduce-scatter along `dim`, 3 all-to-all splitting `dim` and
/// concatenating `dim2`, 4 local slice along `dim`.
/// `axes`: the mesh axes, four bits each, first listed lowest, each plus
/// one (0 ends the list). One function per element type.
void spmd_collective_f32(int32_t kind, int64_t dim, int64_t dim2, int64_t axes,
                         int64_t in_rank, void *in_desc, int64_t out_rank,
                         void *out_desc);
void spmd_collective_f64(int32_t kind, int64_t dim, int64_t dim2, int64_t axes,
                         int64_t in_rank, void *in_desc, int64_t out_rank,
                         void *out_desc);
void spmd_collective_i64(int32_t kind, int64_t dim, int64_t dim2, int64_t axes,
                         int64_t in_rank, void *in_desc, int64_t out_rank,
                         void *out_desc);
void spmd_collective_i32(int32_t kind, int64_t dim, int64_t dim2, int64_t axes,
                         int64_t in_rank, void *in_desc, int64_t out_rank,
                         void *out_desc);

/// The same collective started, not waited for (--dist-async-collectives'
/// dist.start_* ops): on MPI its non-blocking form (MPI_Iallreduce,
/// MPI_Iallgather, MPI_Ireduce_scatter_block, MPI_Ialltoall) on the same
/// buffers, with any packing done now and any unpacking at the wait. `in`
/// must not change and `out` must not be read until
/// spmd_collective_wait_<dtype> of the handle returned. With a transport
/// installed, its `start` issues the transfer (NCCL: on a communication
/// stream, NcclTransport.cpp); a transport without one, a local slice or a
/// group of one runs to completion here and returns handle 0. Every rank
/// starts its collectives in the same order, as it runs the blocking ones.
int64_t spmd_collective_start_f32(int32_t kind, int64_t dim, int64_t dim2,
                                  int64_t axes, int64_t in_rank,
                                  void *in_desc, int64_t out_rank,
                                  void *out_desc);
int64_t spmd_collective_start_f64(int32_t kind, int64_t dim, int64_t dim2,
                                  int64_t axes, int64_t in_rank,
                                  void *in_desc, int64_t out_rank,
                                  void *out_desc);
int64_t spmd_collective_start_i64(int32_t kind, int64_t dim, int64_t dim2,
                                  int64_t axes, int64_t in_rank,
                                  void *in_desc, int64_t out_rank,
                                  void *out_desc);
int64_t spmd_collective_start_i32(int32_t kind, int64_t dim, int64_t dim2,
                                  int64_t axes, int64_t in_rank,
                                  void *in_desc, int64_t out_rank,
                                  void *out_desc);

/// Blocks until the started collective `handle` is done (under the
/// watchdog, which names "the wait of spmd_all_reduce" and its group);
/// then `out` holds the result. The buffers are the start's, passed again
/// so that compiled code keeps them alive until here. Handle 0 returns at
/// once. On the trace: the span from start to wait (category
/// "collective_async") and the wait itself ("collective").
void spmd_collective_wait_f32(int64_t handle, int64_t in_rank, void *in_desc,
                              int64_t out_rank, void *out_desc);
void spmd_collective_wait_f64(int64_t handle, int64_t in_rank, void *in_desc,
                              int64_t out_rank, void *out_desc);
void spmd_collective_wait_i64(int64_t handle, int64_t in_rank, void *in_desc,
                              int64_t out_rank, void *out_desc);
void spmd_collective_wait_i32(int64_t handle, int64_t in_rank, void *in_desc,
                              int64_t out_rank, void *out_desc);

/// Lets MPI advance the started collectives: one MPI_Test of each request
/// (a load and a return when none is under way). Compiled code calls it
/// between the loop nests that run while collectives are under way. The
/// environment variable SPMD_RT_PROGRESS chooses how started collectives
/// advance: `test` (the default: these calls), `thread` (a thread tests
/// them every 50 us while any is under way; needs MPI_THREAD_MULTIPLE;
/// these calls do nothing) or `none` (only other MPI calls and the wait).
void spmd_collective_progress(void);

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* SPMDC_RUNTIME_COLLECTIVES_H */
