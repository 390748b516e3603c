//===- AmxMatmul.cpp - bf16 GEMMs on AMX tiles ----------------------------===//
//
// C = A @ B in blocks of 32 x 32: four f32 tiles of C, two 16 x 32 tiles of
// A and two 32 x 16 tiles of B, the reduction walked 32 at a time. A tile of
// A is 16 rows of 32 consecutive k; a tile of B is VNNI: 16 rows of k pairs,
// each row the pair (k, k+1) of 16 columns. A is read where it lies when it
// is row-major and whole blocks; otherwise it is packed, as B always is,
// zero-padded to whole blocks.
//
// One operand is packed once for the whole GEMM (the smaller), the other a
// chunk at a time by the thread that owns the chunk of C, so that it stays
// in the core's L2 while every block of the chunk reads it.
//
// Only the kernels carry AMX and AVX-512 target attributes; the rest of the
// file runs on any x86-64, and nothing calls a kernel unless
// amxBf16Available().
//
//===----------------------------------------------------------------------===//

#include "AmxMatmul.h"

#include "spmdc/Runtime/ParallelFor.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__linux__)
#define SPMDC_AMX 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace spmdc::rt {

#ifdef SPMDC_AMX

namespace {

#define SPMDC_AMX_TARGET                                                       \
  __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,"         \
                        "avx512bf16")))

/// A block of C is kBlock x kBlock (2 x 2 tiles); the reduction advances
/// kBlock at a time (one tile row is 32 bf16, 64 bytes).
constexpr int64_t kBlock = 32;
/// Rows or columns of C a thread takes at a time: its packed operand,
/// kChunk x k, stays in the core's L2.
constexpr int64_t kChunk = 256;

int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/// A matrix of bf16: element (i, j) at data[i * rowStride + j * colStride].
struct Matrix {
  const uint16_t *data;
  int64_t rows, cols, rowStride, colStride;
  uint16_t at(int64_t i, int64_t j) const {
    return data[i * rowStride + j * colStride];
  }
};

/// Rows [row0, row0 + count) of A, padded to whole blocks of rows and of k,
/// row-major: out[r * kPadded + k].
void packRows(const Matrix &a, int64_t row0, int64_t count, int64_t kPadded,
              uint16_t *out) {
  int64_t padded = roundUp(count, kBlock);
  std::memset(out, 0, sizeof(uint16_t) * padded * kPadded);
  int64_t rows = std::min(count, a.rows - row0);
  if (a.colStride == 1) {
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(out + r * kPadded, a.data + (row0 + r) * a.rowStride,
                  sizeof(uint16_t) * a.cols);
    return;
  }
  // Stored transposed: walk its rows (our k), which are contiguous.
  for (int64_t k = 0; k < a.cols; ++k)
    for (int64_t r = 0; r < rows; ++r)
      out[r * kPadded + k] = a.at(row0 + r, k);
}

/// Columns [col0, col0 + count) of B (k x n), padded to whole blocks, as
/// VNNI tiles: tile t (16 columns) row p holds (2p, c) and (2p + 1, c) for
/// its 16 columns c, at out[(t * kPadded / 2 + p) * 32 + 2 * c + {0, 1}].
SPMDC_AMX_TARGET void packColumns(const Matrix &b, int64_t col0, int64_t count,
                                  int64_t kPadded, uint16_t *out) {
  int64_t tiles = roundUp(count, kBlock) / 16, pairs = kPadded / 2;
  for (int64_t t = 0; t < tiles; ++t) {
    uint16_t *tile = out + t * pairs * 32;
    int64_t first = col0 + 16 * t;
    int64_t width = std::clamp<int64_t>(b.cols - first, 0, 16);
    int64_t p = 0;
    if (b.colStride == 1 && width == 16) {
      // Two rows of 16 interleaved: (k, c) at 2c, (k + 1, c) at 2c + 1.
      const __m512i interleave = _mm512_set_epi16(
          31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
          22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
      for (; 2 * p + 1 < b.rows; ++p) {
        __m256i even = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(
                    b.data + 2 * p * b.rowStride + first)),
                odd = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(
                    b.data + (2 * p + 1) * b.rowStride + first));
        __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(even), odd, 1);
        _mm512_storeu_si512(tile + p * 32,
                            _mm512_permutexvar_epi16(interleave, both));
      }
    } else if (b.rowStride == 1 && b.rows % 2 == 0) {
      // Stored transposed: a pair (2p, 2p + 1) of a column is one 32-bit
      // word of its stored row.
      auto *words = reinterpret_cast<uint32_t *>(tile);
      for (int64_t c = 0; c < width; ++c) {
        const uint16_t *column = b.data + (first + c) * b.colStride;
        for (int64_t q = 0; q < b.rows / 2; ++q) {
          uint32_t pair;
          std::memcpy(&pair, column + 2 * q, sizeof pair);
          words[q * 16 + c] = pair;
        }
      }
      for (int64_t c = width; c < 16; ++c)
        for (int64_t q = 0; q < b.rows / 2; ++q)
          words[q * 16 + c] = 0;
      p = b.rows / 2;
    }
    for (; p < pairs; ++p)
      for (int64_t c = 0; c < 16; ++c)
        for (int64_t e = 0; e < 2; ++e) {
          int64_t k = 2 * p + e;
          tile[p * 32 + 2 * c + e] =
              k < b.rows && c < width ? b.at(k, first + c) : 0;
        }
  }
}

