// ceilings.cu: what this GPU can do at best, for test/gpu/check.sh to
// measure the CUDA target against: device memory bandwidth (a copy kernel
// streaming 1 GiB, read + write counted) and cuBLAS SGEMM throughput (f32,
// no TF32: the CUDA target's GEMMs run in full f32). Prints
//   bandwidth_GBps <x>
//   sgemm_TFLOPS <y>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e = (call);                                                    \
    if (e != cudaSuccess) {                                                    \
      std::fprintf(stderr, "ceilings: %s: %s\n", #call,                        \
                   cudaGetErrorString(e));                                     \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

__global__ void copy(const float4 *in, float4 *out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

template <typename F> float bestMs(F run, int reps) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  run(); // warm-up
  float best = 1e30f;
  for (int r = 0; r < reps; ++r) {
    CHECK(cudaEventRecord(a));
    run();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    best = std::min(best, ms);
  }
  return best;
}

int main() {
  size_t bytes = size_t(1) << 30;
  float4 *in, *out;
  CHECK(cudaMalloc(&in, bytes));
  CHECK(cudaMalloc(&out, bytes));
  CHECK(cudaMemset(in, 0, bytes));
  size_t n = bytes / sizeof(float4);
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float copyMs = bestMs([&] { copy<<<sms * 8, 512>>>(in, out, n); }, 10);
  std::printf("bandwidth_GBps %.1f\n", 2.0 * bytes / (copyMs * 1e-3) / 1e9);
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));

  int dim = 8192;
  float *a, *b, *c;
  size_t matrix = size_t(dim) * dim * sizeof(float);
  CHECK(cudaMalloc(&a, matrix));
  CHECK(cudaMalloc(&b, matrix));
  CHECK(cudaMalloc(&c, matrix));
  CHECK(cudaMemset(a, 0, matrix));
  CHECK(cudaMemset(b, 0, matrix));
  cublasHandle_t handle;
  cublasCreate(&handle);
  cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
  const float one = 1, zero = 0;
  float gemmMs = bestMs(
      [&] {
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &one, a,
                    dim, b, dim, &zero, c, dim);
      },
      5);
  std::printf("sgemm_TFLOPS %.2f\n",
              2.0 * dim * double(dim) * dim / (gemmMs * 1e-3) / 1e12);
  cublasDestroy(handle);
  return 0;
}
