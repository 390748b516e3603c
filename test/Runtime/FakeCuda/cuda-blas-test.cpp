//===- cuda-blas-test.cpp - the CUDA runtime's GEMMs against OpenBLAS -----===//
//
// Loads libspmdc_runtime_cuda.so (argv[1]) on the fake CUDA stack and runs
// its spmd_matmul_<dtype> (CudaBlas.cpp: row-major matmuls as column-major
// cuBLAS calls, one GEMM for a shared weight, strided batches, broadcasting
// matrix by matrix) on every batching case the runtime distinguishes, with
// and without transposed operands, comparing each result with the CPU
// runtime's OpenBLAS spmd_matmul_<dtype> (Blas.cpp) on the same inputs.
// Prints one line per case; exits 1 on the first mismatch.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/Blas.h"
#include "spmdc/Runtime/Cuda.h"
#include "spmdc/Runtime/FloatFormats.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using MatmulFn = void (*)(int32_t, int32_t, int64_t, void *, int64_t, void *,
                          int64_t, void *);
using AllocFn = void *(*)(uint64_t);

AllocFn deviceAlloc;

/// A row-major buffer and its ranked descriptor; `device` places it in the
/// CUDA runtime's (managed) memory.
struct Buffer {
  std::vector<int64_t> shape;
  char *data;
  std::vector<int64_t> descriptor;

  bool onDevice;

