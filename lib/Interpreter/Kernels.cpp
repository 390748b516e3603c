//===- Kernels.cpp - reference tensor kernels of the interpreter ----------===//
//
// Straightforward f64 implementations of the kernels declared in Kernels.h,
// following PyTorch semantics. They are the oracle compiled code is checked
// against, so they favour clarity over speed; only matmul is arranged for
// cache-friendliness (i-k-j order) since it dominates interpreter run time.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Interpreter/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

using namespace spmdc::interp;

namespace {

/// Aborts with a message. Used instead of assert so that a malformed program
/// (e.g. an out-of-range index) stops the oracle in release builds too,
/// rather than reading out of bounds.
[[noreturn]] void fatal(const char *msg) {
  std::fprintf(stderr, "spmdc interpreter kernel error: %s\n", msg);
  std::abort();
}

void check(bool cond, const char *msg) {
  if (!cond)
    fatal(msg);
}

/// Offsets, in row-major order over `shape`, of an element addressed with
/// per-dimension `strides` (which may be 0 for broadcast or collapsed dims).
std::vector<int64_t> stridedOffsets(const Shape &shape,
                                    const std::vector<int64_t> &strides) {
  int64_t n = numElements(shape);
  int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> offsets(n);
  std::vector<int64_t> idx(rank, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    offsets[i] = off;
    // Odometer increment of the multi-index, keeping `off` in sync.
    for (int64_t d = rank - 1; d >= 0; --d) {
      off += strides[d];
      if (++idx[d] < shape[d])
        break;
      off -= strides[d] * shape[d];
      idx[d] = 0;
    }
  }
  return offsets;
}

/// Strides that read a tensor of shape `from` as if broadcast to `to`:
/// missing leading dims and size-1 dims get stride 0.
std::vector<int64_t> broadcastStrides(const Shape &from, const Shape &to) {
  std::vector<int64_t> strides(to.size(), 0);
  std::vector<int64_t> fromStrides = stridesOf(from);
  size_t lead = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1)
      strides[lead + d] = fromStrides[d];
  return strides;
}

/// For each element of `to` (row-major), its offset in a tensor of `from`.
std::vector<int64_t> broadcastOffsets(const Shape &from, const Shape &to) {
  check(from.size() <= to.size(), "broadcast to a lower rank");
  return stridedOffsets(to, broadcastStrides(from, to));
}

/// Sizes of the dims before, at, and after `dim`.
struct Split {
  int64_t outer = 1, size = 1, inner = 1;
};

Split splitAt(const Shape &shape, int64_t dim) {
  check(dim >= 0 && dim < static_cast<int64_t>(shape.size()),
        "dimension out of range");
  Split s;
  for (int64_t d = 0; d < dim; ++d)
    s.outer *= shape[d];
  s.size = shape[dim];
  for (size_t d = dim + 1; d < shape.size(); ++d)
    s.inner *= shape[d];
  return s;
}

/// An integral-valued double used as an index, checked against [0, bound).
int64_t toIndex(double v, int64_t bound, const char *what) {
  if (!(v >= 0 && v < static_cast<double>(bound)) || v != std::floor(v))
    fatal(what);
  return static_cast<int64_t>(v);
}

/// Element count of the trailing dims `trailing` of `x`, after checking that
/// they match; each row of that many contiguous elements is normalized alone.
int64_t trailingCount(const Shape &x, const Shape &trailing) {
  check(trailing.size() <= x.size(), "normalized shape has too many dims");
  size_t lead = x.size() - trailing.size();
  for (size_t d = 0; d < trailing.size(); ++d)
    check(x[lead + d] == trailing[d], "normalized shape mismatch");
  return numElements(trailing);
}

} // namespace

//===--- Tensor and shapes ------------------------------------------------===//

Tensor::Tensor(Shape shape, double fill)
    : shape(std::move(shape)), data(numElements(this->shape), fill) {}

