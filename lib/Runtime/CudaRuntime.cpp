//===- CudaRuntime.cpp - the driver side of compiled CUDA steps -----------===//
//
// Start-up, managed memory, kernel modules from PTX and launches, with the
// names MLIR's gpu-to-llvm lowering calls (mgpu*) and the allocation
// functions of finalize-memref-to-llvm{use-generic-functions}. Every launch
// goes to the one stream and is waited for: the host code of a step may
// read any buffer right after.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "spmdc/Runtime/Cuda.h"
#include "spmdc/Runtime/PtxEntries.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace spmdc::cuda {
namespace {

struct Context {
  bool initialized = false;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  spmd_cuda_fail_fn fail = nullptr;
  char deviceName[256] = "";
  bool profile = false;
  /// What the profile knows of each kernel: its name, and its parameters
  /// (from the module's PTX) to find the buffers a launch touches.
  struct Kernel {
    std::string name;
    std::vector<spmdc::rt::PtxParam> params;
  };
  std::map<CUmodule, std::map<std::string, std::vector<spmdc::rt::PtxParam>>>
      moduleEntries;
  std::map<CUfunction, Kernel> kernels;
  /// A step allocates and frees the same sizes every time, about a
  /// thousand buffers for gpt2-mini, and cuMemAllocManaged and cuMemFree
  /// cost tens of microseconds each: a freed buffer waits here for the
  /// next request of its size (bytes -> buffers), and goes back to the
  /// driver at spmd_cuda_finalize.
  std::unordered_map<uint64_t, std::vector<void *>> pool;
  /// Every buffer the driver gave, pooled or in use: start -> bytes. The
  /// profile finds the buffers a launch touches in it.
  std::map<uintptr_t, uint64_t> bufferBytes;
  struct Profiled {
    double ms = 0, bytes = 0;
    int64_t calls = 0;
  };
  std::map<std::string, Profiled> profiled;
  CUevent start = nullptr, stop = nullptr;
};

Context &context() {
  static Context *c = new Context;
  return *c;
}

std::string errorText(CUresult result) {
  const char *name = nullptr, *text = nullptr;
  cuGetErrorName(result, &name);
  cuGetErrorString(result, &text);
  return std::string(name ? name : "CUDA error") + ": " +
         (text ? text : "unknown");
}

void printProfile() {
  Context &c = context();
  if (c.profiled.empty())
    return;
  std::vector<std::pair<std::string, Context::Profiled>> rows(
      c.profiled.begin(), c.profiled.end());
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.second.ms > b.second.ms;
  });
  double total = 0;
  for (const auto &row : rows)
    total += row.second.ms;
  std::fprintf(stderr,
               "spmd-run: CUDA profile (device time, all steps): "
               "%.3f ms in %zu kernels and calls; MB: the buffers one call "
               "touches, GB/s: those bytes over its time\n",
               total, rows.size());
  for (size_t i = 0; i < rows.size() && i < 15; ++i) {
    const Context::Profiled &p = rows[i].second;
    std::fprintf(
        stderr, "spmd-run:   %10.3f ms %8lld x %10.3f MB %8.1f GB/s  %s\n",
        p.ms, static_cast<long long>(p.calls), p.bytes / p.calls / 1e6,
        p.ms > 0 ? p.bytes / (p.ms * 1e-3) / 1e9 : 0.0, rows[i].first.c_str());
  }
}

/// Bytes of the distinct buffers the pointer parameters of a launch point
/// into: what the kernel can touch.
double launchFootprint(const Context::Kernel &kernel, void **params) {
  Context &c = context();
  std::vector<uintptr_t> buffers;
  double bytes = 0;
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    if (!kernel.params[i].pointer)
      continue;
    uintptr_t p;
    std::memcpy(&p, params[i], sizeof p);
    auto it = c.bufferBytes.upper_bound(p);
    if (it == c.bufferBytes.begin())
      continue;
    --it;
    if (p > it->first + it->second ||
        std::find(buffers.begin(), buffers.end(), it->first) != buffers.end())
      continue;
    buffers.push_back(it->first);
    bytes += it->second;
  }
  return bytes;
}

} // namespace

CUstream stream() { return context().stream; }

CUdevice device() { return context().device; }

void fail(const char *call, const std::string &message) {
  Context &c = context();
  if (c.fail)
    c.fail(call, message.c_str());
  std::fprintf(stderr, "spmd-run: %s: %s\n", call, message.c_str());
  std::_Exit(1);
}

