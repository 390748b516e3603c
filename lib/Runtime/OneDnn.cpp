//===- OneDnn.cpp - GEMMs through oneDNN, where it is installed -----------===//

#include "OneDnn.h"

#include <map>
#include <tuple>
#include <type_traits>

#ifdef SPMDC_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>

#include <dlfcn.h>

#include <cstdlib>
#endif

namespace spmdc::rt {

#ifdef SPMDC_HAVE_ONEDNN

namespace {

#define SPMDC_STRING(x) #x
#define SPMDC_SONAME(major) "libdnnl.so." SPMDC_STRING(major)

/// oneDNN's entry points, from the library of the headers' major version,
/// loaded at first use. Not linked: libgomp, which oneDNN brings, reads its
/// environment once, when it is loaded, and its threads must sleep at once
/// after each parallel region. Spinning (its default, milliseconds), they
/// took the core from the rank's own pool and its loop nests: a tenth of
/// GPT-2 small's bf16 step on two threads went to libgomp's spin loop. A
/// user's OMP_WAIT_POLICY or GOMP_SPINCOUNT is kept.
struct OneDnnLibrary {
  decltype(&dnnl_sgemm) sgemm = nullptr;
  decltype(&dnnl_engine_create) engineCreate = nullptr;
  decltype(&dnnl_stream_create) streamCreate = nullptr;
  decltype(&dnnl_memory_desc_init_by_strides) memoryDescInitByStrides = nullptr;
  decltype(&dnnl_matmul_desc_init) matmulDescInit = nullptr;
  decltype(&dnnl_primitive_desc_create) primitiveDescCreate = nullptr;
  decltype(&dnnl_primitive_desc_destroy) primitiveDescDestroy = nullptr;
  decltype(&dnnl_primitive_create) primitiveCreate = nullptr;
  decltype(&dnnl_memory_create) memoryCreate = nullptr;
  decltype(&dnnl_memory_set_data_handle) memorySetDataHandle = nullptr;
  decltype(&dnnl_primitive_execute) primitiveExecute = nullptr;
  /// OpenMP's, from libgomp: oneDNN's parallel regions are its.
  void (*ompSetNumThreads)(int) = nullptr;
  bool loaded = false;

  OneDnnLibrary() {
    if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT"))
      setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0);
    void *handle =
        dlopen(SPMDC_SONAME(DNNL_VERSION_MAJOR), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      return;
    auto bind = [&](auto &entry, const char *name) {
      entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(
          dlsym(handle, name));
      return entry != nullptr;
    };
    loaded =
        bind(sgemm, "dnnl_sgemm") && bind(engineCreate, "dnnl_engine_create") &&
        bind(streamCreate, "dnnl_stream_create") &&
        bind(memoryDescInitByStrides, "dnnl_memory_desc_init_by_strides") &&
        bind(matmulDescInit, "dnnl_matmul_desc_init") &&
        bind(primitiveDescCreate, "dnnl_primitive_desc_create") &&
        bind(primitiveDescDestroy, "dnnl_primitive_desc_destroy") &&
        bind(primitiveCreate, "dnnl_primitive_create") &&
        bind(memoryCreate, "dnnl_memory_create") &&
        bind(memorySetDataHandle, "dnnl_memory_set_data_handle") &&
        bind(primitiveExecute, "dnnl_primitive_execute") &&
        bind(ompSetNumThreads, "omp_set_num_threads");
  }
};

#undef SPMDC_SONAME
#undef SPMDC_STRING

const OneDnnLibrary &oneDnn() {
  static const OneDnnLibrary library;
  return library;
}

} // namespace

bool oneDnnSgemmAvailable() { return oneDnn().loaded; }

void oneDnnSetThreads(int threads) {
  if (oneDnn().loaded)
    oneDnn().ompSetNumThreads(threads);
}

bool oneDnnSgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 float alpha, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float beta, float *c, int64_t ldc) {
  const OneDnnLibrary &dnnl = oneDnn();
  return dnnl.loaded &&
         dnnl.sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, alpha, a,
                    lda, b, ldb, beta, c, ldc) == dnnl_success;
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
using Bf16Shape =
    std::tuple<int64_t, int64_t, int64_t, int64_t, bool, bool, int>;

