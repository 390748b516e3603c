//===- AmxMatmul.cpp - bf16 GEMMs on AMX tiles ----------------------------===//
//
// C = A @ B in blocks of 32 x 32: four f32 tiles of C, two 16 x 32 tiles of
// A and two 32 x 16 tiles of B, the reduction walked 32 at a time. A tile of
// A is 16 rows of 32 consecutive k; a tile of B is VNNI: 16 rows of k pairs,
// each row the pair (k, k+1) of 16 columns. A row-major A is read where it
// lies (a block that runs past its rows or its k is copied, zero-padded);
// a transposed one is packed, as B always is, by 16 x 16 transposes of
// 32-bit pairs.
//
// One operand is packed once for the whole GEMM (the smaller), the other a
// chunk at a time by the thread that owns the chunk of C, so that it stays
// in the core's L2 while every block of the chunk reads it. The reduction
// goes in steps of up to kDepth; past one step, C's sums wait in f32.
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

// Named, so that a profile tells the kernels' time (bench/step_profile.py).
namespace amx {
namespace {

#define SPMDC_AMX_TARGET                                                       \
  __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,"         \
                        "avx512bf16")))

/// A block of C is kBlock x kBlock (2 x 2 tiles); the reduction advances
/// kBlock at a time (one tile row is 32 bf16, 64 bytes).
constexpr int64_t kBlock = 32;
/// Rows or columns of C a thread takes at a time: its packed operand,
/// kChunk x kDepth, stays in the core's L2.
constexpr int64_t kChunk = 256;
/// The reduction is walked kDepth at a time: a block of A and a panel of B
/// (kDepth x 32 each) stay in L2 while C's tiles are summed over them; past
/// it, C's partial sums are kept in f32 between the steps of k.
constexpr int64_t kDepth = 1024;

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
  /// Rows [row0, row0 + count) and columns [col0, col0 + width), clipped.
  Matrix part(int64_t row0, int64_t count, int64_t col0, int64_t width) const {
    return {data + row0 * rowStride + col0 * colStride,
            std::min(count, rows - row0), std::min(width, cols - col0),
            rowStride, colStride};
  }
};

/// Interleaves two vectors of 16 bf16, x and y, as 16 words (x[i], y[i]).
SPMDC_AMX_TARGET __m512i interleavePairs(__m256i x, __m256i y) {
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11,
                                         26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(
      order, _mm512_inserti64x4(_mm512_castsi256_si512(x), y, 1));
}

/// Transposes 16 x 16 32-bit words in place: word j of rows[i] becomes word
/// i of rows[j].
SPMDC_AMX_TARGET void transposeWords(__m512i rows[16]) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(rows[2 * i], rows[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(rows[2 * i], rows[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    rows[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    rows[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    rows[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    rows[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // Now each 128-bit lane holds its 4 x 4 block transposed; move the lanes.
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_i32x4(rows[i], rows[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_i32x4(rows[i], rows[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_i32x4(rows[i + 8], rows[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_i32x4(rows[i + 8], rows[i + 12], 0xdd);
  }
  for (int i = 0; i < 4; ++i) {
    rows[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
    rows[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
    rows[i + 4] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0x88);
    rows[i + 12] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0xdd);
  }
}

/// The first `count` (at most 16) lanes.
__mmask16 firstLanes(int64_t count) {
  return static_cast<__mmask16>(count >= 16 ? 0xffff : (1u << count) - 1);
}

/// A's rows as the tiles read them: row-major, kPadded per row, the rows
/// padded to whole blocks and the k past a.cols with zeros.
SPMDC_AMX_TARGET void packRows(const Matrix &a, int64_t kPadded,
                               uint16_t *out) {
  int64_t padded = roundUp(a.rows, kBlock);
  std::memset(out, 0, sizeof(uint16_t) * padded * kPadded);
  if (a.colStride == 1) {
    for (int64_t r = 0; r < a.rows; ++r)
      std::memcpy(out + r * kPadded, a.data + r * a.rowStride,
                  sizeof(uint16_t) * a.cols);
    return;
  }
  if (a.rowStride != 1) {
    for (int64_t r = 0; r < a.rows; ++r)
      for (int64_t k = 0; k < a.cols; ++k)
        out[r * kPadded + k] = a.at(r, k);
    return;
  }
  // Stored transposed: two stored rows (k and k + 1) give the pairs of 16
  // rows; 16 such, transposed, are 16 pairs of each of the 16 rows.
  auto *words = reinterpret_cast<__m512i *>(out);
  int64_t vectorsPerRow = kPadded / 32, pairs = (a.cols + 1) / 2;
  for (int64_t r = 0; r < a.rows; r += 16) {
    __mmask16 lanes = firstLanes(a.rows - r);
    for (int64_t p0 = 0; p0 < pairs; p0 += 16) {
      __m512i vectors[16];
      for (int64_t j = 0; j < 16; ++j) {
        int64_t k = 2 * (p0 + j);
        __m256i x =
            k < a.cols
                ? _mm256_maskz_loadu_epi16(lanes, a.data + k * a.colStride + r)
                : _mm256_setzero_si256();
        __m256i y = k + 1 < a.cols
                        ? _mm256_maskz_loadu_epi16(
                              lanes, a.data + (k + 1) * a.colStride + r)
                        : _mm256_setzero_si256();
        vectors[j] = interleavePairs(x, y);
      }
      transposeWords(vectors);
      for (int64_t i = 0; i < 16; ++i)
        _mm512_storeu_si512(words + (r + i) * vectorsPerRow + p0 / 16,
                            vectors[i]);
    }
  }
}

/// B's columns (k x n, all of b) as VNNI tiles, padded to whole blocks of
/// columns and to kPadded rows: tile t (16 columns) row p holds (2p, c) and
/// (2p + 1, c) for its columns c, at out[(t * kPadded / 2 + p) * 32 + 2c +
/// {0, 1}].
SPMDC_AMX_TARGET void packColumns(const Matrix &b, int64_t kPadded,
                                  uint16_t *out) {
  int64_t tiles = roundUp(b.cols, kBlock) / 16, pairs = kPadded / 2;
  // Row-major: two rows at a time, across all the tiles 16 columns wide, so
  // that each line of B is read once: (k, c) at 2c, (k + 1, c) at 2c + 1.
  int64_t wholeTiles = b.colStride == 1 ? b.cols / 16 : 0;
  for (int64_t p = 0; 2 * p + 1 < b.rows && wholeTiles; ++p) {
    const uint16_t *even = b.data + 2 * p * b.rowStride;
    const uint16_t *odd = even + b.rowStride;
    for (int64_t t = 0; t < wholeTiles; ++t)
      _mm512_storeu_si512(
          out + (t * pairs + p) * 32,
          interleavePairs(_mm256_loadu_si256(
                              reinterpret_cast<const __m256i *>(even + 16 * t)),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(
                              odd + 16 * t))));
  }
  for (int64_t t = 0; t < tiles; ++t) {
    uint16_t *tile = out + t * pairs * 32;
    int64_t first = 16 * t;
    int64_t width = std::clamp<int64_t>(b.cols - first, 0, 16);
    int64_t p = 0;
    if (t < wholeTiles) {
      p = b.rows / 2;
    } else if (b.rowStride == 1) {
      // Stored transposed: a pair (2p, 2p + 1) of a column is one 32-bit
      // word of its stored row; 16 words of 16 columns, transposed, are 16
      // rows of the tile.
      __m512i *rows = reinterpret_cast<__m512i *>(tile);
      int64_t words = b.rows / 2;
      for (int64_t q = 0; q < words; q += 16) {
        __mmask16 lanes = firstLanes(words - q);
        __m512i vectors[16];
        for (int64_t c = 0; c < 16; ++c)
          vectors[c] =
              c < width ? _mm512_maskz_loadu_epi32(
                              lanes, b.data + (first + c) * b.colStride + 2 * q)
                        : _mm512_setzero_si512();
        transposeWords(vectors);
        for (int64_t j = 0; j < std::min<int64_t>(16, words - q); ++j)
          _mm512_storeu_si512(rows + q + j, vectors[j]);
      }
      p = words;
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

/// One step of the reduction for a block of C: the block of A at `a` (32
/// rows of `depth`, row stride lda) @ the 32-column panel of packed B at
/// `panel`, added to the f32 sums at `partial` unless `first`. The sums go
/// back to `partial` unless `last`, when C[0:rows, 0:cols] (row stride ldc)
/// gets them rounded to bf16.
SPMDC_AMX_TARGET void multiplyBlock(const uint16_t *a, int64_t lda,
                                    const uint16_t *panel, int64_t depth,
                                    float *partial, bool first, bool last,
                                    uint16_t *c, int64_t ldc, int64_t rows,
                                    int64_t cols) {
  const uint16_t *a0 = a, *a1 = a + 16 * lda;
  const uint16_t *b0 = panel, *b1 = panel + depth / 2 * 32;
  constexpr int64_t kRowBytes = kBlock * sizeof(float);
  if (first) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  } else {
    _tile_loadd(0, partial, kRowBytes);
    _tile_loadd(1, partial + 16, kRowBytes);
    _tile_loadd(2, partial + 16 * kBlock, kRowBytes);
    _tile_loadd(3, partial + 16 * kBlock + 16, kRowBytes);
  }
  for (int64_t k = 0; k < depth; k += kBlock) {
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
  float *sums = last ? block : partial;
  _tile_stored(0, sums, kRowBytes);
  _tile_stored(1, sums + 16, kRowBytes);
  _tile_stored(2, sums + 16 * kBlock, kRowBytes);
  _tile_stored(3, sums + 16 * kBlock + 16, kRowBytes);
  if (!last)
    return;
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

/// A thread's buffers, kept between calls (a pool thread lives as long as
/// the rank), 64-byte aligned.
enum Scratch { kPackedScratch, kSumsScratch, kBlockScratch, kScratches };
template <typename T> T *scratch(Scratch which, size_t elements) {
  thread_local std::vector<char> buffers[kScratches];
  std::vector<char> &buffer = buffers[which];
  if (buffer.size() < elements * sizeof(T) + 64)
    buffer.resize(elements * sizeof(T) + 64);
  auto address = reinterpret_cast<uintptr_t>(buffer.data());
  return reinterpret_cast<T *>(roundUp(address, 64));
}

/// One GEMM C (m x n, row stride n) = A (m x k) @ B (k x n), C split in
/// chunks of columns (each thread packs B's for its own, A is shared) or
/// of rows (each packs A's, B is shared).
struct Gemm {
  Matrix a, b;
  uint16_t *c;
  bool byColumns;
  /// Whether A's blocks are read where they lie (row-major); else A is
  /// packed, whole or a chunk at a time.
  bool aInPlace;
  /// A packed whole (byColumns, !aInPlace) or B packed whole (!byColumns):
  /// step s of the reduction's panel p at sharedB + s * panels * 32 * kDepth
  /// + p * 32 * stepDepth(s).
  const uint16_t *sharedA = nullptr, *sharedB = nullptr;

  int64_t m() const { return a.rows; }
  int64_t n() const { return b.cols; }
  int64_t k() const { return a.cols; }
  int64_t kPadded() const { return roundUp(k(), kBlock); }
  int64_t steps() const { return (k() + kDepth - 1) / kDepth; }
  int64_t panels() const { return roundUp(n(), kBlock) / kBlock; }
  /// The reduction's step s: its first k, and its length in whole blocks.
  int64_t stepStart(int64_t s) const { return s * kDepth; }
  int64_t stepDepth(int64_t s) const {
    return roundUp(std::min(kDepth, k() - s * kDepth), kBlock);
  }

  /// The 32 x depth block of A at (row, k0) as the tiles read it: where it
  /// lies when that is whole, else copied, zero-padded, to a buffer.
  const uint16_t *blockOfA(const uint16_t *rows, int64_t lda, int64_t row,
                           int64_t rowCount, int64_t k0, int64_t depth,
                           int64_t *stride) const {
    if (row + kBlock <= rowCount && k0 + depth <= k()) {
      *stride = lda;
      return rows + row * lda + k0;
    }
    uint16_t *copy = scratch<uint16_t>(kBlockScratch, kBlock * depth);
    Matrix part{rows + row * lda + k0, std::min(kBlock, rowCount - row),
                std::min(depth, k() - k0), lda, 1};
    packRows(part, depth, copy);
    *stride = depth;
    return copy;
  }

  /// Columns [col0, col0 + count) of C: B's packed here, A shared.
  void columnChunk(int64_t col0, int64_t count) const {
    int64_t chunkPanels = roundUp(count, kBlock) / kBlock;
    int64_t rowBlocks = roundUp(m(), kBlock) / kBlock;
    uint16_t *panels =
        scratch<uint16_t>(kPackedScratch, chunkPanels * kBlock * kDepth);
    float *sums = steps() > 1
                      ? scratch<float>(kSumsScratch, rowBlocks * chunkPanels *
                                                         kBlock * kBlock)
                      : nullptr;
    const uint16_t *rows = aInPlace ? a.data : sharedA;
    int64_t lda = aInPlace ? a.rowStride : kPadded();
    int64_t rowCount = aInPlace ? m() : roundUp(m(), kBlock);
    for (int64_t s = 0; s < steps(); ++s) {
      int64_t k0 = stepStart(s), depth = stepDepth(s);
      packColumns(b.part(k0, kDepth, col0, count), depth, panels);
      for (int64_t rb = 0; rb < rowBlocks; ++rb) {
        int64_t stride;
        const uint16_t *block =
            blockOfA(rows, lda, rb * kBlock, rowCount, k0, depth, &stride);
        for (int64_t p = 0; p < chunkPanels; ++p)
          multiplyBlock(block, stride, panels + p * kBlock * depth, depth,
                        sums ? sums + (rb * chunkPanels + p) * kBlock * kBlock
                             : nullptr,
                        s == 0, s == steps() - 1,
                        c + rb * kBlock * n() + col0 + p * kBlock, n(),
                        std::min(kBlock, m() - rb * kBlock),
                        std::min(kBlock, count - p * kBlock));
      }
    }
  }

  /// Rows [row0, row0 + count) of C: A's packed here unless read in place,
  /// B shared.
  void rowChunk(int64_t row0, int64_t count) const {
    const uint16_t *rows = a.data + row0 * a.rowStride;
    int64_t lda = a.rowStride, rowCount = count;
    if (!aInPlace) {
      uint16_t *packed =
          scratch<uint16_t>(kPackedScratch, roundUp(count, kBlock) * kPadded());
      packRows(a.part(row0, count, 0, k()), kPadded(), packed);
      rows = packed;
      lda = kPadded();
      rowCount = roundUp(count, kBlock);
    }
    int64_t rowBlocks = roundUp(count, kBlock) / kBlock;
    float *sums = steps() > 1
                      ? scratch<float>(kSumsScratch,
                                       rowBlocks * panels() * kBlock * kBlock)
                      : nullptr;
    for (int64_t s = 0; s < steps(); ++s) {
      int64_t k0 = stepStart(s), depth = stepDepth(s);
      for (int64_t p = 0; p < panels(); ++p) {
        const uint16_t *panel =
            sharedB + s * panels() * kBlock * kDepth + p * kBlock * depth;
        for (int64_t rb = 0; rb < rowBlocks; ++rb) {
          int64_t stride;
          const uint16_t *block =
              blockOfA(rows, lda, rb * kBlock, rowCount, k0, depth, &stride);
          multiplyBlock(block, stride, panel, depth,
                        sums ? sums + (rb * panels() + p) * kBlock * kBlock
                             : nullptr,
                        s == 0, s == steps() - 1,
                        c + (row0 + rb * kBlock) * n() + p * kBlock, n(),
                        std::min(kBlock, count - rb * kBlock),
                        std::min(kBlock, n() - p * kBlock));
        }
      }
    }
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

/// The shared operand of `gemm` packed into `storage`, on `threads`: A
/// whole (unless read in place), or B's panels for every step of k.
void packShared(Gemm &gemm, std::vector<uint16_t> &storage, int threads) {
  if (gemm.byColumns) {
    if (gemm.aInPlace)
      return;
    int64_t rows = roundUp(gemm.m(), kBlock), kPadded = gemm.kPadded();
    storage.resize(rows * kPadded + 32);
    uint16_t *packed = storage.data();
    onThreads(rows / kBlock, threads, [&](int64_t lo, int64_t hi) {
      packRows(gemm.a.part(lo * kBlock, (hi - lo) * kBlock, 0, gemm.k()),
               kPadded, packed + lo * kBlock * kPadded);
    });
    gemm.sharedA = packed;
    return;
  }
  int64_t panels = gemm.panels(), steps = gemm.steps();
  storage.resize(steps * panels * kBlock * kDepth + 32);
  uint16_t *packed = storage.data();
  onThreads(panels, threads, [&](int64_t lo, int64_t hi) {
    for (int64_t s = 0; s < steps; ++s)
      packColumns(gemm.b.part(gemm.stepStart(s), kDepth, lo * kBlock,
                              (hi - lo) * kBlock),
                  gemm.stepDepth(s),
                  packed + s * panels * kBlock * kDepth +
                      lo * kBlock * gemm.stepDepth(s));
  });
  gemm.sharedB = packed;
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
  Gemm gemm{a, b, c};
  gemm.aInPlace = a.colStride == 1;
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
} // namespace amx

using namespace amx;

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
