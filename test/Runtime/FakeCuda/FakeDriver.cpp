//===- FakeDriver.cpp - a CUDA driver without a GPU, for tests ------------===//
//
// libcuda.so.1 for machines without a GPU (CI): tests put this directory
// first on LD_LIBRARY_PATH and run the CUDA runtime and spmd-run's CUDA path
// on the host. "Device" memory is host memory; kernels are not executed.
// What a real driver would refuse is refused here too, and more is checked:
//   - a module is NUL-terminated PTX text; cuModuleGetFunction names one of
//     its .entry functions;
//   - a launch's grid and block are within the hardware's limits;
//   - every .ptr parameter of a launched kernel points into a live managed
//     allocation (MLIR's 0xdeadbeef placeholder for the allocated pointer
//     of a global's descriptor aside): a kernel given a host pointer, or a
//     freed buffer, would fault on a GPU;
//   - cuMemFree frees only live allocations;
//   - nothing runs before cuInit, and memory, modules, streams, events and
//     launches need a context made current on the calling thread.
// FAKE_CUDA_REPORT=1 prints, at exit, what the process did.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/PtxEntries.h"

#include <cuda.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Kernel {
  std::string name;
  std::vector<spmdc::rt::PtxParam> params;
};

struct Module {
  std::map<std::string, Kernel> kernels;
};

struct State {
  std::mutex mutex;
  std::map<uintptr_t, size_t> live; // start -> bytes
  size_t allocations = 0, frees = 0, launches = 0, modules = 0;
  std::map<const Kernel *, size_t> launchesOf;
  ~State() {
    const char *report = std::getenv("FAKE_CUDA_REPORT");
    if (!report || !std::strcmp(report, "0"))
      return;
    size_t liveBytes = 0;
    for (auto [start, bytes] : live)
      liveBytes += bytes;
    std::fprintf(stderr,
                 "fake-cuda: %zu modules, %zu kernels launched %zu times, "
                 "%zu allocations, %zu frees, %zu buffers (%zu bytes) live "
                 "at exit\n",
                 modules, launchesOf.size(), launches, allocations, frees,
                 live.size(), liveBytes);
  }
};

State &state() {
  static State s;
  return s;
}

[[noreturn]] void violation(const std::string &message) {
  std::fprintf(stderr, "fake-cuda: %s\n", message.c_str());
  std::_Exit(3);
}

/// The .entry functions of a PTX text and their parameters.
Module parsePtx(const char *ptx) {
  Module module;
  for (auto &[name, params] : spmdc::rt::ptxEntries(ptx))
    module.kernels[name] = Kernel{name, params};
  return module;
}

bool initialized = false;
thread_local bool contextCurrent = false;

