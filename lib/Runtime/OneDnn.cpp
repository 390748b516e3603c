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

/// The engine, the stream and a primitive per shape, made on first use. A
/// step has a few dozen shapes; oneDNN JIT-compiles each primitive once.
struct Bf16Matmuls {
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  bool usable = false;
  std::map<std::tuple<int64_t, int64_t, int64_t, bool, bool>, Bf16Matmul>
      byShape;

  Bf16Matmuls() {
    usable = dnnl_engine_create && dnnl_primitive_execute &&
             dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success &&
             dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) ==
                 dnnl_success;
  }

  /// The primitive for [m, k] @ [k, n], A and B read transposed where said;
  /// null where oneDNN refuses it.
  const Bf16Matmul *get(int64_t m, int64_t n, int64_t k, bool transA,
                        bool transB) {
    auto key = std::make_tuple(m, n, k, transA, transB);
    auto found = byShape.find(key);
    if (found != byShape.end())
      return found->second.primitive ? &found->second : nullptr;
    Bf16Matmul &made = byShape[key];
    // A transposed is stored [k, m]: element (i, j) at j * m + i.
    dnnl_dims_t aDims = {m, k}, bDims = {k, n}, cDims = {m, n};
    dnnl_dims_t aStrides = {transA ? 1 : k, transA ? m : 1};
    dnnl_dims_t bStrides = {transB ? 1 : n, transB ? k : 1};
    dnnl_dims_t cStrides = {n, 1};
    dnnl_memory_desc_t aDesc, bDesc, cDesc;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t primitiveDesc = nullptr;
    bool ok =
        dnnl_memory_desc_init_by_strides(&aDesc, 2, aDims, dnnl_bf16,
                                         aStrides) == dnnl_success &&
        dnnl_memory_desc_init_by_strides(&bDesc, 2, bDims, dnnl_bf16,
                                         bStrides) == dnnl_success &&
        dnnl_memory_desc_init_by_strides(&cDesc, 2, cDims, dnnl_bf16,
                                         cStrides) == dnnl_success &&
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
                      const uint16_t *b, uint16_t *c) {
  static Bf16Matmuls matmuls;
  if (!matmuls.usable)
    return false;
  int64_t m = batches.m, n = batches.n, k = batches.k;
  if (batches.aFull && batches.bShared && !batches.transposeA) {
    // x @ W over a batch: one matmul over all its rows.
    const Bf16Matmul *whole =
        matmuls.get(batches.count() * m, n, k, false, batches.transposeB);
    return whole && matmuls.run(*whole, a, b, c);
  }
  const Bf16Matmul *one =
      matmuls.get(m, n, k, batches.transposeA, batches.transposeB);
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
                      const uint16_t *, uint16_t *) {
  return false;
}

#endif // SPMDC_HAVE_ONEDNN

} // namespace spmdc::rt