Tensor::Tensor(Shape shape, std::vector<double> data)
    : shape(std::move(shape)), data(std::move(data)) {
  check(numElements(this->shape) == numel(), "data size does not match shape");
}

int64_t spmdc::interp::numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<int64_t> spmdc::interp::stridesOf(const Shape &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

Shape spmdc::interp::broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Right-aligned: dims missing on the left act as 1.
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

//===--- Elementwise ------------------------------------------------------===//

Tensor spmdc::interp::map(const Tensor &x,
                          const std::function<double(double)> &fn) {
  Tensor out(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    out.data[i] = fn(x.data[i]);
  return out;
}

Tensor spmdc::interp::zip(const Tensor &a, const Tensor &b,
                          const std::function<double(double, double)> &fn) {
  Tensor out(broadcastShapes(a.shape, b.shape));
  std::vector<int64_t> aOff = broadcastOffsets(a.shape, out.shape);
  std::vector<int64_t> bOff = broadcastOffsets(b.shape, out.shape);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[i] = fn(a.data[aOff[i]], b.data[bOff[i]]);
  return out;
}

Tensor spmdc::interp::select(const Tensor &cond, const Tensor &onTrue,
                             const Tensor &onFalse) {
  Tensor out(broadcastShapes(cond.shape,
                             broadcastShapes(onTrue.shape, onFalse.shape)));
  std::vector<int64_t> cOff = broadcastOffsets(cond.shape, out.shape);
  std::vector<int64_t> tOff = broadcastOffsets(onTrue.shape, out.shape);
  std::vector<int64_t> fOff = broadcastOffsets(onFalse.shape, out.shape);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[i] = cond.data[cOff[i]] != 0 ? onTrue.data[tOff[i]]
                                          : onFalse.data[fOff[i]];
  return out;
}

Tensor spmdc::interp::broadcastTo(const Tensor &x, const Shape &shape) {
  Tensor out(shape);
  std::vector<int64_t> off = broadcastOffsets(x.shape, shape);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[i] = x.data[off[i]];
  return out;
}

//===--- Reductions -------------------------------------------------------===//

Tensor spmdc::interp::reduce(const Tensor &x, const std::vector<int64_t> &dims,
                             bool keepDim, ReduceKind kind) {
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t d : dims) {
    check(d >= 0 && d < x.rank(), "reduction dim out of range");
    reduced[d] = true;
  }
  // Compute in the keepdim layout; dropping size-1 dims leaves the data as is.
  Shape keptShape = x.shape;
  int64_t count = 1;
  for (size_t d = 0; d < keptShape.size(); ++d)
    if (reduced[d]) {
      count *= keptShape[d];
      keptShape[d] = 1;
    }
  std::vector<int64_t> strides = stridesOf(keptShape);
  for (size_t d = 0; d < strides.size(); ++d)
    if (reduced[d])
      strides[d] = 0;

  double init =
      kind == ReduceKind::Max ? -std::numeric_limits<double>::infinity() : 0.0;
  Tensor out(keptShape, init);
  std::vector<int64_t> outOff = stridedOffsets(x.shape, strides);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double &acc = out.data[outOff[i]];
    double v = x.data[i];
    if (kind == ReduceKind::Max) {
      // Like torch.max, a NaN wins and then sticks.
      if (std::isnan(v) || v > acc)
        acc = v;
    } else {
      acc += v;
    }
  }
  if (kind == ReduceKind::Mean)
    for (double &v : out.data)
      v /= static_cast<double>(count);

  if (!keepDim) {
    Shape dropped;
    for (size_t d = 0; d < keptShape.size(); ++d)
      if (!reduced[d])
        dropped.push_back(keptShape[d]);
    out.shape = std::move(dropped);
  }
  return out;
}

//===--- Linear algebra and data movement ---------------------------------===//

