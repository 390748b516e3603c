/* One thread's memory bandwidth, STREAM's triad: a[i] = b[i] + s * c[i].
 *
 *   cc -O2 -march=native bench/stream_triad.c -o /tmp/stream_triad
 *   taskset -c 0 /tmp/stream_triad [MiB per array, default 256]
 *
 * Counts 24 bytes an element (reads b and c, writes a; the write's
 * allocating read not counted, as STREAM does) and prints the best of 10
 * passes in GB/s (1e9 bytes), with copy (a[i] = b[i], 16 bytes) beside it.
 * The --network estimate's membw= (docs/benchmarks.md#the-network-estimate-against-the-2-rank-trace).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
  size_t n = mib * 1024 * 1024 / sizeof(double);
  double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)),
         *c = malloc(n * sizeof(double));
  if (!a || !b || !c)
    return 1;
  for (size_t i = 0; i < n; ++i)
    a[i] = 0, b[i] = 1, c[i] = 2;
  double triad = 1e30, copy = 1e30, s = 3;
  for (int pass = 0; pass < 10; ++pass) {
    double t0 = now();
    for (size_t i = 0; i < n; ++i)
      a[i] = b[i] + s * c[i];
    double t1 = now();
    for (size_t i = 0; i < n; ++i)
      c[i] = a[i];
    double t2 = now();
    if (t1 - t0 < triad)
      triad = t1 - t0;
    if (t2 - t1 < copy)
      copy = t2 - t1;
    s = a[n / 2] > 1e300 ? 1 : s; /* keep the loops */
  }
  printf("triad %.1f GB/s, copy %.1f GB/s (%zu MiB arrays, best of 10)\n",
         24.0 * n / triad / 1e9, 16.0 * n / copy / 1e9, mib);
  return 0;
}