void check(CUresult result, const char *call, const char *driverCall) {
  if (result != CUDA_SUCCESS)
    fail(call, std::string(driverCall) + " failed: " + errorText(result));
}

void synchronize(const char *call) {
  check(cuStreamSynchronize(context().stream), call, "cuStreamSynchronize");
}

bool profiling() { return context().profile; }

void profile(const char *name, float ms, double bytes) {
  auto &entry = context().profiled[name];
  entry.ms += ms;
  entry.bytes += bytes;
  entry.calls += 1;
}

} // namespace spmdc::cuda

using namespace spmdc::cuda;

extern "C" {

int spmd_cuda_probe(char *error, size_t error_size) {
  int count = 0;
  CUresult r = cuInit(0);
  if (r == CUDA_SUCCESS)
    r = cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) {
    std::snprintf(error, error_size, "cuInit failed (%s)",
                  errorText(r).c_str());
    return 1;
  }
  if (count == 0) {
    std::snprintf(error, error_size, "no CUDA device is visible");
    return 1;
  }
  return 0;
}

int spmd_cuda_init(int32_t local_rank, spmd_cuda_fail_fn fail, char *error,
                   size_t error_size) {
  Context &c = context();
  auto refuse = [&](const std::string &message) {
    std::snprintf(error, error_size, "%s", message.c_str());
    return 1;
  };
  if (c.initialized)
    return refuse("spmd_cuda_init called twice");
  c.fail = fail;
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS)
    return refuse("cuInit failed (" + errorText(r) + ")");
  int count = 0;
  if (CUresult r = cuDeviceGetCount(&count); r != CUDA_SUCCESS)
    return refuse("cuDeviceGetCount failed (" + errorText(r) + ")");
  if (count == 0)
    return refuse("no CUDA device is visible");
  if (CUresult r = cuDeviceGet(&c.device, local_rank % count);
      r != CUDA_SUCCESS)
    return refuse("cuDeviceGet failed (" + errorText(r) + ")");
  if (CUresult r = cuDevicePrimaryCtxRetain(&c.context, c.device);
      r != CUDA_SUCCESS)
    return refuse("cuDevicePrimaryCtxRetain failed (" + errorText(r) + ")");
  check(cuCtxSetCurrent(c.context), "spmd_cuda_init", "cuCtxSetCurrent");
  check(cuStreamCreate(&c.stream, CU_STREAM_NON_BLOCKING), "spmd_cuda_init",
        "cuStreamCreate");
  cuDeviceGetName(c.deviceName, sizeof c.deviceName, c.device);
  const char *profile = std::getenv("SPMD_CUDA_PROFILE");
  c.profile = profile && std::strcmp(profile, "0") != 0;
  if (c.profile) {
    check(cuEventCreate(&c.start, CU_EVENT_DEFAULT), "spmd_cuda_init",
          "cuEventCreate");
    check(cuEventCreate(&c.stop, CU_EVENT_DEFAULT), "spmd_cuda_init",
          "cuEventCreate");
  }
  c.initialized = true;
  return 0;
}

const char *spmd_cuda_device_name(void) { return context().deviceName; }

void spmd_cuda_finalize(void) {
  Context &c = context();
  if (!c.initialized)
    return;
  synchronize("spmd_cuda_finalize");
  if (c.profile)
    printProfile();
  for (auto &[bytes, buffers] : c.pool)
    for (void *buffer : buffers)
      cuMemFree(reinterpret_cast<CUdeviceptr>(buffer));
  c.pool.clear();
  c.bufferBytes.clear();
  cuStreamDestroy(c.stream);
  cuDevicePrimaryCtxRelease(c.device);
  c.initialized = false;
}