/// The tiles' shapes, loaded on each thread before it uses them: eight of
/// 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1, startRow = 0, reserved[14] = {};
  uint16_t bytesPerRow[16] = {};
  uint8_t rows[16] = {};
  TileConfig() {
    for (int t = 0; t < 8; ++t) {
      bytesPerRow[t] = 64;
      rows[t] = 16;
    }
  }
};

/// C[0:rows, 0:cols] (row stride ldc) = the block of A at `a` (32 rows of
/// kPadded, row stride lda) @ the 32-column panel of packed B at `panel`.
SPMDC_AMX_TARGET void multiplyBlock(const uint16_t *a, int64_t lda,
                                    const uint16_t *panel, int64_t kPadded,
                                    uint16_t *c, int64_t ldc, int64_t rows,
                                    int64_t cols) {
  const uint16_t *a0 = a, *a1 = a + 16 * lda;
  const uint16_t *b0 = panel, *b1 = panel + kPadded / 2 * 32;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t k = 0; k < kPadded; k += kBlock) {
    _tile_loadd(4, a0 + k, lda * 2);
    _tile_loadd(5, a1 + k, lda * 2);
    _tile_loadd(6, b0 + k * 16, 64);
    _tile_loadd(7, b1 + k * 16, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float block[kBlock * kBlock];
  _tile_stored(0, block, kBlock * 4);
  _tile_stored(1, block + 16, kBlock * 4);
  _tile_stored(2, block + 16 * kBlock, kBlock * 4);
  _tile_stored(3, block + 16 * kBlock + 16, kBlock * 4);
  __mmask32 columns = cols >= 32 ? ~0u : (1u << cols) - 1;
  for (int64_t r = 0; r < rows; ++r) {
    __m512bh row = _mm512_cvtne2ps_pbh(_mm512_load_ps(block + r * kBlock + 16),
                                       _mm512_load_ps(block + r * kBlock));
    _mm512_mask_storeu_epi16(c + r * ldc, columns, (__m512i)row);
  }
}

SPMDC_AMX_TARGET void loadTiles() {
  static const TileConfig config;
  _tile_loadconfig(&config);
}

SPMDC_AMX_TARGET void releaseTiles() { _tile_release(); }

/// A thread's packing buffer, kept between calls (a pool thread lives as
/// long as the rank).
uint16_t *scratch(size_t elements) {
  thread_local std::vector<uint16_t> buffer;
  if (buffer.size() < elements + 32)
    buffer.resize(elements + 32);
  auto address = reinterpret_cast<uintptr_t>(buffer.data());
  return buffer.data() + (roundUp(address, 64) - address) / 2;
}

/// One GEMM C (m x n, row stride n) = A (m x k) @ B (k x n).
struct Gemm {
  Matrix a, b;
  uint16_t *c;
  int64_t kPadded;
  /// The operand packed once, or A where it is read in place.
  const uint16_t *shared = nullptr;
  int64_t sharedStride = 0;
  /// Chunks of C's columns (each thread packs B's) or of its rows.
  bool byColumns = true;

  int64_t m() const { return a.rows; }
  int64_t n() const { return b.cols; }

  /// Columns [col0, col0 + count) of C, B's packed here, A shared.
  void columnChunk(int64_t col0, int64_t count) const {
    uint16_t *panels = scratch(roundUp(count, kBlock) * kPadded);
    packColumns(b, col0, count, kPadded, panels);
    for (int64_t row = 0; row < m(); row += kBlock)
      for (int64_t col = 0; col < count; col += kBlock)
        multiplyBlock(
            shared + row * sharedStride, sharedStride, panels + col * kPadded,
            kPadded, c + row * n() + col0 + col, n(),
            std::min(kBlock, m() - row), std::min(kBlock, count - col));
  }

  /// Rows [row0, row0 + count) of C, A's packed here, B shared.
  void rowChunk(int64_t row0, int64_t count) const {
    const uint16_t *rows = a.data + row0 * a.rowStride;
    int64_t lda = a.rowStride;
    if (!readsAInPlace() || count % kBlock) {
      uint16_t *packed = scratch(roundUp(count, kBlock) * kPadded);
      packRows(a, row0, count, kPadded, packed);
      rows = packed;
      lda = kPadded;
    }
    for (int64_t col = 0; col < n(); col += kBlock)
      for (int64_t row = 0; row < count; row += kBlock)
        multiplyBlock(rows + row * lda, lda, shared + col * kPadded, kPadded,
                      c + (row0 + row) * n() + col, n(),
                      std::min(kBlock, count - row),
                      std::min(kBlock, n() - col));
  }

  /// Whether A's blocks can be loaded where they lie.
  bool readsAInPlace() const {
    return a.colStride == 1 && a.cols % kBlock == 0;
  }
};

/// Runs `body(lo, hi)` over [0, count) on up to `threads` threads, each with
/// the tiles loaded.
template <typename Body>
void onThreads(int64_t count, int threads, const Body &body) {
  auto run = [](void *context, int64_t lo, int64_t hi) {
    loadTiles();
    (*static_cast<const Body *>(context))(lo, hi);
    releaseTiles();
  };
  if (threads <= 1 || count <= 1) {
    run(const_cast<Body *>(&body), 0, count);
    return;
  }
  parallelChunks(run, const_cast<Body *>(&body), count, threads);
}

/// The shared operand of `gemm` packed (or A taken in place), on `threads`.
void packShared(Gemm &gemm, std::vector<uint16_t> &storage, int threads) {
  if (gemm.byColumns) {
    if (gemm.readsAInPlace() && gemm.m() % kBlock == 0) {
      gemm.shared = gemm.a.data;
      gemm.sharedStride = gemm.a.rowStride;
      return;
    }
    int64_t rows = roundUp(gemm.m(), kBlock);
    storage.resize(rows * gemm.kPadded + 32);
    uint16_t *packed = storage.data();
    int64_t blocks = rows / kBlock;
    onThreads(blocks, threads, [&](int64_t lo, int64_t hi) {
      packRows(gemm.a, lo * kBlock, (hi - lo) * kBlock, gemm.kPadded,
               packed + lo * kBlock * gemm.kPadded);
    });
    gemm.shared = packed;
    gemm.sharedStride = gemm.kPadded;
    return;
  }
  int64_t cols = roundUp(gemm.n(), kBlock);
  storage.resize(cols * gemm.kPadded + 32);
  uint16_t *packed = storage.data();
  onThreads(cols / kBlock, threads, [&](int64_t lo, int64_t hi) {
    packColumns(gemm.b, lo * kBlock, (hi - lo) * kBlock, gemm.kPadded,
                packed + lo * kBlock * gemm.kPadded);
  });
  gemm.shared = packed;
}

/// The size of the chunks that share `extent` rows or columns out among
/// `threads` evenly: whole blocks, at most kChunk unless that leaves a
/// thread with one chunk more than another.
int64_t chunkSize(int64_t extent, int threads) {
  int64_t chunks = std::max<int64_t>(threads, (extent + kChunk - 1) / kChunk);
  chunks = roundUp(chunks, threads);
  return roundUp((extent + chunks - 1) / chunks, kBlock);
}

/// One GEMM on up to `threads` threads.
void multiply(Matrix a, Matrix b, uint16_t *c, int threads) {
  Gemm gemm{a, b, c, roundUp(a.cols, kBlock)};
  // The larger operand is packed a chunk at a time, by the thread that
  // owns that chunk of C; the smaller once, for all.
  gemm.byColumns = b.cols >= a.rows;
  // The shared copy lives for this call only; a static one would be
  // another buffer the size of the largest operand for the whole run.
  std::vector<uint16_t> storage;
  packShared(gemm, storage, threads);
  int64_t extent = gemm.byColumns ? gemm.n() : gemm.m();
  int64_t size = chunkSize(extent, threads);
  onThreads((extent + size - 1) / size, threads, [&](int64_t lo, int64_t hi) {
    for (int64_t chunk = lo; chunk < hi; ++chunk) {
      int64_t first = chunk * size, count = std::min(size, extent - first);
      if (gemm.byColumns)
        gemm.columnChunk(first, count);
      else
        gemm.rowChunk(first, count);
    }
  });
}

bool tilesPermitted() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
    return false;
  bool amxTile = edx & (1u << 24), amxBf16 = edx & (1u << 22),
       avx512bw = ebx & (1u << 30);
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx))
    return false;
  bool avx512Bf16 = eax & (1u << 5);
  if (!amxTile || !amxBf16 || !avx512bw || !avx512Bf16)
    return false;
  // Linux hands out the tiles' state only to a process that asks
  // (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA).
  constexpr int kRequestPermission = 0x1023, kTileData = 18;
  return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
}

} // namespace