/// What the driver answers a call that needs a current context.
CUresult contextState() {
  if (!initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  return contextCurrent ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

bool inLiveAllocation(uintptr_t p) {
  State &s = state();
  auto it = s.live.upper_bound(p);
  if (it == s.live.begin())
    return false;
  --it;
  return p <= it->first + it->second;
}

} // namespace

extern "C" {

/// For the fake cuBLAS: whether [pointer, pointer + bytes) lies in one live
/// allocation.
bool fake_cuda_is_device_memory(const void *pointer, size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto p = reinterpret_cast<uintptr_t>(pointer);
  auto it = state().live.upper_bound(p);
  if (it == state().live.begin())
    return false;
  --it;
  return p + bytes <= it->first + it->second;
}

CUresult cuInit(unsigned int) {
  initialized = true;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int *count) {
  if (!initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int length, CUdevice) {
  std::snprintf(name, length, "fake (no GPU)");
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  static int token;
  *context = reinterpret_cast<CUcontext>(&token);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext context) {
  if (!initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  contextCurrent = context != nullptr;
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  if (CUresult state = contextState(); state != CUDA_SUCCESS)
    return state;
  static int token;
  *stream = reinterpret_cast<CUstream>(&token);
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream) { return CUDA_SUCCESS; }
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned int) {
  return contextState();
}
/// FAKE_CUDA_NO_CONCURRENT_MANAGED=1: a device on which the host may not
/// touch managed memory while the device runs.
CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice) {
  if (!initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (attribute != CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)
    return CUDA_ERROR_INVALID_VALUE;
  const char *no = std::getenv("FAKE_CUDA_NO_CONCURRENT_MANAGED");
  *value = no && std::strcmp(no, "0") ? 0 : 1;
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }

CUresult cuGetErrorName(CUresult error, const char **name) {
  *name = error == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult, const char **text) {
  *text = "refused by the fake driver";
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo(size_t *free, size_t *total) {
  if (CUresult state = contextState(); state != CUDA_SUCCESS)
    return state;
  *total = size_t(80) << 30;
  *free = *total;
  return CUDA_SUCCESS;
}
CUresult cuMemAllocManaged(CUdeviceptr *pointer, size_t bytes, unsigned int) {
  if (CUresult state = contextState(); state != CUDA_SUCCESS)
    return state;
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  // Kernels do not run here: zeros, not garbage, is what the host reads;
  // FAKE_CUDA_FILL=<byte> fills with that byte instead.
  static const char *fill = std::getenv("FAKE_CUDA_FILL");
  std::memset(p, fill ? std::atoi(fill) : 0, bytes);
  std::lock_guard<std::mutex> lock(state().mutex);
  state().live[reinterpret_cast<uintptr_t>(p)] = bytes;
  ++state().allocations;
  *pointer = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr pointer) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (!state().live.erase(static_cast<uintptr_t>(pointer)))
    violation("cuMemFree of a pointer that is not a live allocation");
  ++state().frees;
  std::free(reinterpret_cast<void *>(pointer));
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  if (CUresult state = contextState(); state != CUDA_SUCCESS)
    return state;
  const char *ptx = static_cast<const char *>(image);
  if (std::strncmp(ptx, "//", 2) != 0 || !std::strstr(ptx, ".version"))
    violation("cuModuleLoadData of something that is not PTX text");
  *module = reinterpret_cast<CUmodule>(new Module(parsePtx(ptx)));
  ++state().modules;
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int,
                            CUjit_option *, void **) {
  return cuModuleLoadData(module, image);
}
CUresult cuModuleUnload(CUmodule module) {
  delete reinterpret_cast<Module *>(module);
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  auto &kernels = reinterpret_cast<Module *>(module)->kernels;
  auto it = kernels.find(name);
  if (it == kernels.end())
    return CUDA_ERROR_NOT_FOUND;
  *function = reinterpret_cast<CUfunction>(&it->second);
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction function, unsigned int gridX,
                        unsigned int gridY, unsigned int gridZ,
                        unsigned int blockX, unsigned int blockY,
                        unsigned int blockZ, unsigned int sharedBytes, CUstream,
                        void **params, void **extra) {
  if (CUresult state = contextState(); state != CUDA_SUCCESS)
    return state;
  const Kernel &kernel = *reinterpret_cast<const Kernel *>(function);
  if (blockX * blockY * blockZ > 1024 || blockZ > 64 || gridY > 65535 ||
      gridZ > 65535 || gridX == 0 || blockX == 0 || sharedBytes > 227 * 1024)
    return CUDA_ERROR_INVALID_VALUE;
  if (extra)
    violation(kernel.name + ": launched with `extra` (unsupported here)");
  std::lock_guard<std::mutex> lock(state().mutex);
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    if (!kernel.params[i].pointer)
      continue;
    uintptr_t p;
    std::memcpy(&p, params[i], sizeof p);
    if (p != 0xdeadbeef && !inLiveAllocation(p))
      violation(kernel.name + ": parameter " + std::to_string(i) +
                " is not a pointer into live device memory");
  }
  ++state().launches;
  ++state().launchesOf[&kernel];
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *event, unsigned int) {
  if (CUresult state = contextState(); state != CUDA_SUCCESS)
    return state;
  static int token;
  *event = reinterpret_cast<CUevent>(&token);
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
/// Work here is done when issued, but every other query says "not yet",
/// so that callers' polling loops run.
CUresult cuEventQuery(CUevent) {
  static std::atomic<unsigned> queries{0};
  return queries++ % 2 ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
CUresult cuEventElapsedTime(float *ms, CUevent, CUevent) {
  *ms = 0.001f;
  return CUDA_SUCCESS;
}

} // extern "C"
