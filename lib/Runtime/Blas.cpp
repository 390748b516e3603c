//===- Blas.cpp - matmuls of compiled code through oneDNN or CBLAS --------===//
//
// f32 GEMMs go to oneDNN's dnnl_sgemm where the build found it (OneDnn.h):
// its JIT picks the CPU's widest kernels (AVX-512, AVX512_BF16) whatever
// OPENBLAS_CORETYPE says. bf16 matmuls go to the runtime's own AMX kernels
// where the CPU has AMX (AmxMatmul.h), else to oneDNN's matmul primitive.
// SGEMM measured 8 to 12% faster than Debian's OpenBLAS on GPT-2's shapes,
// bf16 twice that (docs/benchmarks.md). f64 GEMMs, and f32 where
// oneDNN is absent or where SPMDC_GEMM=openblas asks, go to the system's
// CBLAS. Each library runs on one thread: a rank with several splits its
// large GEMMs over its own threads (gemmOnThreads).
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/Blas.h"
#include "AmxMatmul.h"
#include "OneDnn.h"
#include "spmdc/Runtime/FloatFormats.h"
#include "spmdc/Runtime/MatmulBatches.h"
#include "spmdc/Runtime/ParallelFor.h"
#include "spmdc/Runtime/Trace.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// The CBLAS entry points, declared here rather than through <cblas.h>,
// whose Debian alternative may name another implementation's header.
extern "C" {
void cblas_sgemm(int order, int transA, int transB, int m, int n, int k,
                 float alpha, const float *a, int lda, const float *b, int ldb,
                 float beta, float *c, int ldc);
void cblas_dgemm(int order, int transA, int transB, int m, int n, int k,
                 double alpha, const double *a, int lda, const double *b,
                 int ldb, double beta, double *c, int ldc);
void openblas_set_num_threads(int threads) __attribute__((weak));
}