bool amxBf16Available() {
  static const bool available = tilesPermitted();
  return available;
}

bool amxMatmulBf16(const MatmulBatches &batches, const uint16_t *a,
                   const uint16_t *b, uint16_t *c, int threads) {
  if (!amxBf16Available())
    return false;
  int64_t m = batches.m, n = batches.n, k = batches.k;
  auto matrixA = [&](const uint16_t *data, int64_t rows) {
    return batches.transposeA ? Matrix{data, rows, k, 1, rows}
                              : Matrix{data, rows, k, k, 1};
  };
  auto matrixB = [&](const uint16_t *data) {
    return batches.transposeB ? Matrix{data, k, n, 1, k}
                              : Matrix{data, k, n, n, 1};
  };
  if (batches.aFull && batches.bShared && !batches.transposeA) {
    // x @ W over a batch: one GEMM over all its rows.
    multiply(matrixA(a, batches.count() * m), matrixB(b), c, threads);
    return true;
  }
  if (batches.count() == 1) {
    multiply(matrixA(a, m), matrixB(b), c, threads);
    return true;
  }
  // Many matrices (attention's heads): one thread each.
  onThreads(batches.count(), threads, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      multiply(matrixA(a + batches.aMatrix[i] * m * k, m),
               matrixB(b + batches.bMatrix[i] * k * n), c + i * m * n, 1);
  });
  return true;
}

#else // !SPMDC_AMX

bool amxBf16Available() { return false; }
bool amxMatmulBf16(const MatmulBatches &, const uint16_t *, const uint16_t *,
                   uint16_t *, int) {
  return false;
}

#endif // SPMDC_AMX

} // namespace spmdc::rt
