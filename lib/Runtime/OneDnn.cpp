//===- OneDnn.cpp - GEMMs through oneDNN, where it is linked --------------===//

#include "OneDnn.h"

#include <map>
#include <tuple>

#ifdef SPMDC_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
// Weak: a link without libdnnl (spmd-run-portable) leaves them null.
#pragma weak dnnl_sgemm
#pragma weak dnnl_engine_create
#pragma weak dnnl_stream_create
#pragma weak dnnl_memory_desc_init_by_strides
#pragma weak dnnl_matmul_desc_init
#pragma weak dnnl_primitive_desc_create
#pragma weak dnnl_primitive_desc_destroy
#pragma weak dnnl_primitive_create
#pragma weak dnnl_memory_create
#pragma weak dnnl_memory_set_data_handle
#pragma weak dnnl_primitive_execute
// oneDNN's parallel regions are OpenMP's (Debian builds it on libgomp).
extern "C" void omp_set_num_threads(int threads) __attribute__((weak));
#endif

namespace spmdc::rt {

#ifdef SPMDC_HAVE_ONEDNN

bool oneDnnSgemmAvailable() { return dnnl_sgemm != nullptr; }

bool oneDnnSgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 float alpha, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float beta, float *c, int64_t ldc) {
  return dnnl_sgemm && dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m,
                                  n, k, alpha, a, lda, b, ldb, beta, c,
                                  ldc) == dnnl_success;
}

namespace {

/// A matmul primitive for one shape, and its memories, whose data handles
/// are set at each call.
struct Bf16Matmul {
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_t a = nullptr, b = nullptr, c = nullptr;
};

/// A matmul's shape: `batch` matrices of [m, k] @ [k, n], A and B read
/// transposed where said, run on `threads` OpenMP threads.
using Bf16Shape = std::tuple<int64_t, int64_t, int64_t, int64_t, bool, bool,
                             int>;

/// The engine, the stream and a primitive per shape, made on first use. A
/// step has a few dozen shapes; oneDNN JIT-compiles each primitive once.
/// oneDNN picks a primitive's blocking for the OpenMP thread count of its
/// creation, so each is made and run under the same count.
struct Bf16Matmuls {
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  bool usable = false;
  std::map<Bf16Shape, Bf16Matmul> byShape;

  Bf16Matmuls() {
    usable = dnnl_engine_create && dnnl_primitive_execute &&
             dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success &&
             dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) ==
                 dnnl_success;
  }

  /// The primitive for `shape`; null where oneDNN refuses it.
  const Bf16Matmul *get(const Bf16Shape &shape) {
    auto found = byShape.find(shape);
    if (found != byShape.end())
      return found->second.primitive ? &found->second : nullptr;
    Bf16Matmul &made = byShape[shape];
    auto [batch, m, n, k, transA, transB, threads] = shape;
    // A transposed is stored [k, m]: element (i, j) at j * m + i. The
    // matrices of a batch are consecutive.
    dnnl_dims_t aDims = {batch, m, k}, bDims = {batch, k, n},
                cDims = {batch, m, n};
    dnnl_dims_t aStrides = {m * k, transA ? 1 : k, transA ? m : 1};
    dnnl_dims_t bStrides = {k * n, transB ? 1 : n, transB ? k : 1};
    dnnl_dims_t cStrides = {m * n, n, 1};
    // A single matrix is described in two dims, as oneDNN's 2-D kernels
    // expect.
    int rank = batch == 1 ? 2 : 3, skip = 3 - rank;
    dnnl_memory_desc_t aDesc, bDesc, cDesc;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t primitiveDesc = nullptr;
    bool ok =
        dnnl_memory_desc_init_by_strides(&aDesc, rank, aDims + skip, dnnl_bf16,
                                         aStrides + skip) == dnnl_success &&
        dnnl_memory_desc_init_by_strides(&bDesc, rank, bDims + skip, dnnl_bf16,
                                         bStrides + skip) == dnnl_success &&
        dnnl_memory_desc_init_by_strides(&cDesc, rank, cDims + skip, dnnl_bf16,
                                         cStrides + skip) == dnnl_success &&
        dnnl_matmul_desc_init(&desc, &aDesc, &bDesc, nullptr, &cDesc) ==
            dnnl_success &&
        dnnl_primitive_desc_create(&primitiveDesc, &desc, nullptr, engine,
                                   nullptr) == dnnl_success &&
        dnnl_primitive_create(&made.primitive, primitiveDesc) ==
            dnnl_success &&
        dnnl_memory_create(&made.a, &aDesc, engine, DNNL_MEMORY_NONE) ==
            dnnl_success &&
        dnnl_memory_create(&made.b, &bDesc, engine, DNNL_MEMORY_NONE) ==
            dnnl_success &&
        dnnl_memory_create(&made.c, &cDesc, engine, DNNL_MEMORY_NONE) ==
            dnnl_success;
    if (primitiveDesc)
      dnnl_primitive_desc_destroy(primitiveDesc);
    if (!ok)
      made.primitive = nullptr;
    return ok ? &made : nullptr;
  }