void *_mlir_memref_to_llvm_alloc(uint64_t bytes) {
  Context &c = context();
  bytes = std::max<uint64_t>(bytes, 1);
  if (auto pooled = c.pool.find(bytes);
      pooled != c.pool.end() && !pooled->second.empty()) {
    void *buffer = pooled->second.back();
    pooled->second.pop_back();
    return buffer;
  }
  // Managed memory beyond what the device has free can hang the GPU, not
  // only this process: refuse instead. Small buffers skip the query.
  if (bytes >= (uint64_t(1) << 20)) {
    size_t freeBytes = 0, totalBytes = 0;
    check(cuMemGetInfo(&freeBytes, &totalBytes), "alloc", "cuMemGetInfo");
    if (bytes > freeBytes)
      fail("alloc", "a buffer of " + std::to_string(bytes) +
                        " bytes exceeds the device's free memory (" +
                        std::to_string(freeBytes) + " of " +
                        std::to_string(totalBytes) + " bytes)");
  }
  CUdeviceptr p = 0;
  check(cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL), "alloc",
        "cuMemAllocManaged");
  auto *buffer = reinterpret_cast<void *>(p);
  c.bufferBytes[static_cast<uintptr_t>(p)] = bytes;
  return buffer;
}

void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t bytes) {
  // Managed allocations are aligned to at least 256 bytes.
  if (alignment > 256)
    fail("aligned_alloc", "alignment " + std::to_string(alignment) +
                              " exceeds the 256 bytes CUDA guarantees");
  return _mlir_memref_to_llvm_alloc(bytes);
}

void _mlir_memref_to_llvm_free(void *buffer) {
  if (!buffer)
    return;
  // The device may still read the buffer: reuse it once the stream is idle.
  synchronize("free");
  Context &c = context();
  auto known = c.bufferBytes.find(reinterpret_cast<uintptr_t>(buffer));
  if (known == c.bufferBytes.end())
    fail("free", "a buffer this runtime did not allocate");
  c.pool[known->second].push_back(buffer);
}

void *mgpuModuleLoad(void *data, size_t) {
  CUmodule module = nullptr;
  check(cuModuleLoadData(&module, data), "module load", "cuModuleLoadData");
  return module;
}

void *mgpuModuleLoadJIT(void *data, int opt_level) {
  // PTX text: the driver compiles it for the device at hand.
  char log[8192] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {log, reinterpret_cast<void *>(sizeof log),
                    reinterpret_cast<void *>(
                        static_cast<intptr_t>(std::clamp(opt_level, 0, 4)))};
  CUmodule module = nullptr;
  CUresult result = cuModuleLoadDataEx(&module, data, 3, options, values);
  if (result != CUDA_SUCCESS)
    fail("module load", "cuModuleLoadDataEx failed: " + errorText(result) +
                            (log[0] ? std::string("\n") + log : ""));
  if (profiling())
    context().moduleEntries[module] =
        spmdc::rt::ptxEntries(static_cast<const char *>(data));
  return module;
}

void mgpuModuleUnload(void *module) {
  cuModuleUnload(static_cast<CUmodule>(module));
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  CUfunction function = nullptr;
  check(cuModuleGetFunction(&function, static_cast<CUmodule>(module), name),
        name, "cuModuleGetFunction");
  Context &c = context();
  if (c.profile) {
    auto &entries = c.moduleEntries[static_cast<CUmodule>(module)];
    auto params = entries.find(name);
    c.kernels[function] = {name, params == entries.end()
                                     ? std::vector<spmdc::rt::PtxParam>()
                                     : params->second};
  }
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t grid_x, intptr_t grid_y,
                      intptr_t grid_z, intptr_t block_x, intptr_t block_y,
                      intptr_t block_z, int32_t shared_bytes, void *,
                      void **params, void **extra, size_t) {
  Context &c = context();
  auto f = static_cast<CUfunction>(function);
  if (c.profile)
    check(cuEventRecord(c.start, c.stream), "launch", "cuEventRecord");
  check(cuLaunchKernel(f, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                       shared_bytes, c.stream, params, extra),
        "launch", "cuLaunchKernel");
  if (c.profile) {
    check(cuEventRecord(c.stop, c.stream), "launch", "cuEventRecord");
    check(cuEventSynchronize(c.stop), "launch", "cuEventSynchronize");
    float ms = 0;
    cuEventElapsedTime(&ms, c.start, c.stop);
    const Context::Kernel &kernel = c.kernels[f];
    profile(kernel.name.empty() ? "kernel" : kernel.name.c_str(), ms,
            launchFootprint(kernel, params));
  }
  synchronize("launch");
}

// The lowering creates, syncs and destroys a stream around each launch;
// all work goes to the runtime's one stream instead.
void *mgpuStreamCreate(void) { return context().stream; }
void mgpuStreamDestroy(void *) {}
void mgpuStreamSynchronize(void *) { synchronize("stream synchronize"); }

} // extern "C"
