//===- ParallelFor.cpp - a rank's threads for its loop nests --------------===//
//
// A small pool: workers spin a while for the next nest or GEMM (they come
// back to back), then sleep on a condition variable. The rank's GEMMs
// split themselves on it too (Blas.cpp), so its threads are one team. The pool is
// made at the first call with more than one thread and never torn down
// (its threads are detached).
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/ParallelFor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <immintrin.h>

namespace {

using Fn = void (*)(void *, int64_t, int64_t);

constexpr int kMaxThreads = 64;
/// Chunks per thread: a thread that is late (the machine has more work
/// than cores) leaves its chunks to the others.
constexpr int kChunksPerThread = 4;
/// How long a worker spins for the next nest or GEMM before it sleeps. It
/// was 20 us while OpenBLAS's own threads ran the GEMMs (a spinning worker
/// took their core); with the GEMMs on this pool, 100 us keeps the team
/// awake across the step's short gaps: medium's 2-thread step 13.3 -> 11.8
/// ms, GPT-2 small's unchanged (docs/benchmarks.md).
constexpr auto kSpin = std::chrono::microseconds(100);

/// The state word: the job's generation (32 bits), its chunks (16) and the
/// next chunk to claim (16). A claim is a compare-and-swap on the whole
/// word, so a worker late for one job cannot claim a chunk of the next.
constexpr uint64_t generationOf(uint64_t state) { return state >> 32; }
constexpr uint64_t chunksOf(uint64_t state) { return (state >> 16) & 0xffff; }
constexpr uint64_t nextOf(uint64_t state) { return state & 0xffff; }

struct Pool {
  // The job, read only by a thread holding a claimed chunk of it (the
  // caller does not change it until every chunk is done).
  Fn fn = nullptr;
  void *ctx = nullptr;
  int64_t lo = 0, hi = 0, iterations = 0, step = 1, chunks = 1;
  std::atomic<uint64_t> state{0};
  std::atomic<int64_t> done{0};
  std::atomic<int> sleepers{0};
  std::mutex mutex;
  std::condition_variable wake;
  int workers = 0;

  void runChunk(int64_t chunk) {
    int64_t first = iterations * chunk / chunks;
    int64_t last = iterations * (chunk + 1) / chunks;
    if (first < last)
      fn(ctx, lo + first * step, std::min(hi, lo + last * step));
  }

  /// Runs chunks of the job of `generation` until none is left.
  void claimChunks(uint64_t generation) {
    uint64_t current = state.load(std::memory_order_acquire);
    while (generationOf(current) == generation &&
           nextOf(current) < chunksOf(current)) {
      if (!state.compare_exchange_weak(current, current + 1,
                                       std::memory_order_acq_rel))
        continue;
      runChunk(int64_t(nextOf(current)));
      done.fetch_add(1, std::memory_order_acq_rel);
      current = state.load(std::memory_order_acquire);
    }
  }

  void work() {
    uint64_t seen = generationOf(state.load());
    for (;;) {
      auto until = std::chrono::steady_clock::now() + kSpin;
      int spins = 0;
      while (generationOf(state.load(std::memory_order_acquire)) == seen) {
        _mm_pause();
        if (++spins % 64 == 0 && std::chrono::steady_clock::now() > until) {
          std::unique_lock<std::mutex> lock(mutex);
          sleepers.fetch_add(1);
          wake.wait(lock, [&] { return generationOf(state.load()) != seen; });
          sleepers.fetch_sub(1);
          break;
        }
      }
      seen = generationOf(state.load(std::memory_order_acquire));
      claimChunks(seen);
    }
  }

  void run(Fn f, void *c, int64_t first, int64_t end, int64_t count,
           int64_t stride, int threads, int64_t chunkCount) {
    while (workers < threads - 1) {
      ++workers;
      std::thread([this] { work(); }).detach();
    }
    fn = f;
    ctx = c;
    lo = first;
    hi = end;
    iterations = count;
    step = stride;
    chunks = std::min<int64_t>(count, chunkCount);
    done.store(0, std::memory_order_relaxed);
    uint64_t generation = (generationOf(state.load()) + 1) & 0xffffffff;
    // seq_cst: against a worker going to sleep.
    state.store((generation << 32) | (uint64_t(chunks) << 16));
    if (sleepers.load() > 0) {
      std::lock_guard<std::mutex> lock(mutex);
      wake.notify_all();
    }
    claimChunks(generation);
    for (int spins = 0; done.load(std::memory_order_acquire) != chunks;)
      if (++spins < 1024)
        _mm_pause();
      else
        std::this_thread::yield();
  }
};

int nestThreads = 1;

Pool &pool() {
  static Pool *instance = new Pool();
  return *instance;
}

/// fn over [lo, hi), in chunks on step boundaries, on at most `threads`
/// threads of the pool with `chunksPerThread` chunks each; on the calling
/// thread alone where one thread (or one iteration) is all there is.
void share(Fn fn, void *ctx, int64_t lo, int64_t hi, int64_t step,
           int64_t threads, int64_t chunksPerThread) {
  if (hi <= lo)
    return;
  int64_t iterations = (hi - lo + step - 1) / step;
  threads = std::clamp<int64_t>(std::min(threads, iterations), 1, kMaxThreads);
  if (threads == 1) {
    fn(ctx, lo, hi);
    return;
  }
  pool().run(fn, ctx, lo, hi, iterations, step, int(threads),
             threads * chunksPerThread);
}

} // namespace

extern "C" {

void spmd_parallel_set_threads(int32_t threads) {
  nestThreads = std::clamp<int32_t>(threads, 1, kMaxThreads);
}

void spmd_parallel_for(void (*fn)(void *, int64_t, int64_t), void *ctx,
                       int64_t lo, int64_t hi, int64_t step) {
  share(fn, ctx, lo, hi, step, nestThreads, kChunksPerThread);
}

} // extern "C"

void spmdc::rt::parallelChunks(void (*fn)(void *, int64_t, int64_t), void *ctx,
                               int64_t count, int threads) {
  share(fn, ctx, 0, count, 1, threads, 1);
}
