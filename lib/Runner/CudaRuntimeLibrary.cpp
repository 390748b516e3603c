//===- CudaRuntimeLibrary.cpp - the CUDA runtime, opened on demand --------===//

#include "spmdc/Runner/CudaRuntimeLibrary.h"

#ifdef SPMDC_HAVE_MPI
#include "spmdc/Runtime/Collectives.h"
#endif

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>
#include <dlfcn.h>

namespace spmdc::runner {

namespace {

/// Where the library is: $SPMD_CUDA_RUNTIME, else ../lib next to bin/.
std::string libraryPath() {
  if (const char *path = std::getenv("SPMD_CUDA_RUNTIME"))
    return path;
  static int anchor;
  std::string exe = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
  llvm::SmallString<256> path(llvm::sys::path::parent_path(
      llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(path, "lib", "libspmdc_runtime_cuda.so");
  return std::string(path);
}

void reportFailure(const char *call, const char *message) {
#ifdef SPMDC_HAVE_MPI
  spmd_rt_fail(call, message);
#else
  std::fprintf(stderr, "spmd-run: %s: %s\n", call, message);
  std::_Exit(1);
#endif
}

/// The library's handle, or null with `error` set; `path` says where.
void *openLibrary(std::string &path, std::string &error) {
  path = libraryPath();
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    error = "the module targets CUDA, but the CUDA runtime cannot be loaded "
            "(" +
            std::string(why ? why : path) +
            "); a CUDA driver (libcuda.so.1) and a GPU are needed";
  }
  return handle;
}

} // namespace

std::optional<std::string> CudaRuntimeLibrary::unavailable() {
  std::string path, error;
  void *handle = openLibrary(path, error);
  if (!handle)
    return error;
  using Probe = int (*)(char *, size_t);
  auto probe = reinterpret_cast<Probe>(dlsym(handle, "spmd_cuda_probe"));
  char message[512] = "";
  if (!probe)
    return std::string("the CUDA runtime has no spmd_cuda_probe");
  if (probe(message, sizeof message) != 0)
    return std::string("the module targets CUDA, but CUDA cannot start on "
                       "this machine: ") +
           message;
  return std::nullopt;
}

std::unique_ptr<CudaRuntimeLibrary>
CudaRuntimeLibrary::open(int localRank, bool installTransport,
                         std::string &error) {
  std::string path;
  void *handle = openLibrary(path, error);
  if (!handle)
    return nullptr;
  auto library = std::unique_ptr<CudaRuntimeLibrary>(new CudaRuntimeLibrary);
  library->handle = handle;
  auto symbol = [&](const char *name) -> void * {
    void *address = dlsym(handle, name);
    if (!address && error.empty())
      error = path + " has no symbol " + name;
    return address;
  };
  using Init = int (*)(int32_t, void (*)(const char *, const char *), char *,
                       size_t);
  auto init = reinterpret_cast<Init>(symbol("spmd_cuda_init"));
  auto deviceName =
      reinterpret_cast<const char *(*)()>(symbol("spmd_cuda_device_name"));
  library->finalize = reinterpret_cast<void (*)()>(symbol("spmd_cuda_finalize"));
  library->alloc = reinterpret_cast<void *(*)(uint64_t)>(
      symbol("_mlir_memref_to_llvm_alloc"));
  library->free =
      reinterpret_cast<void (*)(void *)>(symbol("_mlir_memref_to_llvm_free"));
  auto transport = reinterpret_cast<const void *(*)()>(
      symbol("spmd_cuda_transport"));
  for (const char *name :
       {"_mlir_memref_to_llvm_alloc", "_mlir_memref_to_llvm_aligned_alloc",
        "_mlir_memref_to_llvm_free", "spmd_matmul_f32", "spmd_matmul_f64", "spmd_matmul_bf16",
        "mgpuModuleLoad", "mgpuModuleLoadJIT", "mgpuModuleUnload",
        "mgpuModuleGetFunction", "mgpuLaunchKernel", "mgpuStreamCreate",
        "mgpuStreamDestroy", "mgpuStreamSynchronize"})
    library->resolved.emplace_back(name, symbol(name));
  if (!error.empty())
    return nullptr;

  char message[512] = "";
  if (init(localRank, reportFailure, message, sizeof message) != 0) {
    error = std::string("the module targets CUDA, but CUDA cannot start on "
                        "this machine: ") +
            message;
    library->finalize = nullptr;
    return nullptr;
  }
  library->device = deviceName();
#ifdef SPMDC_HAVE_MPI
  if (installTransport)
    spmd_rt_set_transport(
        static_cast<const spmd_rt_transport *>(transport()));
#else
  (void)transport;
  if (installTransport) {
    error = "this spmd-run was built without MPI; it runs one rank";
    return nullptr;
  }
#endif
  return library;
}

CudaRuntimeLibrary::~CudaRuntimeLibrary() {
  if (finalize)
    finalize();
  // The library stays loaded: the JIT-compiled step and the collectives'
  // transport may still point into it until the process ends.
}

} // namespace spmdc::runner
