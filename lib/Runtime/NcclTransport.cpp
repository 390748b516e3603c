//===- NcclTransport.cpp - NCCL as the collectives' transport -------------===//
//
// The CUDA target's collectives: Collectives.cpp keeps the layout work
// (group order, packing chunks along a dim) and hands the contiguous
// transfers to this transport, which runs them with NCCL on the runtime's
// stream, on one communicator per group of mesh axes. Collectives.cpp
// bootstraps each communicator: the group's first member makes the NCCL
// unique id, MPI broadcasts it, every member joins.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "spmdc/Runtime/Collectives.h"
#include "spmdc/Runtime/Cuda.h"

#include <nccl.h>

#include <map>
#include <string>

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

/// Runs `issue` and waits for the stream, so the host may read the result.
template <typename Issue> const char *run(const char *call, Issue issue) {
  if (const char *error = ncclError(issue(), call))
    return error;
  synchronize(call);
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

const char *allReduce(void *inout, int64_t count, int32_t dtype,
                      uint32_t mask, int32_t max) {
  return run("ncclAllReduce", [&] {
    return ncclAllReduce(inout, inout, count, ncclType(dtype),
                         max ? ncclMax : ncclSum,
                         communicator(mask), stream());
  });
}

const char *allGather(const void *in, void *out, int64_t count, int32_t dtype,
                      uint32_t mask) {
  return run("ncclAllGather", [&] {
    return ncclAllGather(in, out, count, ncclType(dtype), communicator(mask),
                         stream());
  });
}

const char *reduceScatter(const void *in, void *out, int64_t count,
                          int32_t dtype, uint32_t mask) {
  return run("ncclReduceScatter", [&] {
    return ncclReduceScatter(in, out, count, ncclType(dtype), ncclSum,
                             communicator(mask), stream());
  });
}

const char *allToAll(const void *in, void *out, int64_t count, int32_t dtype,
                     uint32_t mask) {
  // NCCL's all-to-all is grouped point-to-point sends and receives.
  return run("ncclSend/ncclRecv", [&] {
    ncclComm_t comm = communicator(mask);
    int size = 0;
    ncclCommCount(comm, &size);
    size_t block = count * typeBytes(dtype);
    ncclResult_t result = ncclGroupStart();
    for (int peer = 0; peer < size && result == ncclSuccess; ++peer) {
      result = ncclSend(static_cast<const char *>(in) + peer * block, count,
                        ncclType(dtype), peer, comm, stream());
      if (result == ncclSuccess)
        result = ncclRecv(static_cast<char *>(out) + peer * block, count,
                          ncclType(dtype), peer, comm, stream());
    }
    ncclResult_t ended = ncclGroupEnd();
    return result == ncclSuccess ? ended : result;
  });
}

void finalize() {
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
    finalize,
};

} // namespace

extern "C" const void *spmd_cuda_transport(void) { return &nccl; }
