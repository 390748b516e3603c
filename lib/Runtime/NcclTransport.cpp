//===- NcclTransport.cpp - NCCL as the collectives' transport -------------===//
//
// The CUDA target's collectives: Collectives.cpp keeps the layout work
// (group order, packing chunks along a dim) and hands the contiguous
// transfers to this transport, which runs them with NCCL on one
// communicator per group of mesh axes. Collectives.cpp bootstraps each
// communicator: the group's first member makes the NCCL unique id, MPI
// broadcasts it, every member joins.
//
// Streams: every NCCL call goes to one communication stream, after an
// event of the compute stream (so it sees what the kernels wrote). A
// blocking collective then waits for that stream; a started one
// (spmd_collective_start_<dtype>, spmdc --overlap) records a done event
// and returns, so the kernels that follow on the compute stream run while
// NCCL moves the bytes, and the wait polls the event. One stream keeps
// this rank's NCCL calls in the order every rank issues them, which NCCL
// needs across communicators.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "spmdc/Runtime/Collectives.h"
#include "spmdc/Runtime/Cuda.h"

#include <nccl.h>

#include <map>
#include <string>
#include <vector>

using namespace spmdc::cuda;

namespace {

std::map<uint32_t, ncclComm_t> &communicators() {
  static auto *comms = new std::map<uint32_t, ncclComm_t>;
  return *comms;
}

/// The message of a failed NCCL call, or null.
const char *ncclError(ncclResult_t result, const char *call) {
  if (result == ncclSuccess)
    return nullptr;
  static thread_local std::string message;
  message = std::string(call) + " failed: " + ncclGetErrorString(result);
  return message.c_str();
}

ncclDataType_t ncclType(int32_t dtype) {
  switch (dtype) {
  case SPMD_DTYPE_F64:
    return ncclFloat64;
  case SPMD_DTYPE_I64:
    return ncclInt64;
  case SPMD_DTYPE_I32:
    return ncclInt32;
  default:
    return ncclFloat32;
  }
}

size_t typeBytes(int32_t dtype) {
  return dtype == SPMD_DTYPE_F64 || dtype == SPMD_DTYPE_I64 ? 8 : 4;
}

ncclComm_t communicator(uint32_t mask) { return communicators().at(mask); }

/// The communication stream, made on first use, once per process, and
/// the events that order it after the compute stream and mark started
/// collectives done (reused: a step starts the same collectives each time).
struct CommStream {
  CUstream stream = nullptr;
  CUevent computeDone = nullptr;
  std::vector<CUevent> spareEvents;
};

CommStream &commStream() {
  static auto *comm = new CommStream;
  return *comm;
}

/// The communication stream, made to wait for the work the compute stream
/// has so far.
CUstream commStreamAfterCompute(const char *call) {
  CommStream &c = commStream();
  if (!c.stream) {
    check(cuStreamCreate(&c.stream, CU_STREAM_NON_BLOCKING), call,
          "cuStreamCreate");
    check(cuEventCreate(&c.computeDone, CU_EVENT_DISABLE_TIMING), call,
          "cuEventCreate");
  }
  check(cuEventRecord(c.computeDone, stream()), call, "cuEventRecord");
  check(cuStreamWaitEvent(c.stream, c.computeDone, 0), call,
        "cuStreamWaitEvent");
  return c.stream;
}

/// Issues `issue(commStream)` after the compute stream's work and waits
/// for it, so the host may read the result.
template <typename Issue> const char *run(const char *call, Issue issue) {
  CUstream comm = commStreamAfterCompute(call);
  if (const char *error = ncclError(issue(comm), call))
    return error;
  check(cuStreamSynchronize(comm), call, "cuStreamSynchronize");
  return nullptr;
}

const char *makeId(void *id) {
  return ncclError(ncclGetUniqueId(static_cast<ncclUniqueId *>(id)),
                   "ncclGetUniqueId");
}

const char *initGroup(uint32_t mask, int size, int rank, const void *id) {
  ncclComm_t comm = nullptr;
  if (const char *error = ncclError(
          ncclCommInitRank(&comm, size, *static_cast<const ncclUniqueId *>(id),
                           rank),
          "ncclCommInitRank"))
    return error;
  communicators()[mask] = comm;
  return nullptr;
}

void *alloc(size_t bytes) { return _mlir_memref_to_llvm_alloc(bytes); }
void release(void *buffer) { _mlir_memref_to_llvm_free(buffer); }

/// The NCCL calls of each collective on `comm`; `in` and `out` may be the
/// same for an all-reduce.
ncclResult_t issueAllReduce(const void *in, void *out, int64_t count,
                            int32_t dtype, uint32_t mask, int32_t max,
                            CUstream comm) {
  return ncclAllReduce(in, out, count, ncclType(dtype), max ? ncclMax : ncclSum,
                       communicator(mask), comm);
}

ncclResult_t issueAllGather(const void *in, void *out, int64_t count,
                            int32_t dtype, uint32_t mask, CUstream comm) {
  return ncclAllGather(in, out, count, ncclType(dtype), communicator(mask),
                       comm);
}

ncclResult_t issueReduceScatter(const void *in, void *out, int64_t count,
                                int32_t dtype, uint32_t mask, CUstream comm) {
  return ncclReduceScatter(in, out, count, ncclType(dtype), ncclSum,
                           communicator(mask), comm);
}

/// NCCL's all-to-all is grouped point-to-point sends and receives.
ncclResult_t issueAllToAll(const void *in, void *out, int64_t count,
                           int32_t dtype, uint32_t mask, CUstream on) {
  ncclComm_t comm = communicator(mask);
  int size = 0;
  ncclCommCount(comm, &size);
  size_t block = count * typeBytes(dtype);
  ncclResult_t result = ncclGroupStart();
  for (int peer = 0; peer < size && result == ncclSuccess; ++peer) {
    result = ncclSend(static_cast<const char *>(in) + peer * block, count,
                      ncclType(dtype), peer, comm, on);
    if (result == ncclSuccess)
      result = ncclRecv(static_cast<char *>(out) + peer * block, count,
                        ncclType(dtype), peer, comm, on);
  }
  ncclResult_t ended = ncclGroupEnd();
  return result == ncclSuccess ? ended : result;
}

const char *allReduce(void *inout, int64_t count, int32_t dtype,
                      uint32_t mask, int32_t max) {
  return run("ncclAllReduce", [&](CUstream comm) {
    return issueAllReduce(inout, inout, count, dtype, mask, max, comm);
  });
}

const char *allGather(const void *in, void *out, int64_t count, int32_t dtype,
                      uint32_t mask) {
  return run("ncclAllGather", [&](CUstream comm) {
    return issueAllGather(in, out, count, dtype, mask, comm);
  });
}

const char *reduceScatter(const void *in, void *out, int64_t count,
                          int32_t dtype, uint32_t mask) {
  return run("ncclReduceScatter", [&](CUstream comm) {
    return issueReduceScatter(in, out, count, dtype, mask, comm);
  });
}

const char *allToAll(const void *in, void *out, int64_t count, int32_t dtype,
                     uint32_t mask) {
  return run("ncclSend/ncclRecv", [&](CUstream comm) {
    return issueAllToAll(in, out, count, dtype, mask, comm);
  });
}

/// A started collective: the event recorded after its NCCL calls, and its
/// communicator, whose asynchronous errors the poll reports.
struct Started {
  CUevent done = nullptr;
  ncclComm_t comm = nullptr;
};

const char *start(int32_t kind, const void *in, void *out, int64_t count,
                  int32_t dtype, uint32_t mask, void **token) {
  const char *call = "spmd_collective_start";
  CUstream comm = commStreamAfterCompute(call);
  ncclResult_t result = ncclInvalidArgument;
  const char *ncclCall = "NCCL";
  switch (kind) {
  case SPMD_COLLECTIVE_ALL_REDUCE:
  case SPMD_COLLECTIVE_ALL_REDUCE_MAX:
    ncclCall = "ncclAllReduce";
    result = issueAllReduce(in, out, count, dtype, mask,
                            kind == SPMD_COLLECTIVE_ALL_REDUCE_MAX, comm);
    break;
  case SPMD_COLLECTIVE_ALL_GATHER:
    ncclCall = "ncclAllGather";
    result = issueAllGather(in, out, count, dtype, mask, comm);
    break;
  case SPMD_COLLECTIVE_REDUCE_SCATTER:
    ncclCall = "ncclReduceScatter";
    result = issueReduceScatter(in, out, count, dtype, mask, comm);
    break;
  case SPMD_COLLECTIVE_ALL_TO_ALL:
    ncclCall = "ncclSend/ncclRecv";
    result = issueAllToAll(in, out, count, dtype, mask, comm);
    break;
  }
  if (const char *error = ncclError(result, ncclCall))
    return error;
  CommStream &c = commStream();
  auto *started = new Started{nullptr, communicator(mask)};
  if (c.spareEvents.empty()) {
    check(cuEventCreate(&started->done, CU_EVENT_DISABLE_TIMING), call,
          "cuEventCreate");
  } else {
    started->done = c.spareEvents.back();
    c.spareEvents.pop_back();
  }
  check(cuEventRecord(started->done, comm), call, "cuEventRecord");
  *token = started;
  return nullptr;
}

const char *test(void *token, int32_t *done) {
  const char *call = "spmd_collective_wait";
  auto *started = static_cast<Started *>(token);
  CUresult state = cuEventQuery(started->done);
  if (state == CUDA_ERROR_NOT_READY) {
    // A peer that failed shows here, not as an event that never fires.
    ncclResult_t async = ncclSuccess;
    if (const char *error =
            ncclError(ncclCommGetAsyncError(started->comm, &async),
                      "ncclCommGetAsyncError"))
      return error;
    if (async != ncclSuccess && async != ncclInProgress)
      return ncclError(async, "NCCL (asynchronous error)");
    *done = 0;
    return nullptr;
  }
  check(state, call, "cuEventQuery");
  commStream().spareEvents.push_back(started->done);
  delete started;
  *done = 1;
  return nullptr;
}

void finalize() {
  CommStream &c = commStream();
  if (c.stream) {
    // Teardown: errors here have nothing left to stop.
    cuStreamSynchronize(c.stream);
    for (CUevent event : c.spareEvents)
      cuEventDestroy(event);
    cuEventDestroy(c.computeDone);
    cuStreamDestroy(c.stream);
    c = CommStream();
  }
  for (auto &[mask, comm] : communicators())
    ncclCommDestroy(comm);
  communicators().clear();
}

const spmd_rt_transport nccl = {
    "NCCL",        sizeof(ncclUniqueId),
    makeId,        initGroup,
    alloc,         release,
    allReduce,     allGather,
    reduceScatter, allToAll,
    finalize,      start,
    test,
};

/// Without start and test: started collectives run blocking.
const spmd_rt_transport ncclBlocking = {
    "NCCL",        sizeof(ncclUniqueId),
    makeId,        initGroup,
    alloc,         release,
    allReduce,     allGather,
    reduceScatter, allToAll,
    finalize,      nullptr,
    nullptr,
};

} // namespace

/// Started collectives need a device on which the host may touch managed
/// memory while the device runs (Linux on Pascal and later): between the
/// start and the wait, host code of the step runs while NCCL does.
extern "C" const void *spmd_cuda_transport(void) {
  int concurrent = 0;
  check(cuDeviceGetAttribute(&concurrent,
                             CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
                             device()),
        "spmd_cuda_transport", "cuDeviceGetAttribute");
  return concurrent ? &nccl : &ncclBlocking;
}