Tensor spmdc::interp::matmul(const Tensor &a, const Tensor &b) {
  check(a.rank() >= 2 && b.rank() >= 2, "matmul operands need rank >= 2");
  int64_t m = a.shape[a.rank() - 2], k = a.shape[a.rank() - 1];
  int64_t n = b.shape[b.rank() - 1];
  check(b.shape[b.rank() - 2] == k, "matmul contraction sizes differ");

  Shape aBatch(a.shape.begin(), a.shape.end() - 2);
  Shape bBatch(b.shape.begin(), b.shape.end() - 2);
  Shape batch = broadcastShapes(aBatch, bBatch);
  // Offsets in units of whole matrices.
  std::vector<int64_t> aOff = broadcastOffsets(aBatch, batch);
  std::vector<int64_t> bOff = broadcastOffsets(bBatch, batch);

  Shape outShape = batch;
  outShape.push_back(m);
  outShape.push_back(n);
  Tensor out(outShape);
  for (size_t bi = 0; bi < aOff.size(); ++bi) {
    const double *A = a.data.data() + aOff[bi] * m * k;
    const double *B = b.data.data() + bOff[bi] * k * n;
    double *C = out.data.data() + static_cast<int64_t>(bi) * m * n;
    // i-k-j order: the inner loop walks rows of B and C contiguously.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) {
        double aip = A[i * k + p];
        const double *bRow = B + p * n;
        double *cRow = C + i * n;
        for (int64_t j = 0; j < n; ++j)
          cRow[j] += aip * bRow[j];
      }
  }
  return out;
}

Tensor spmdc::interp::transpose(const Tensor &x,
                                const std::vector<int64_t> &perm) {
  check(static_cast<int64_t>(perm.size()) == x.rank(),
        "permutation length differs from rank");
  std::vector<int64_t> xStrides = stridesOf(x.shape);
  Shape outShape(perm.size());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    check(perm[i] >= 0 && perm[i] < x.rank(), "permutation entry out of range");
    outShape[i] = x.shape[perm[i]];
    strides[i] = xStrides[perm[i]];
  }
  Tensor out(outShape);
  std::vector<int64_t> off = stridedOffsets(outShape, strides);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[i] = x.data[off[i]];
  return out;
}

Tensor spmdc::interp::reshape(const Tensor &x, const Shape &shape) {
  return Tensor(shape, x.data);
}

Tensor spmdc::interp::slice(const Tensor &x, int64_t dim, int64_t start,
                            int64_t end, int64_t step) {
  check(step >= 1, "slice step must be positive");
  Split s = splitAt(x.shape, dim);
  // Python-style bounds: negative values count from the end, then clamp.
  if (start < 0)
    start += s.size;
  if (end < 0)
    end += s.size;
  start = std::clamp<int64_t>(start, 0, s.size);
  end = std::clamp<int64_t>(end, start, s.size);
  int64_t count = (end - start + step - 1) / step;

  Shape outShape = x.shape;
  outShape[dim] = count;
  Tensor out(outShape);
  double *dst = out.data.data();
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t j = 0; j < count; ++j) {
      const double *src =
          x.data.data() + (o * s.size + start + j * step) * s.inner;
      dst = std::copy(src, src + s.inner, dst);
    }
  return out;
}

Tensor spmdc::interp::concat(const std::vector<Tensor> &xs, int64_t dim) {
  check(!xs.empty(), "concat of no tensors");
  Shape outShape = xs.front().shape;
  check(dim >= 0 && dim < static_cast<int64_t>(outShape.size()),
        "concat dim out of range");
  outShape[dim] = 0;
  for (const Tensor &x : xs) {
    check(x.rank() == static_cast<int64_t>(outShape.size()),
          "concat operands differ in rank");
    outShape[dim] += x.shape[dim];
  }
  Tensor out(outShape);
  int64_t outer = splitAt(outShape, dim).outer;
  double *dst = out.data.data();
  // Each outer index takes one contiguous block from every operand in turn.
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor &x : xs) {
      Split s = splitAt(x.shape, dim);
      const double *src = x.data.data() + o * s.size * s.inner;
      dst = std::copy(src, src + s.size * s.inner, dst);
    }
  return out;
}

