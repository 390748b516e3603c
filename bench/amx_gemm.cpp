// GPT-2 small's bf16 GEMM shapes (batch 4 x 128) on the runtime's AMX
// kernels (lib/Runtime/AmxMatmul.cpp) and on oneDNN's matmul primitive, in
// turn in one process, best of 5 each; "differ" counts the elements where
// the two results are not the same bits. Build and run (one thread pinned
// to a core, then two):
//
//   g++ -O2 -std=c++17 -Iinclude -Ilib/Runtime bench/amx_gemm.cpp \
//     lib/Runtime/AmxMatmul.cpp lib/Runtime/ParallelFor.cpp -o /tmp/amx_gemm \
//     -ldnnl -fopenmp -lpthread
//   OMP_WAIT_POLICY=passive taskset -c 1 /tmp/amx_gemm 1
//   OMP_WAIT_POLICY=passive taskset -c 0,1 /tmp/amx_gemm 2
//
// An optional second argument keeps the shapes whose label contains it.
// docs/benchmarks.md records the figures.
#include "AmxMatmul.h"
#include "spmdc/Runtime/ParallelFor.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <omp.h>
#include <vector>
using namespace dnnl;
static double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
struct S {
  long m, n, k;
  bool ta, tb;
  const char *what;
};
int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  const char *only = argc > 2 ? argv[2] : nullptr;
  omp_set_num_threads(threads);
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  S shapes[] = {{512, 768, 768, 0, 1, "x@W^T 768"},
                {512, 3072, 768, 0, 1, "x@W^T fc"},
                {512, 768, 3072, 0, 1, "x@W^T proj"},
                {512, 768, 768, 0, 0, "dY@W 768"},
                {512, 768, 3072, 0, 0, "dY@W proj"},
                {512, 3072, 768, 0, 0, "dY@W fc"},
                {512, 50257, 768, 0, 1, "lm head"},
                {512, 768, 50257, 0, 0, "dlogits@W"},
                {768, 768, 512, 1, 0, "dW 768"},
                {3072, 768, 512, 1, 0, "dW fc"},
                {768, 3072, 512, 1, 0, "dW proj"},
                {50257, 768, 512, 1, 0, "dW lm"}};
  double tA = 0, tD = 0;
  for (auto &sh : shapes) {
    if (only && !strstr(sh.what, only))
      continue;
    long M = sh.m, N = sh.n, K = sh.k;
    std::vector<uint16_t> A(M * K), B(K * N), C(M * N), C2(M * N);
    for (long i = 0; i < M * K; i++)
      A[i] = 0x3f80 + (i % 7);
    for (long i = 0; i < K * N; i++)
      B[i] = 0x3f80 + (i % 5);
    memory::dims ad = {M, K}, bd = {K, N}, cd = {M, N};
    memory::desc a(ad, memory::data_type::bf16,
                   sh.ta ? memory::dims{1, M} : memory::dims{K, 1});
    memory::desc b(bd, memory::data_type::bf16,
                   sh.tb ? memory::dims{1, K} : memory::dims{N, 1});
    memory::desc c(cd, memory::data_type::bf16, memory::format_tag::ab);
    matmul::primitive_desc pd(matmul::desc(a, b, c), eng);
    matmul mm(pd);
    memory Am(a, eng, A.data()), Bm(b, eng, B.data()), Cm(c, eng, C2.data());
    spmdc::rt::MatmulBatches bt;
    bt.m = M;
    bt.n = N;
    bt.k = K;
    bt.transposeA = sh.ta;
    bt.transposeB = sh.tb;
    bt.aMatrix = {0};
    bt.bMatrix = {0};
    auto amx = [&] {
      spmdc::rt::amxMatmulBf16(bt, A.data(), B.data(), C.data(), threads);
    };
    auto dn = [&] {
      mm.execute(
          s, {{DNNL_ARG_SRC, Am}, {DNNL_ARG_WEIGHTS, Bm}, {DNNL_ARG_DST, Cm}});
      s.wait();
    };
    amx();
    dn();
    double ba = 1e9, bd2 = 1e9;
    for (int r = 0; r < 5; r++) {
      double t0 = now();
      amx();
      double t = now() - t0;
      if (t < ba)
        ba = t;
      t0 = now();
      dn();
      t = now() - t0;
      if (t < bd2)
        bd2 = t;
    }
    long diff = 0;
    for (long i = 0; i < M * N; i++)
      diff += C[i] != C2[i];
    double f = 2.0 * M * N * K;
    tA += ba;
    tD += bd2;
    printf("%-12s %5ld %6ld %6ld  amx %7.2f ms %5.0f GF/s   onednn %7.2f ms "
           "%5.0f GF/s  ratio %.2f  differ %ld\n",
           sh.what, M, N, K, ba * 1e3, f / ba * 1e-9, bd2 * 1e3, f / bd2 * 1e-9,
           ba / bd2, diff);
  }
  printf("total amx %.1f ms onednn %.1f ms ratio %.2f\n", tA * 1e3, tD * 1e3,
         tA / tD);
}
