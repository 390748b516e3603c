//===- Kernels.h - reference tensor kernels of the interpreter --*- C++ -*-===//
//
// The numerical kernels behind `spmd-run --interpret`: plain C++ on row-major
// tensors of doubles, with no MLIR and nothing shared with codegen, so that
// the interpreter can serve as the oracle the compiled code is checked
// against. Rounding to an op's element type is the caller's business; every
// kernel computes in f64.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_INTERPRETER_KERNELS_H
#define SPMDC_INTERPRETER_KERNELS_H

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace spmdc::interp {

using Shape = std::vector<int64_t>;

/// A dense row-major tensor of doubles; a rank-0 tensor has one element.
struct Tensor {
  Shape shape;
  std::vector<double> data;

  Tensor() = default;
  Tensor(Shape shape, double fill = 0.0);
  Tensor(Shape shape, std::vector<double> data);
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
};

/// Number of elements of a shape (1 for rank 0).
int64_t numElements(const Shape &shape);
/// Row-major strides of a shape.
std::vector<int64_t> stridesOf(const Shape &shape);
/// NumPy broadcast of two shapes; the caller has checked they are compatible.
Shape broadcastShapes(const Shape &a, const Shape &b);

//===--- Elementwise ------------------------------------------------------===//

Tensor map(const Tensor &x, const std::function<double(double)> &fn);
/// `fn(a, b)` over the broadcast shape of `a` and `b`.
Tensor zip(const Tensor &a, const Tensor &b,
           const std::function<double(double, double)> &fn);
/// `cond != 0 ? onTrue : onFalse`, all three broadcast.
Tensor select(const Tensor &cond, const Tensor &onTrue, const Tensor &onFalse);
/// NumPy broadcast of `x` to `shape`.
Tensor broadcastTo(const Tensor &x, const Shape &shape);

//===--- Reductions -------------------------------------------------------===//

enum class ReduceKind { Sum, Max, Mean };
/// Reduce over `dims` (non-negative, distinct); with `keepDim` they stay as 1.
Tensor reduce(const Tensor &x, const std::vector<int64_t> &dims, bool keepDim,
              ReduceKind kind);

//===--- Linear algebra and data movement ---------------------------------===//

/// `[..., m, k] x [..., k, n] -> [..., m, n]`, batch dims broadcast.
Tensor matmul(const Tensor &a, const Tensor &b);
/// Result dim i is input dim perm[i].
Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm);
/// Row-major reinterpretation (the caller checked the element count).
Tensor reshape(const Tensor &x, const Shape &shape);
Tensor slice(const Tensor &x, int64_t dim, int64_t start, int64_t end,
             int64_t step);
Tensor concat(const std::vector<Tensor> &xs, int64_t dim);
/// weight [V, D], indices any shape -> indices.shape + [D].
Tensor embedding(const Tensor &weight, const Tensor &indices);
/// Adjoint of embedding: grad is indices.shape + [D]; result [numRows, D].
Tensor embeddingBackward(const Tensor &grad, const Tensor &indices,
                         int64_t numRows);
/// take_along_dim: result has index's shape.
Tensor gather(const Tensor &x, const Tensor &index, int64_t dim);
/// Adjoint of gather: zeros of `shape`, source added at index along dim.
Tensor scatterAdd(const Tensor &index, const Tensor &source, int64_t dim,
                  const Shape &shape);

//===--- Factories --------------------------------------------------------===//

Tensor iota(const Shape &shape, int64_t dim);
/// Counter-based uniform [0, 1): element i is uniformBits(seed, i).
Tensor randUniform(const Shape &shape, int64_t seed);
/// The counter-based generator: splitmix64 of (seed, i), top 53 bits / 2^53.
double uniformBits(uint64_t seed, uint64_t index);

//===--- Composites, computed directly (not through a decomposition) ------===//

/// dim is non-negative here.
Tensor softmax(const Tensor &x, int64_t dim);
Tensor logSoftmax(const Tensor &x, int64_t dim);
/// Normalizes over the last weight.rank() dims.
Tensor layerNorm(const Tensor &x, const Tensor &weight, const Tensor &bias,
                 double eps);
Tensor rmsNorm(const Tensor &x, const Tensor &weight, double eps);
Tensor gelu(const Tensor &x, bool tanhApproximation);
Tensor silu(const Tensor &x);
/// Mean over all positions of logsumexp(logits) - logits[label]; rank 0.
Tensor crossEntropy(const Tensor &logits, const Tensor &labels);
/// q [B,H,S,D], k [B,Hkv,S2,D], v [B,Hkv,S2,Dv]; scale defaults to 1/sqrt(D).
Tensor scaledDotProductAttention(const Tensor &q, const Tensor &k,
                                 const Tensor &v, bool causal,
                                 std::optional<double> scale);
/// x * (u >= p) / (1 - p) with u = randUniform(x.shape, seed).
Tensor dropout(const Tensor &x, double p, int64_t seed);

} // namespace spmdc::interp

#endif // SPMDC_INTERPRETER_KERNELS_H
