//===- FakeNccl.cpp - NCCL between processes of one machine, for tests ----===//
//
// libnccl.so.2 beside the fake driver: collectives between the processes
// of one machine through a POSIX shared-memory segment per communicator
// (named by the unique id, which the runtime broadcasts over MPI as it does
// a real one), so the CUDA runtime's NCCL transport (NcclTransport.cpp) runs
// under mpirun without GPUs. Each call is synchronous: a member writes its
// input into its slot of the segment, all members meet at a barrier, each
// reads what it needs, and all meet again before the slots are reused.
// Sums go in rank order, so every member gets the same bits. Slots hold
// 4 MiB a member; a larger transfer is refused.
//
//===----------------------------------------------------------------------===//

#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

namespace {

constexpr size_t kSlotBytes = size_t(4) << 20;

struct Header {
  std::atomic<int> attached;
  std::atomic<int> arrived;
  std::atomic<int> generation;
};

struct Communicator {
  Header *header = nullptr;
  char *slots = nullptr;
  size_t mappedBytes = 0;
  int ranks = 0, rank = 0;

  char *slot(int member) const { return slots + member * kSlotBytes; }

  /// A sense-reversing barrier over the members.
  void barrier() const {
    int generation = header->generation.load();
    if (header->arrived.fetch_add(1) + 1 == ranks) {
      header->arrived.store(0);
      header->generation.fetch_add(1);
      return;
    }
    while (header->generation.load() == generation)
      sched_yield();
  }
};

size_t bytesOf(ncclDataType_t type) {
  switch (type) {
  case ncclFloat64:
  case ncclInt64:
  case ncclUint64:
    return 8;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt8:
  case ncclUint8:
    return 1;
  default:
    return 4;
  }
}

template <typename T>
void combineInto(char *out, const char *in, size_t count, bool max) {
  auto *o = reinterpret_cast<T *>(out);
  auto *i = reinterpret_cast<const T *>(in);
  for (size_t e = 0; e < count; ++e)
    o[e] = max ? std::max(o[e], i[e]) : o[e] + i[e];
}

/// out = the sum (or with `max` the max) over members of `count` elements
/// at `offset` bytes into each member's slot.
ncclResult_t sumSlots(const Communicator &c, size_t offset, void *out,
                      size_t count, ncclDataType_t type, bool max = false) {
  size_t bytes = count * bytesOf(type);
  std::vector<char> sum(c.slot(0) + offset, c.slot(0) + offset + bytes);
  for (int m = 1; m < c.ranks; ++m) {
    const char *in = c.slot(m) + offset;
    switch (type) {
    case ncclFloat32:
      combineInto<float>(sum.data(), in, count, max);
      break;
    case ncclFloat64:
      combineInto<double>(sum.data(), in, count, max);
      break;
    case ncclInt64:
      combineInto<int64_t>(sum.data(), in, count, max);
      break;
    case ncclInt32:
      combineInto<int32_t>(sum.data(), in, count, max);
      break;
    default:
      return ncclInvalidArgument;
    }
  }
  std::memcpy(out, sum.data(), bytes);
  return ncclSuccess;
}

struct PendingTransfer {
  void *buffer;
  size_t bytes;
  int peer;
};
/// Sends and receives between ncclGroupStart and ncclGroupEnd.
struct Group {
  int depth = 0;
  Communicator *comm = nullptr;
  std::vector<PendingTransfer> sends, receives;
} group;

} // namespace

extern "C" {

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclInvalidArgument:
    return "invalid argument (fake NCCL: sum or max of f32/f64/i64/i32 only, "
           "at most 4 MiB a member)";
  case ncclInvalidUsage:
    return "invalid usage (fake NCCL: send and receive only in a group)";
  default:
    return "system error (fake NCCL: shared memory)";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  static int counter = 0;
  std::memset(id, 0, sizeof *id);
  std::snprintf(id->internal, sizeof id->internal, "/spmdc-fake-nccl-%d-%d",
                static_cast<int>(getpid()), counter++);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *result, int ranks, ncclUniqueId id,
                              int rank) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    return ncclInvalidArgument;
  auto *c = new Communicator;
  c->ranks = ranks;
  c->rank = rank;
  c->mappedBytes = 4096 + ranks * kSlotBytes;
  int fd = shm_open(id.internal, O_CREAT | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, c->mappedBytes) != 0)
    return ncclSystemError;
  void *base =
      mmap(nullptr, c->mappedBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED)
    return ncclSystemError;
  c->header = static_cast<Header *>(base);
  c->slots = static_cast<char *>(base) + 4096;
  // Everyone attached (the segment starts zeroed), then the name can go.
  c->header->attached.fetch_add(1);
  while (c->header->attached.load() < ranks)
    sched_yield();
  c->barrier();
  if (rank == 0)
    shm_unlink(id.internal);
  *result = reinterpret_cast<ncclComm_t>(c);
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  auto *c = reinterpret_cast<Communicator *>(comm);
  munmap(c->header, c->mappedBytes);
  delete c;
  return ncclSuccess;
}