/// The engine, the stream and a primitive per shape, made on first use. A
/// step has a few dozen shapes; oneDNN JIT-compiles each primitive once.
/// oneDNN picks a primitive's blocking for the OpenMP thread count of its
/// creation, so each is made and run under the same count.
struct Bf16Matmuls {
  const OneDnnLibrary &dnnl = oneDnn();
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  bool usable = false;
  std::map<Bf16Shape, Bf16Matmul> byShape;

  Bf16Matmuls() {
    usable = dnnl.loaded &&
             dnnl.engineCreate(&engine, dnnl_cpu, 0) == dnnl_success &&
             dnnl.streamCreate(&stream, engine, dnnl_stream_default_flags) ==
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
        dnnl.memoryDescInitByStrides(&aDesc, rank, aDims + skip, dnnl_bf16,
                                     aStrides + skip) == dnnl_success &&
        dnnl.memoryDescInitByStrides(&bDesc, rank, bDims + skip, dnnl_bf16,
                                     bStrides + skip) == dnnl_success &&
        dnnl.memoryDescInitByStrides(&cDesc, rank, cDims + skip, dnnl_bf16,
                                     cStrides + skip) == dnnl_success &&
        dnnl.matmulDescInit(&desc, &aDesc, &bDesc, nullptr, &cDesc) ==
            dnnl_success &&
        dnnl.primitiveDescCreate(&primitiveDesc, &desc, nullptr, engine,
                                 nullptr) == dnnl_success &&
        dnnl.primitiveCreate(&made.primitive, primitiveDesc) == dnnl_success &&
        dnnl.memoryCreate(&made.a, &aDesc, engine, DNNL_MEMORY_NONE) ==
            dnnl_success &&
        dnnl.memoryCreate(&made.b, &bDesc, engine, DNNL_MEMORY_NONE) ==
            dnnl_success &&
        dnnl.memoryCreate(&made.c, &cDesc, engine, DNNL_MEMORY_NONE) ==
            dnnl_success;
    if (primitiveDesc)
      dnnl.primitiveDescDestroy(primitiveDesc);
    if (!ok)
      made.primitive = nullptr;
    return ok ? &made : nullptr;
  }

  bool run(const Bf16Matmul &matmul, const uint16_t *a, const uint16_t *b,
           uint16_t *c) {
    if (dnnl.memorySetDataHandle(matmul.a, const_cast<uint16_t *>(a)) !=
            dnnl_success ||
        dnnl.memorySetDataHandle(matmul.b, const_cast<uint16_t *>(b)) !=
            dnnl_success ||
        dnnl.memorySetDataHandle(matmul.c, c) != dnnl_success)
      return false;
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, matmul.a},
                              {DNNL_ARG_WEIGHTS, matmul.b},
                              {DNNL_ARG_DST, matmul.c}};
    return dnnl.primitiveExecute(matmul.primitive, stream, 3, args) ==
           dnnl_success;
  }
};

} // namespace

bool oneDnnMatmulBf16(const MatmulBatches &batches, const uint16_t *a,
                      const uint16_t *b, uint16_t *c, int threads) {
  static Bf16Matmuls matmuls;
  if (!matmuls.usable)
    return false;
  // The calling thread's OpenMP count is 1 between calls (Blas.cpp).
  struct Threads {
    const OneDnnLibrary &dnnl;
    int count;
    Threads(const OneDnnLibrary &dnnl, int count) : dnnl(dnnl), count(count) {
      if (count > 1)
        dnnl.ompSetNumThreads(count);
    }
    ~Threads() {
      if (count > 1)
        dnnl.ompSetNumThreads(1);
    }
  } scoped(matmuls.dnnl, threads);
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
void oneDnnSetThreads(int) {}
bool oneDnnSgemm(bool, bool, int64_t, int64_t, int64_t, float, const float *,
                 int64_t, const float *, int64_t, float, float *, int64_t) {
  return false;
}
bool oneDnnMatmulBf16(const MatmulBatches &, const uint16_t *, const uint16_t *,
                      uint16_t *, int) {
  return false;
}

#endif // SPMDC_HAVE_ONEDNN

} // namespace spmdc::rt