  bool run(const Bf16Matmul &matmul, const uint16_t *a, const uint16_t *b,
           uint16_t *c) {
    if (dnnl_memory_set_data_handle(matmul.a, const_cast<uint16_t *>(a)) !=
            dnnl_success ||
        dnnl_memory_set_data_handle(matmul.b, const_cast<uint16_t *>(b)) !=
            dnnl_success ||
        dnnl_memory_set_data_handle(matmul.c, c) != dnnl_success)
      return false;
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, matmul.a},
                              {DNNL_ARG_WEIGHTS, matmul.b},
                              {DNNL_ARG_DST, matmul.c}};
    return dnnl_primitive_execute(matmul.primitive, stream, 3, args) ==
           dnnl_success;
  }
};

} // namespace

bool oneDnnMatmulBf16(const MatmulBatches &batches, const uint16_t *a,
                      const uint16_t *b, uint16_t *c, int threads) {
  static Bf16Matmuls matmuls;
  if (!matmuls.usable)
    return false;
  if (threads > 1 && !omp_set_num_threads)
    threads = 1;
  // The calling thread's OpenMP count is 1 between calls (Blas.cpp).
  struct Threads {
    int count;
    explicit Threads(int count) : count(count) {
      if (count > 1)
        omp_set_num_threads(count);
    }
    ~Threads() {
      if (count > 1)
        omp_set_num_threads(1);
    }
  } scoped(threads);
  int64_t m = batches.m, n = batches.n, k = batches.k;
  bool transA = batches.transposeA, transB = batches.transposeB;
  if (batches.aFull && batches.bShared && !transA) {
    // x @ W over a batch: one matmul over all its rows.
    const Bf16Matmul *whole =
        matmuls.get({1, batches.count() * m, n, k, false, transB, threads});
    return whole && matmuls.run(*whole, a, b, c);
  }
  if (batches.aFull && batches.bFull) {
    // Matrices paired one to one (attention's heads): one batched matmul.
    const Bf16Matmul *all =
        matmuls.get({batches.count(), m, n, k, transA, transB, threads});
    return all && matmuls.run(*all, a, b, c);
  }
  const Bf16Matmul *one = matmuls.get({1, m, n, k, transA, transB, threads});
  if (!one)
    return false;
  for (int64_t i = 0; i < batches.count(); ++i)
    if (!matmuls.run(*one, a + batches.aMatrix[i] * m * k,
                     b + batches.bMatrix[i] * k * n, c + i * m * n))
      return false;
  return true;
}

#else // !SPMDC_HAVE_ONEDNN

bool oneDnnSgemmAvailable() { return false; }
bool oneDnnSgemm(bool, bool, int64_t, int64_t, int64_t, float, const float *,
                 int64_t, const float *, int64_t, float, float *, int64_t) {
  return false;
}
bool oneDnnMatmulBf16(const MatmulBatches &, const uint16_t *,
                      const uint16_t *, uint16_t *, int) {
  return false;
}

#endif // SPMDC_HAVE_ONEDNN

} // namespace spmdc::rt