Tensor spmdc::interp::embedding(const Tensor &weight, const Tensor &indices) {
  check(weight.rank() == 2, "embedding weight must be [V, D]");
  int64_t numRows = weight.shape[0], width = weight.shape[1];
  Shape outShape = indices.shape;
  outShape.push_back(width);
  Tensor out(outShape);
  for (int64_t i = 0; i < indices.numel(); ++i) {
    int64_t row =
        toIndex(indices.data[i], numRows, "embedding index out of range");
    std::copy_n(weight.data.begin() + row * width, width,
                out.data.begin() + i * width);
  }
  return out;
}

Tensor spmdc::interp::embeddingBackward(const Tensor &grad,
                                        const Tensor &indices,
                                        int64_t numRows) {
  check(grad.rank() == indices.rank() + 1, "embedding grad rank mismatch");
  int64_t width = grad.shape.back();
  Tensor out({numRows, width});
  for (int64_t i = 0; i < indices.numel(); ++i) {
    int64_t row =
        toIndex(indices.data[i], numRows, "embedding index out of range");
    for (int64_t j = 0; j < width; ++j)
      out.data[row * width + j] += grad.data[i * width + j];
  }
  return out;
}

Tensor spmdc::interp::gather(const Tensor &x, const Tensor &index,
                             int64_t dim) {
  check(index.rank() == x.rank(), "gather index rank differs from input");
  check(dim >= 0 && dim < x.rank(), "gather dim out of range");
  for (int64_t d = 0; d < x.rank(); ++d)
    check(d == dim || index.shape[d] <= x.shape[d],
          "gather index larger than input");
  // Address x with index's coordinates, except along dim where the index
  // value is used instead.
  std::vector<int64_t> strides = stridesOf(x.shape);
  int64_t dimStride = strides[dim];
  strides[dim] = 0;
  std::vector<int64_t> base = stridedOffsets(index.shape, strides);
  Tensor out(index.shape);
  for (int64_t i = 0; i < index.numel(); ++i) {
    int64_t at =
        toIndex(index.data[i], x.shape[dim], "gather index out of range");
    out.data[i] = x.data[base[i] + at * dimStride];
  }
  return out;
}

Tensor spmdc::interp::scatterAdd(const Tensor &index, const Tensor &source,
                                 int64_t dim, const Shape &shape) {
  int64_t rank = static_cast<int64_t>(shape.size());
  check(index.rank() == rank && source.rank() == rank,
        "scatterAdd operand ranks differ");
  check(dim >= 0 && dim < rank, "scatterAdd dim out of range");
  for (int64_t d = 0; d < rank; ++d)
    check(index.shape[d] <= source.shape[d] &&
              (d == dim || index.shape[d] <= shape[d]),
          "scatterAdd index larger than source or result");
  std::vector<int64_t> strides = stridesOf(shape);
  int64_t dimStride = strides[dim];
  strides[dim] = 0;
  std::vector<int64_t> base = stridedOffsets(index.shape, strides);
  // Source may be larger than index (as in torch); read it at index coords.
  std::vector<int64_t> srcOff =
      stridedOffsets(index.shape, stridesOf(source.shape));
  Tensor out(shape);
  for (int64_t i = 0; i < index.numel(); ++i) {
    int64_t at =
        toIndex(index.data[i], shape[dim], "scatterAdd index out of range");
    out.data[base[i] + at * dimStride] += source.data[srcOff[i]];
  }
  return out;
}

//===--- Factories --------------------------------------------------------===//

