/*===- Cuda.h - the CUDA runtime of compiled code (C ABI) ---------*- C -*-===*\
|*                                                                            *|
|* What a module of `spmdc --target=cuda` calls, and what spmd-run calls to   *|
|* set it up. Built as its own shared library (libspmdc_runtime_cuda.so)      *|
|* that spmd-run opens only for CUDA modules, so that spmd-run starts on      *|
|* machines without a CUDA driver. Implemented on the CUDA driver API,        *|
|* cuBLAS and NCCL; no MLIR.                                                  *|
|*                                                                            *|
|* Memory. Every buffer of the step is CUDA managed memory                    *|
|* (cuMemAllocManaged): kernels, cuBLAS and NCCL use it on the device, and    *|
|* the host code of the step (small scalar updates, staging of constants)     *|
|* and spmd-run (inputs, results) read and write it directly. Kernels and     *|
|* GEMMs go to one stream, and every call below returns after that stream     *|
|* is idle, so the host never touches a buffer the device is using. NCCL      *|
|* runs on a stream of its own (spmd_cuda_transport).                         *|
|*                                                                            *|
|* Failure. A failed CUDA, cuBLAS or NCCL call ends the job through the       *|
|* failure function given to spmd_cuda_init (spmd-run passes spmd_rt_fail:    *|
|* `spmd-run: rank R: step S: <call>: <error>`).                              *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef SPMDC_RUNTIME_CUDA_H
#define SPMDC_RUNTIME_CUDA_H

#include "spmdc/Runtime/Blas.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Reports a failure and does not return.
typedef void (*spmd_cuda_fail_fn)(const char *call, const char *message);

/// Checks, without starting anything, that a driver and a device are
/// there: 0, or 1 with a message in `error`. spmd-run asks before it
/// launches the ranks of a CUDA module.
int spmd_cuda_probe(char *error, size_t error_size);

/// Starts CUDA on this process: the driver, device `local_rank` modulo the
/// number of devices, its primary context, the stream, a cuBLAS handle.
/// Returns 0, or 1 with a message in `error` (no driver, no device).
int spmd_cuda_init(int32_t local_rank, spmd_cuda_fail_fn fail, char *error,
                   size_t error_size);

/// The device's name, for logs.
const char *spmd_cuda_device_name(void);

/// Frees the cuBLAS handle and the stream. Call after the last step.
void spmd_cuda_finalize(void);

/// NCCL as the transport of the collectives (Collectives.h), for
/// spmd_rt_set_transport: one communicator per group of mesh axes, its id
/// made by the group's first member and broadcast over MPI; every NCCL
/// call on a communication stream after the compute stream's work, and
/// started collectives (start/test) on devices with concurrent managed
/// access. Call after spmd_cuda_init.
const void *spmd_cuda_transport(void);

/// Managed memory for spmd-run's input buffers; the lowering's allocation
/// functions (finalize-memref-to-llvm{use-generic-functions}) are the same.
void *_mlir_memref_to_llvm_alloc(uint64_t bytes);
void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t bytes);
void _mlir_memref_to_llvm_free(void *buffer);

/// Matmuls as cuBLAS GEMMs: the spmd_matmul_<dtype> functions of Blas.h,
/// with the same arguments and meaning, on device buffers.

/// What MLIR's gpu-to-llvm lowering calls (the names of MLIR's CUDA
/// runtime wrappers): kernel modules from PTX, launches, streams.
void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleLoadJIT(void *data, int opt_level);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t grid_x, intptr_t grid_y,
                      intptr_t grid_z, intptr_t block_x, intptr_t block_y,
                      intptr_t block_z, int32_t shared_bytes, void *stream,
                      void **params, void **extra, size_t param_count);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* SPMDC_RUNTIME_CUDA_H */
