//===- CudaRuntimeLibrary.h - the CUDA runtime, opened on demand -*- C++ -*-===//
//
// spmd-run opens libspmdc_runtime_cuda.so only for a module whose target is
// cuda, so that it starts, and runs cpu modules, on machines without a
// CUDA driver. This class finds the library, starts CUDA on this rank's
// device and hands out the functions compiled code calls.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNNER_CUDARUNTIMELIBRARY_H
#define SPMDC_RUNNER_CUDARUNTIMELIBRARY_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace spmdc::runner {

class CudaRuntimeLibrary {
public:
  /// Opens the library (SPMD_CUDA_RUNTIME, else lib/ next to the
  /// executable's bin/), starts CUDA on device `localRank` and, when
  /// `installTransport`, makes NCCL the collectives' transport (an MPI job
  /// of several ranks). Null with `error` set when any of it fails.
  static std::unique_ptr<CudaRuntimeLibrary>
  open(int localRank, bool installTransport, std::string &error);
  ~CudaRuntimeLibrary();

  /// Why CUDA modules cannot run here (no library, driver or device), or
  /// nothing. Starts no context: for the launcher, before the ranks start.
  static std::optional<std::string> unavailable();

  /// The functions compiled code calls, by name, to register with the JIT.
  const std::vector<std::pair<const char *, void *>> &symbols() const {
    return resolved;
  }
  /// Managed memory for the step's arguments, and its release.
  void *allocate(uint64_t bytes) const { return alloc(bytes); }
  void release(void *buffer) const { free(buffer); }
  const std::string &deviceName() const { return device; }

private:
  CudaRuntimeLibrary() = default;
  void *handle = nullptr;
  std::vector<std::pair<const char *, void *>> resolved;
  void *(*alloc)(uint64_t) = nullptr;
  void (*free)(void *) = nullptr;
  void (*finalize)() = nullptr;
  std::string device;
};

} // namespace spmdc::runner

#endif // SPMDC_RUNNER_CUDARUNTIMELIBRARY_H