/// Calls complete when issued: no error is ever pending.
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t *asyncError) {
  *asyncError = ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  *count = reinterpret_cast<const Communicator *>(comm)->ranks;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *in, void *out, size_t count,
                           ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t) {
  const auto &c = *reinterpret_cast<const Communicator *>(comm);
  if ((op != ncclSum && op != ncclMax) || count * bytesOf(type) > kSlotBytes)
    return ncclInvalidArgument;
  std::memcpy(c.slot(c.rank), in, count * bytesOf(type));
  c.barrier();
  ncclResult_t result = sumSlots(c, 0, out, count, type, op == ncclMax);
  c.barrier();
  return result;
}

ncclResult_t ncclAllGather(const void *in, void *out, size_t count,
                           ncclDataType_t type, ncclComm_t comm, cudaStream_t) {
  const auto &c = *reinterpret_cast<const Communicator *>(comm);
  size_t bytes = count * bytesOf(type);
  if (bytes > kSlotBytes)
    return ncclInvalidArgument;
  std::memcpy(c.slot(c.rank), in, bytes);
  c.barrier();
  for (int m = 0; m < c.ranks; ++m)
    std::memcpy(static_cast<char *>(out) + m * bytes, c.slot(m), bytes);
  c.barrier();
  return ncclSuccess;
}

ncclResult_t ncclReduceScatter(const void *in, void *out, size_t count,
                               ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t) {
  const auto &c = *reinterpret_cast<const Communicator *>(comm);
  size_t bytes = count * bytesOf(type);
  if (op != ncclSum || bytes * c.ranks > kSlotBytes)
    return ncclInvalidArgument;
  std::memcpy(c.slot(c.rank), in, bytes * c.ranks);
  c.barrier();
  ncclResult_t result = sumSlots(c, c.rank * bytes, out, count, type);
  c.barrier();
  return result;
}

ncclResult_t ncclGroupStart() {
  ++group.depth;
  return ncclSuccess;
}

ncclResult_t ncclSend(const void *in, size_t count, ncclDataType_t type,
                      int peer, ncclComm_t comm, cudaStream_t) {
  auto *c = reinterpret_cast<Communicator *>(comm);
  if (!group.depth || (group.comm && group.comm != c) || peer < 0 ||
      peer >= c->ranks)
    return ncclInvalidUsage;
  group.comm = c;
  group.sends.push_back({const_cast<void *>(in), count * bytesOf(type), peer});
  return ncclSuccess;
}

ncclResult_t ncclRecv(void *out, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t) {
  auto *c = reinterpret_cast<Communicator *>(comm);
  if (!group.depth || (group.comm && group.comm != c) || peer < 0 ||
      peer >= c->ranks)
    return ncclInvalidUsage;
  group.comm = c;
  group.receives.push_back({out, count * bytesOf(type), peer});
  return ncclSuccess;
}

/// The group's sends and receives, as one exchange: what goes to member p
/// sits in this member's slot at p's share of it.
ncclResult_t ncclGroupEnd() {
  if (--group.depth > 0 || !group.comm)
    return ncclSuccess;
  const Communicator &c = *group.comm;
  size_t share = kSlotBytes / c.ranks;
  ncclResult_t result = ncclSuccess;
  for (const PendingTransfer &send : group.sends) {
    if (send.bytes > share)
      result = ncclInvalidArgument;
    else
      std::memcpy(c.slot(c.rank) + send.peer * share, send.buffer, send.bytes);
  }
  c.barrier();
  for (const PendingTransfer &receive : group.receives)
    if (receive.bytes <= share)
      std::memcpy(receive.buffer, c.slot(receive.peer) + c.rank * share,
                  receive.bytes);
  c.barrier();
  group = Group();
  return result;
}

} // extern "C"