Tensor spmdc::interp::iota(const Shape &shape, int64_t dim) {
  Split s = splitAt(shape, dim);
  Tensor out(shape);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[i] = static_cast<double>((i / s.inner) % s.size);
  return out;
}

double spmdc::interp::uniformBits(uint64_t seed, uint64_t index) {
  // splitmix64 finalizer; unsigned arithmetic wraps modulo 2^64 by design.
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + index + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

Tensor spmdc::interp::randUniform(const Shape &shape, int64_t seed) {
  Tensor out(shape);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[i] =
        uniformBits(static_cast<uint64_t>(seed), static_cast<uint64_t>(i));
  return out;
}

//===--- Composites -------------------------------------------------------===//

Tensor spmdc::interp::softmax(const Tensor &x, int64_t dim) {
  Split s = splitAt(x.shape, dim);
  Tensor out(x.shape);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      const double *src = x.data.data() + o * s.size * s.inner + in;
      double *dst = out.data.data() + o * s.size * s.inner + in;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < s.size; ++j)
        mx = std::max(mx, src[j * s.inner]);
      double sum = 0;
      for (int64_t j = 0; j < s.size; ++j) {
        dst[j * s.inner] = std::exp(src[j * s.inner] - mx);
        sum += dst[j * s.inner];
      }
      for (int64_t j = 0; j < s.size; ++j)
        dst[j * s.inner] /= sum;
    }
  return out;
}

Tensor spmdc::interp::logSoftmax(const Tensor &x, int64_t dim) {
  Split s = splitAt(x.shape, dim);
  Tensor out(x.shape);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      const double *src = x.data.data() + o * s.size * s.inner + in;
      double *dst = out.data.data() + o * s.size * s.inner + in;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < s.size; ++j)
        mx = std::max(mx, src[j * s.inner]);
      double sum = 0;
      for (int64_t j = 0; j < s.size; ++j)
        sum += std::exp(src[j * s.inner] - mx);
      double logSum = std::log(sum);
      for (int64_t j = 0; j < s.size; ++j)
        dst[j * s.inner] = src[j * s.inner] - mx - logSum;
    }
  return out;
}

Tensor spmdc::interp::layerNorm(const Tensor &x, const Tensor &weight,
                                const Tensor &bias, double eps) {
  int64_t n = trailingCount(x.shape, weight.shape);
  // A default-constructed bias (no data at all) means "no bias".
  bool hasBias = !bias.data.empty();
  check(!hasBias || bias.numel() == n, "layerNorm bias size mismatch");
  Tensor out(x.shape);
  int64_t rows = n == 0 ? 0 : x.numel() / n;
  for (int64_t r = 0; r < rows; ++r) {
    const double *src = x.data.data() + r * n;
    double *dst = out.data.data() + r * n;
    // Two passes for the variance: more accurate than E[x^2] - E[x]^2.
    double mean = 0;
    for (int64_t i = 0; i < n; ++i)
      mean += src[i];
    mean /= static_cast<double>(n);
    double var = 0;
    for (int64_t i = 0; i < n; ++i)
      var += (src[i] - mean) * (src[i] - mean);
    var /= static_cast<double>(n);
    double invStd = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < n; ++i)
      dst[i] = (src[i] - mean) * invStd * weight.data[i] +
               (hasBias ? bias.data[i] : 0.0);
  }
  return out;
}

Tensor spmdc::interp::rmsNorm(const Tensor &x, const Tensor &weight,
                              double eps) {
  int64_t n = trailingCount(x.shape, weight.shape);
  Tensor out(x.shape);
  int64_t rows = n == 0 ? 0 : x.numel() / n;
  for (int64_t r = 0; r < rows; ++r) {
    const double *src = x.data.data() + r * n;
    double *dst = out.data.data() + r * n;
    double meanSq = 0;
    for (int64_t i = 0; i < n; ++i)
      meanSq += src[i] * src[i];
    meanSq /= static_cast<double>(n);
    double invRms = 1.0 / std::sqrt(meanSq + eps);
    for (int64_t i = 0; i < n; ++i)
      dst[i] = src[i] * invRms * weight.data[i];
  }
  return out;
}

