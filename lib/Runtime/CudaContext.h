//===- CudaContext.h - what the CUDA runtime's files share ------*- C++ -*-===//
//
// The compute stream, the device, the cuBLAS handle, and the
// failure path, shared by CudaRuntime.cpp, CudaBlas.cpp and
// NcclTransport.cpp. Internal to libspmdc_runtime_cuda.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_LIB_RUNTIME_CUDACONTEXT_H
#define SPMDC_LIB_RUNTIME_CUDACONTEXT_H

#include <cuda.h>

#include <string>

namespace spmdc::cuda {

/// The compute stream: every kernel and GEMM. NCCL has a stream of its
/// own (NcclTransport.cpp).
CUstream stream();

/// This process's device.
CUdevice device();

/// Ends the job with `spmd-run: rank R: step S: <call>: <message>`.
[[noreturn]] void fail(const char *call, const std::string &message);

/// Fails unless `result` is CUDA_SUCCESS, naming the driver call.
void check(CUresult result, const char *call, const char *driverCall);

/// Waits until the stream is idle (the host may then touch any buffer).
void synchronize(const char *call);

/// Adds a call of `ms` touching `bytes` to the profile entry `name`
/// (SPMD_CUDA_PROFILE=1).
void profile(const char *name, float ms, double bytes);
bool profiling();

} // namespace spmdc::cuda

#endif // SPMDC_LIB_RUNTIME_CUDACONTEXT_H