  Buffer(std::vector<int64_t> shape, size_t elementBytes, bool device)
      : shape(shape), onDevice(device) {
    size_t count = 1;
    for (int64_t size : shape)
      count *= size;
    data = static_cast<char *>(device ? deviceAlloc(count * elementBytes)
                                      : std::calloc(count, elementBytes));
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * shape[d + 1];
    descriptor = {reinterpret_cast<int64_t>(data),
                  reinterpret_cast<int64_t>(data), 0};
    descriptor.insert(descriptor.end(), shape.begin(), shape.end());
    descriptor.insert(descriptor.end(), strides.begin(), strides.end());
  }
  // Host buffers are freed (LeakSanitizer checks this program).
  ~Buffer() {
    if (!onDevice)
      std::free(data);
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  size_t count() const {
    size_t n = 1;
    for (int64_t size : shape)
      n *= size;
    return n;
  }
};

struct Case {
  const char *name;
  std::vector<int64_t> a, b, c;
  bool transA, transB;
};

double valueAt(size_t i, int salt) {
  return std::sin(0.37 * double(i) + salt) * 2.0;
}

template <typename T> void fill(Buffer &buffer, int salt) {
  auto *out = reinterpret_cast<T *>(buffer.data);
  for (size_t i = 0; i < buffer.count(); ++i) {
    if constexpr (std::is_same_v<T, uint16_t>)
      out[i] = spmdc::rt::toBF16(static_cast<float>(valueAt(i, salt)));
    else
      out[i] = static_cast<T>(valueAt(i, salt));
  }
}

template <typename T> double get(const Buffer &buffer, size_t i) {
  auto *in = reinterpret_cast<const T *>(buffer.data);
  if constexpr (std::is_same_v<T, uint16_t>)
    return spmdc::rt::fromBF16(in[i]);
  else
    return in[i];
}

/// Runs `test` (the CUDA runtime's) and `reference` (OpenBLAS) on the same
/// inputs; true if every element agrees within `tolerance` relative to the
/// largest magnitude.
template <typename T>
bool agree(const Case &c, MatmulFn test, MatmulFn reference, double tolerance) {
  Buffer a(c.a, sizeof(T), true), b(c.b, sizeof(T), true),
      out(c.c, sizeof(T), true);
  Buffer ha(c.a, sizeof(T), false), hb(c.b, sizeof(T), false),
      expected(c.c, sizeof(T), false);
  fill<T>(a, 1);
  fill<T>(b, 2);
  fill<T>(ha, 1);
  fill<T>(hb, 2);
  test(c.transA, c.transB, a.rank(), a.descriptor.data(), b.rank(),
       b.descriptor.data(), out.rank(), out.descriptor.data());
  reference(c.transA, c.transB, ha.rank(), ha.descriptor.data(), hb.rank(),
            hb.descriptor.data(), expected.rank(), expected.descriptor.data());
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < expected.count(); ++i) {
    worst = std::max(worst, std::fabs(get<T>(out, i) - get<T>(expected, i)));
    scale = std::max(scale, std::fabs(get<T>(expected, i)));
  }
  return worst <= tolerance * scale;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: spmdc-cuda-blas-test libspmdc_runtime_cuda.so\n");
    return 2;
  }
  void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    std::fprintf(stderr, "cuda-blas-test: %s\n", dlerror());
    return 1;
  }
  auto init = reinterpret_cast<decltype(&spmd_cuda_init)>(
      dlsym(library, "spmd_cuda_init"));
  deviceAlloc =
      reinterpret_cast<AllocFn>(dlsym(library, "_mlir_memref_to_llvm_alloc"));
  auto f32 = reinterpret_cast<MatmulFn>(dlsym(library, "spmd_matmul_f32"));
  auto f64 = reinterpret_cast<MatmulFn>(dlsym(library, "spmd_matmul_f64"));
  auto bf16 = reinterpret_cast<MatmulFn>(dlsym(library, "spmd_matmul_bf16"));
  char error[256] = "";
  if (!init || !deviceAlloc || !f32 || !f64 || !bf16 ||
      init(0, nullptr, error, sizeof error) != 0) {
    std::fprintf(stderr, "cuda-blas-test: cannot start the runtime: %s\n",
                 error);
    return 1;
  }

  // Every path of CudaBlas.cpp: one GEMM (plain, transposed operands, a
  // batch against a shared weight as one GEMM of batch * m rows), a
  // strided batch, and broadcasting matrix by matrix.
  const std::vector<Case> cases = {
      {"plain", {5, 7}, {7, 3}, {5, 3}, false, false},
      {"transposed A", {7, 5}, {7, 3}, {5, 3}, true, false},
      {"transposed B", {5, 7}, {3, 7}, {5, 3}, false, true},
      {"both transposed", {7, 5}, {3, 7}, {5, 3}, true, true},
      {"shared weight", {2, 4, 5, 7}, {7, 3}, {2, 4, 5, 3}, false, false},
      {"shared weight, B transposed",
       {4, 5, 7},
       {3, 7},
       {4, 5, 3},
       false,
       true},
      {"shared weight, A transposed",
       {4, 7, 5},
       {7, 3},
       {4, 5, 3},
       true,
       false},
      {"strided batch", {3, 5, 7}, {3, 7, 4}, {3, 5, 4}, false, false},
      {"strided batch, both transposed",
       {2, 3, 7, 5},
       {2, 3, 4, 7},
       {2, 3, 5, 4},
       true,
       true},
      {"broadcast", {2, 1, 5, 7}, {1, 3, 7, 4}, {2, 3, 5, 4}, false, false},
      {"shared A", {5, 7}, {3, 7, 4}, {3, 5, 4}, false, false},
  };
  int failures = 0;
  for (const Case &c : cases) {
    bool okF32 = agree<float>(c, f32, spmd_matmul_f32, 1e-5);
    bool okF64 = agree<double>(c, f64, spmd_matmul_f64, 1e-12);
    // bf16: both accumulate in f32 and round once; allow one bf16 ulp.
    bool okBF16 = agree<uint16_t>(c, bf16, spmd_matmul_bf16, 1e-2);
    std::printf("%-32s f32 %s  f64 %s  bf16 %s\n", c.name,
                okF32 ? "ok" : "MISMATCH", okF64 ? "ok" : "MISMATCH",
                okBF16 ? "ok" : "MISMATCH");
    failures += !okF32 + !okF64 + !okBF16;
  }
  std::printf("cuda-blas-test: %zu cases, %d mismatches\n", cases.size(),
              failures);
  return failures ? 1 : 0;
}