Tensor spmdc::interp::gelu(const Tensor &x, bool tanhApproximation) {
  if (tanhApproximation) {
    const double k = std::sqrt(2.0 / 3.14159265358979323846);
    return map(x, [k](double v) {
      return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
    });
  }
  return map(x, [](double v) {
    return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  });
}

Tensor spmdc::interp::silu(const Tensor &x) {
  return map(x, [](double v) { return v / (1.0 + std::exp(-v)); });
}

Tensor spmdc::interp::crossEntropy(const Tensor &logits, const Tensor &labels) {
  check(logits.rank() == labels.rank() + 1, "crossEntropy rank mismatch");
  int64_t classes = logits.shape.back();
  int64_t rows = labels.numel();
  check(logits.numel() == rows * classes, "crossEntropy shape mismatch");
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = logits.data.data() + r * classes;
    int64_t label =
        toIndex(labels.data[r], classes, "crossEntropy label out of range");
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < classes; ++c)
      mx = std::max(mx, row[c]);
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(row[c] - mx);
    total += mx + std::log(sum) - row[label];
  }
  // No positions gives 0/0 = NaN, as torch does.
  return Tensor({}, {total / static_cast<double>(rows)});
}

Tensor spmdc::interp::scaledDotProductAttention(const Tensor &q,
                                                const Tensor &k,
                                                const Tensor &v, bool causal,
                                                std::optional<double> scale) {
  check(q.rank() == 4 && k.rank() == 4 && v.rank() == 4,
        "attention operands must be rank 4");
  int64_t batch = q.shape[0], heads = q.shape[1], seq = q.shape[2],
          depth = q.shape[3];
  int64_t kvHeads = k.shape[1], kvSeq = k.shape[2], vDepth = v.shape[3];
  check(k.shape[0] == batch && v.shape[0] == batch, "attention batch mismatch");
  check(k.shape[3] == depth, "attention q/k depth mismatch");
  check(v.shape[1] == kvHeads && v.shape[2] == kvSeq,
        "attention k/v shape mismatch");
  check(kvHeads > 0 && heads % kvHeads == 0,
        "attention kv heads must divide query heads");
  int64_t group = heads / kvHeads;
  double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(depth)));

  Tensor out({batch, heads, seq, vDepth});
  std::vector<double> probs(kvSeq);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t hk = h / group;
      const double *K = k.data.data() + (b * kvHeads + hk) * kvSeq * depth;
      const double *V = v.data.data() + (b * kvHeads + hk) * kvSeq * vDepth;
      for (int64_t i = 0; i < seq; ++i) {
        const double *Q = q.data.data() + ((b * heads + h) * seq + i) * depth;
        double *O = out.data.data() + ((b * heads + h) * seq + i) * vDepth;
        // Top-left aligned causal mask: query i sees keys 0..i.
        int64_t visible = causal ? std::min(kvSeq, i + 1) : kvSeq;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < visible; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < depth; ++d)
            dot += Q[d] * K[j * depth + d];
          probs[j] = dot * s;
          mx = std::max(mx, probs[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < visible; ++j) {
          probs[j] = std::exp(probs[j] - mx);
          sum += probs[j];
        }
        for (int64_t j = 0; j < visible; ++j) {
          double p = probs[j] / sum;
          for (int64_t d = 0; d < vDepth; ++d)
            O[d] += p * V[j * vDepth + d];
        }
      }
    }
  return out;
}

Tensor spmdc::interp::dropout(const Tensor &x, double p, int64_t seed) {
  Tensor u = randUniform(x.shape, seed);
  Tensor out(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    out.data[i] = u.data[i] >= p ? x.data[i] / (1.0 - p) : 0.0;
  return out;
}