namespace {

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

/// GEMM threads (spmd_blas_set_threads).
int gemmThreads = 1;

/// Both libraries start with a thread per core; each is kept at one. A rank
/// with several threads splits each large GEMM itself, over the pool of
/// its loop nests (gemmOnThreads): one team for the whole step, where
/// OpenBLAS's own threads competed with the nests' for the cores, and
/// oneDNN's OpenMP team, woken for every GEMM, made medium's step 3 to 5
/// times slower on two threads than on one (docs/benchmarks.md).
/// OpenMP's thread count is each thread's own: every thread that runs a
/// GEMM (the pool's too) sets it once.
void applyGemmThreads() {
  static thread_local bool applied = [] {
    if (openblas_set_num_threads)
      openblas_set_num_threads(1);
    spmdc::rt::oneDnnSetThreads(1);
    return true;
  }();
  (void)applied;
}

/// Whether f32 GEMMs go to oneDNN: where it is linked in, unless the
/// environment's SPMDC_GEMM is "openblas" (to measure one against the other).
bool useOneDnn() {
  static const bool use = [] {
    const char *choice = std::getenv("SPMDC_GEMM");
    return spmdc::rt::oneDnnSgemmAvailable() &&
           (!choice || std::strcmp(choice, "openblas") != 0);
  }();
  return use;
}

/// Whether bf16 GEMMs go to the runtime's own AMX kernels: where the CPU
/// has AMX, unless SPMDC_GEMM names a library ("onednn" or "openblas").
bool useAmx() {
  static const bool use = [] {
    const char *choice = std::getenv("SPMDC_GEMM");
    return spmdc::rt::amxBf16Available() &&
           (!choice || !*choice || std::strcmp(choice, "amx") == 0);
  }();
  return use;
}

/// cblas_sgemm's signature over oneDNN's row-major dnnl_sgemm.
void oneDnnSgemm(int order, int transA, int transB, int m, int n, int k,
                 float alpha, const float *a, int lda, const float *b, int ldb,
                 float beta, float *c, int ldc) {
  if (spmdc::rt::oneDnnSgemm(transA == kTrans, transB == kTrans, m, n, k,
                             alpha, a, lda, b, ldb, beta, c, ldc))
    return;
  cblas_sgemm(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}

/// The f32 GEMM of this process.
auto sgemm() { return useOneDnn() ? oneDnnSgemm : cblas_sgemm; }

template <typename T>
using Gemm = void (*)(int, int, int, int, int, int, T, const T *, int,
                      const T *, int, T, T *, int);

/// Below this many flops a GEMM (or a batch of them) stays on the calling
/// thread: waking the pool costs more than half of it saves.
constexpr double kSplitFlops = 2e6;

/// One GEMM C = op(A) @ op(B), row-major, that gemmOnThreads splits.
template <typename T> struct GemmCall {
  Gemm<T> gemm;
  int transA, transB, m, n, k;
  const T *a;
  int lda;
  const T *b;
  int ldb;
  T *c;
  int ldc;

  void run() const {
    applyGemmThreads();
    gemm(kRowMajor, transA, transB, m, n, k, T(1), a, lda, b, ldb, T(0), c,
         ldc);
  }
  /// Rows [first, last) of C: the same rows of op(A).
  GemmCall rows(int first, int last) const {
    GemmCall part = *this;
    part.m = last - first;
    part.a = a + (transA == kTrans ? first : int64_t(first) * lda);
    part.c = c + int64_t(first) * ldc;
    return part;
  }
  /// Columns [first, last) of C: the same columns of op(B).
  GemmCall columns(int first, int last) const {
    GemmCall part = *this;
    part.n = last - first;
    part.b = b + (transB == kTrans ? int64_t(first) * ldb : first);
    part.c = c + first;
    return part;
  }
};

/// Runs `call` on the rank's threads: its longer side of C split in one
/// part per thread, in blocks of 16 (whole vectors of the microkernels).
template <typename T> void gemmOnThreads(const GemmCall<T> &call) {
  constexpr int kBlock = 16;
  bool byRows = call.m >= call.n;
  int side = byRows ? call.m : call.n;
  int64_t blocks = (side + kBlock - 1) / kBlock;
  if (gemmThreads <= 1 || blocks < 2 ||
      2.0 * call.m * call.n * call.k < kSplitFlops) {
    call.run();
    return;
  }
  struct Job {
    const GemmCall<T> &call;
    bool byRows;
    int side;
  } job{call, byRows, side};
  spmdc::rt::parallelChunks(
      [](void *ctx, int64_t lo, int64_t hi) {
        auto &job = *static_cast<Job *>(ctx);
        int first = int(lo) * kBlock, last = std::min(int(hi) * kBlock, job.side);
        (job.byRows ? job.call.rows(first, last)
                    : job.call.columns(first, last))
            .run();
      },
      &job, blocks, gemmThreads);
}

/// C = A @ B over `batches`, on row-major data of type T.
template <typename T>
void gemmBatches(Gemm<T> gemm, const spmdc::rt::MatmulBatches &batches,
                 const T *aData, const T *bData, T *cData) {
  auto m = static_cast<int>(batches.m), n = static_cast<int>(batches.n),
       k = static_cast<int>(batches.k);
  int transA = batches.transposeA ? kTrans : kNoTrans;
  int transB = batches.transposeB ? kTrans : kNoTrans;
  int lda = batches.transposeA ? m : k, ldb = batches.transposeB ? k : n;
  if (batches.aFull && batches.bShared && !batches.transposeA) {
    // x @ W over a batch: one GEMM over all its rows.
    gemmOnThreads<T>({gemm, transA, transB,
                      static_cast<int>(batches.count() * m), n, k, aData, lda,
                      bData, ldb, cData, n});
    return;
  }
  auto matrix = [&](int64_t i) {
    return GemmCall<T>{gemm,  transA, transB,
                       m,     n,      k,
                       aData + batches.aMatrix[i] * m * k,
                       lda,   bData + batches.bMatrix[i] * k * n,
                       ldb,   cData + i * m * n,
                       n};
  };
  int64_t count = batches.count();
  if (gemmThreads > 1 && count >= gemmThreads &&
      2.0 * count * m * n * k >= kSplitFlops) {
    // Many matrices (attention's heads): whole matrices to each thread.
    struct Job {
      decltype(matrix) &of;
    } job{matrix};
    spmdc::rt::parallelChunks(
        [](void *ctx, int64_t lo, int64_t hi) {
          auto &job = *static_cast<Job *>(ctx);
          for (int64_t i = lo; i < hi; ++i)
            job.of(i).run();
        },
        &job, count, gemmThreads);
    return;
  }
  for (int64_t i = 0; i < count; ++i)
    gemmOnThreads(matrix(i));
}

/// A GEMM call on the trace (spmd-run --trace): its shape and flops.
struct TracedGemm {
  const spmdc::rt::MatmulBatches &batches;
  double start = spmdc::rt::trace::enabled() ? spmdc::rt::trace::nowMicros() : 0;
  ~TracedGemm() {
    if (!spmdc::rt::trace::enabled())
      return;
    char args[160];
    std::snprintf(args, sizeof args,
                  "{\"m\": %lld, \"n\": %lld, \"k\": %lld, \"batches\": %lld, "
                  "\"flops\": %lld}",
                  static_cast<long long>(batches.m),
                  static_cast<long long>(batches.n),
                  static_cast<long long>(batches.k),
                  static_cast<long long>(batches.count()),
                  static_cast<long long>(2 * batches.count() * batches.m *
                                         batches.n * batches.k));
    spmdc::rt::trace::record("gemm", "gemm", start, args);
  }
};

/// The operands and result of a spmd_matmul_* call, checked.
struct Operands {
  spmdc::rt::MemRefView a, b, c;
  spmdc::rt::MatmulBatches batches;
  Operands(size_t elementBytes, int32_t transA, int32_t transB, int64_t aRank,
           void *aDesc, int64_t bRank, void *bDesc, int64_t cRank, void *cDesc)
      : a(aRank, aDesc, elementBytes), b(bRank, bDesc, elementBytes),
        c(cRank, cDesc, elementBytes) {
    if (!spmdc::rt::matmulBatches(a, b, c, transA != 0, transB != 0, batches)) {
      std::fprintf(stderr, "spmd-run: spmd_matmul: a buffer is not a "
                           "contiguous matrix stack (compiler bug)\n");
      std::abort();
    }
  }
};

template <typename T, typename Gemm>
void matmul(Gemm gemm, int32_t transA, int32_t transB, int64_t aRank,
            void *aDesc, int64_t bRank, void *bDesc, int64_t cRank,
            void *cDesc) {
  Operands o(sizeof(T), transA, transB, aRank, aDesc, bRank, bDesc, cRank,
             cDesc);
  TracedGemm traced{o.batches};
  gemmBatches<T>(gemm, o.batches, reinterpret_cast<const T *>(o.a.data),
                 reinterpret_cast<const T *>(o.b.data),
                 reinterpret_cast<T *>(o.c.data));
}

std::vector<float> widened(const spmdc::rt::MemRefView &view) {
  int64_t count = 1;
  for (int64_t size : view.shape)
    count *= size;
  std::vector<float> out(count);
  auto *data = reinterpret_cast<const uint16_t *>(view.data);
  for (int64_t i = 0; i < count; ++i)
    out[i] = spmdc::rt::fromBF16(data[i]);
  return out;
}

} // namespace

extern "C" {

float spmd_truncsfbf2(float value) {
  uint32_t bits = spmdc::rt::toBF16(value);
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

void spmd_blas_set_threads(int32_t threads) {
  gemmThreads = threads < 1 ? 1 : threads;
  applyGemmThreads();
}

void spmd_matmul_f32(int32_t trans_a, int32_t trans_b, int64_t a_rank,
                     void *a_desc, int64_t b_rank, void *b_desc, int64_t c_rank,
                     void *c_desc) {
  matmul<float>(sgemm(), trans_a, trans_b, a_rank, a_desc, b_rank, b_desc,
                c_rank, c_desc);
}

void spmd_matmul_f64(int32_t trans_a, int32_t trans_b, int64_t a_rank,
                     void *a_desc, int64_t b_rank, void *b_desc, int64_t c_rank,
                     void *c_desc) {
  matmul<double>(cblas_dgemm, trans_a, trans_b, a_rank, a_desc, b_rank, b_desc,
                 c_rank, c_desc);
}

void spmd_matmul_bf16(int32_t trans_a, int32_t trans_b, int64_t a_rank,
                      void *a_desc, int64_t b_rank, void *b_desc,
                      int64_t c_rank, void *c_desc) {
  // bf16 operands, f32 accumulation (SGEMM on the widened values), the
  // product rounded to bf16: what cuBLAS does with CUBLAS_COMPUTE_32F.
  Operands o(2, trans_a, trans_b, a_rank, a_desc, b_rank, b_desc, c_rank,
             c_desc);
  TracedGemm traced{o.batches};
  // The runtime's own AMX kernels where the CPU has AMX (AmxMatmul.h),
  // else oneDNN's bf16 matmul (AVX512_BF16: twice the f32 rate and more);
  // SPMDC_GEMM=onednn asks for oneDNN even with AMX, SPMDC_GEMM=openblas for
  // the widened SGEMM below. A large one runs on the rank's threads: the
  // AMX kernels on the rank's pool, oneDNN as its own OpenMP team (it packs
  // each operand once for all of them).
  applyGemmThreads();
  const auto &batches = o.batches;
  double flops = 2.0 * batches.count() * batches.m * batches.n * batches.k;
  int threads = flops < kSplitFlops ? 1 : gemmThreads;
  if (useAmx() && spmdc::rt::amxMatmulBf16(
                      batches, reinterpret_cast<const uint16_t *>(o.a.data),
                      reinterpret_cast<const uint16_t *>(o.b.data),
                      reinterpret_cast<uint16_t *>(o.c.data), threads))
    return;
  if (useOneDnn() && spmdc::rt::oneDnnMatmulBf16(
                         batches, reinterpret_cast<const uint16_t *>(o.a.data),
                         reinterpret_cast<const uint16_t *>(o.b.data),
                         reinterpret_cast<uint16_t *>(o.c.data), threads))
    return;
  std::vector<float> a = widened(o.a), b = widened(o.b);
  std::vector<float> c(o.batches.count() * o.batches.m * o.batches.n);
  gemmBatches<float>(sgemm(), o.batches, a.data(), b.data(), c.data());
  auto *out = reinterpret_cast<uint16_t *>(o.c.data);
  for (size_t i = 0; i < c.size(); ++i)
    out[i] = spmdc::rt::toBF16(c[i]);
}

} // extern "C"
