/* The link between MPI ranks as the network estimate sees it (spmdc
 * --network, docs/report.md#network-estimate): alpha (microseconds per ring
 * step) and the bandwidth (Gb/s) that fit MPI_Allreduce's time on N ranks to
 * the ring formula
 *     t(B) = 2 (n - 1) alpha + 2 (n - 1) / n * B / bandwidth.
 * In place, f32 sum, as spmd-run's all-reduces; the median of 9 timed calls
 * per size, rank 0's clock after a barrier.
 *
 *   mpicc -O2 bench/allreduce_link.c -o /tmp/allreduce_link
 *   mpirun --allow-run-as-root -np 2 /tmp/allreduce_link
 *
 * alpha comes from the 4-byte all-reduce; the bandwidth from a least-squares
 * fit of the sizes of 1 MiB and up, once alpha is taken off.
 * docs/benchmarks.md records the figures. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  long maxBytes = 256L << 20;
  float *buf = malloc(maxBytes);
  for (long i = 0; i < maxBytes / 4; i++)
    buf[i] = 1e-6f * (float)(i % 97);
  double alpha = 0, sxy = 0, sxx = 0;
  if (rank == 0)
    printf("%12s %12s %10s\n", "bytes", "median us", "GB/s wire");
  for (long bytes = 4; bytes <= maxBytes; bytes *= 4) {
    int count = (int)(bytes / 4), reps = 9;
    double t[9];
    MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (int r = 0; r < reps; r++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      t[r] = MPI_Wtime() - t0;
    }
    qsort(t, reps, sizeof(double), cmp);
    double median = t[reps / 2];
    double wire = 2.0 * (n - 1) / n * (double)bytes;
    if (bytes == 4)
      alpha = median / (2.0 * (n - 1));
    if (bytes >= (1L << 20)) {
      /* wire / bandwidth = median - 2 (n - 1) alpha: fit 1 / bandwidth. */
      double y = median - 2.0 * (n - 1) * alpha;
      sxy += wire * y;
      sxx += wire * wire;
    }
    if (rank == 0)
      printf("%12ld %12.1f %10.2f\n", bytes, median * 1e6, wire / median * 1e-9);
  }
  if (rank == 0)
    printf("ranks %d: alpha-us=%.2f,gbps=%.1f\n", n, alpha * 1e6,
           8.0 / (sxy / sxx) * 1e-9);
  free(buf);
  MPI_Finalize();
  return 0;
}
