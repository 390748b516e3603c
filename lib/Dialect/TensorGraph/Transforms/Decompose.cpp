//===- Decompose.cpp - composites into primitives (--tg-decompose) --------===//
//
// One rewrite pattern per composite. Patterns may produce other composites
// (cross_entropy makes a log_softmax and a mean); the greedy driver keeps
// going until only primitives remain.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace spmdc::tg {
#define GEN_PASS_DEF_TGDECOMPOSE
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h.inc"
} // namespace spmdc::tg

using namespace mlir;
using namespace spmdc::tg;

namespace {

/// Arithmetic at the location of the composite being decomposed.
struct Math : GraphMath {
  /// The last `n` dims of `x`.
  SmallVector<int64_t> trailingDims(Value x, int64_t n) {
    SmallVector<int64_t> dims;
    for (int64_t i = typeOf(x).getRank() - n; i < typeOf(x).getRank(); ++i)
      dims.push_back(i);
    return dims;
  }
};

template <typename OpT>
struct Decomposition : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const final {
    Math m{{rewriter, locationOf(op)}};
    FailureOr<Value> result = decompose(op, m);
    if (failed(result))
      return failure();
    rewriter.replaceOp(op, *result);
    return success();
  }
  virtual FailureOr<Value> decompose(OpT op, Math &m) const = 0;
  /// The location of the ops `op` decomposes into.
  virtual Location locationOf(OpT op) const { return op.getLoc(); }
};

struct DecomposeMean : Decomposition<MeanOp> {
  using Decomposition::Decomposition;
  FailureOr<Value> decompose(MeanOp op, Math &m) const override {
    return m.mean(op.getInput(), op.getDims(), op.getKeepdim());
  }
};

struct DecomposeLinear : Decomposition<LinearOp> {
  using Decomposition::Decomposition;
  FailureOr<Value> decompose(LinearOp op, Math &m) const override {
    Value wT = TransposeOp::create(m.b, m.loc, op.getWeight(),
                                   ArrayRef<int64_t>{1, 0});
    Value y = MatmulOp::create(m.b, m.loc, op.getInput(), wT);
    return op.getBias() ? m.add(y, op.getBias()) : y;
  }
};

/// exp(x - max) and its sum along `dim`, shared by softmax and log_softmax.
static std::pair<Value, Value> shiftedExp(Math &m, Value x, int64_t dim,
                                          Value &shifted) {
  // The shift cancels out of the result, so its gradient is zero: autodiff
  // skips the max (and a split vocabulary needs no collective for it).
  Value max = m.max(x, {dim}, /*keepdim=*/true);
  max.getDefiningOp()->setAttr(kConstantToDerivativeAttr,
                               UnitAttr::get(m.b.getContext()));
  shifted = m.sub(x, max);
  Value e = ExpOp::create(m.b, m.loc, shifted);
  return {e, m.sum(e, {dim}, /*keepdim=*/true)};
}

struct DecomposeSoftmax : Decomposition<SoftmaxOp> {
  using Decomposition::Decomposition;
  FailureOr<Value> decompose(SoftmaxOp op, Math &m) const override {
    Value shifted;
    auto [e, s] = shiftedExp(m, op.getInput(), op.getDim(), shifted);
    return m.div(e, s);
  }
};

struct DecomposeLogSoftmax : Decomposition<LogSoftmaxOp> {
  using Decomposition::Decomposition;
  FailureOr<Value> decompose(LogSoftmaxOp op, Math &m) const override {
    // log-sum-exp: (x - max) - log(sum(exp(x - max))).
    Value shifted;
    auto [e, s] = shiftedExp(m, op.getInput(), op.getDim(), shifted);
    return m.sub(shifted, LogOp::create(m.b, m.loc, s));
  }
};

struct DecomposeLayerNorm : Decomposition<LayerNormOp> {
  using Decomposition::Decomposition;
  FailureOr<Value> decompose(LayerNormOp op, Math &m) const override {
    Value x = op.getInput();
    auto dims = m.trailingDims(x, typeOf(op.getWeight()).getRank());
    Value centered = m.sub(x, m.mean(x, dims, /*keepdim=*/true));
    Value variance = m.mean(m.mul(centered, centered), dims, true);
    Value eps = m.scalar(x, op.getEps().convertToDouble());
    Value inv = RsqrtOp::create(m.b, m.loc, m.add(variance, eps));
    return m.add(m.mul(m.mul(centered, inv), op.getWeight()), op.getBias());
  }
};

struct DecomposeRmsNorm : Decomposition<RmsNormOp> {
  using Decomposition::Decomposition;
  FailureOr<Value> decompose(RmsNormOp op, Math &m) const override {
    Value x = op.getInput();
    auto dims = m.trailingDims(x, typeOf(op.getWeight()).getRank());
    Value meanSquare = m.mean(m.mul(x, x), dims, /*keepdim=*/true);
    Value eps = m.scalar(x, op.getEps().convertToDouble());
    Value inv = RsqrtOp::create(m.b, m.loc, m.add(meanSquare, eps));
    return m.mul(m.mul(x, inv), op.getWeight());
  }
};

struct DecomposeGelu : Decomposition<GeluOp> {
  using Decomposition::Decomposition;
  FailureOr<Value> decompose(GeluOp op, Math &m) const override {
    Value x = op.getInput();
    Value inner;
    if (op.getApproximate() == "tanh") {
      // tanh(sqrt(2/pi) * (x + 0.044715 x^3))
      Value cube = m.mul(m.mul(x, x), x);
      Value poly = m.add(x, m.mul(cube, m.scalar(x, 0.044715)));
      inner = TanhOp::create(m.b, m.loc,
                             m.mul(poly, m.scalar(x, std::sqrt(2.0 / M_PI))));
    } else {
      inner = ErfOp::create(m.b, m.loc, m.mul(x, m.scalar(x, M_SQRT1_2)));
    }
    Value half = m.mul(x, m.scalar(x, 0.5));
    return m.mul(half, m.add(inner, m.scalar(x, 1.0)));
  }
};

struct DecomposeSilu : Decomposition<SiluOp> {
  using Decomposition::Decomposition;
  FailureOr<Value> decompose(SiluOp op, Math &m) const override {
    return m.mul(op.getInput(), SigmoidOp::create(m.b, m.loc, op.getInput()));
  }
};

struct DecomposeCrossEntropy : Decomposition<CrossEntropyOp> {
  using Decomposition::Decomposition;
  FailureOr<Value> decompose(CrossEntropyOp op, Math &m) const override {
    // -mean(log_softmax(logits)[label]) over all positions.
    Value logits = op.getLogits();
    int64_t classDim = typeOf(logits).getRank() - 1;
    Value logProbs = LogSoftmaxOp::create(m.b, m.loc, logits, classDim);
    SmallVector<int64_t> indexShape(typeOf(op.getLabels()).getShape());
    indexShape.push_back(1);
    Value index = ReshapeOp::create(
        m.b, m.loc,
        RankedTensorType::get(indexShape,
                              typeOf(op.getLabels()).getElementType()),
        op.getLabels());
    Value picked = GatherOp::create(m.b, m.loc, logProbs, index, classDim);
    SmallVector<int64_t> all = m.trailingDims(picked, typeOf(picked).getRank());
    Value meanPicked = MeanOp::create(m.b, m.loc, picked, all, false);
    return Value(NegOp::create(m.b, m.loc, meanPicked));
  }
};

struct DecomposeAttention : Decomposition<ScaledDotProductAttentionOp> {
  using Decomposition::Decomposition;
  /// Named as attention's, so the loop nests of attention (and of its
  /// gradient, which autodiff places at the same locations) say so.
  Location locationOf(ScaledDotProductAttentionOp op) const override {
    return workLoc(kAttentionWork, op.getLoc());
  }
  FailureOr<Value> decompose(ScaledDotProductAttentionOp op,
                             Math &m) const override {
    Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
    RankedTensorType qType = typeOf(q);
    int64_t heads = qType.getDimSize(1), kvHeads = typeOf(k).getDimSize(1);
    // Grouped-query attention: repeat each kv head H / Hkv times.
    auto repeatHeads = [&](Value x) -> Value {
      if (kvHeads == heads)
        return x;
      RankedTensorType t = typeOf(x);
      int64_t group = heads / kvHeads, b = t.getDimSize(0),
              s = t.getDimSize(2), d = t.getDimSize(3);
      Type el = t.getElementType();
      Value expanded = ReshapeOp::create(
          m.b, m.loc, RankedTensorType::get({b, kvHeads, 1, s, d}, el), x);
      Value repeated = BroadcastOp::create(
          m.b, m.loc, RankedTensorType::get({b, kvHeads, group, s, d}, el),
          expanded);
      return ReshapeOp::create(
          m.b, m.loc, RankedTensorType::get({b, heads, s, d}, el), repeated);
    };
    k = repeatHeads(k);
    v = repeatHeads(v);
    double scale = op.getScale() ? op.getScale()->convertToDouble()
                                 : 1.0 / std::sqrt(qType.getDimSize(3));
    Value kT = TransposeOp::create(m.b, m.loc, k,
                                   ArrayRef<int64_t>{0, 1, 3, 2});
    Value scores = m.mul(MatmulOp::create(m.b, m.loc, q, kT), m.scalar(q, scale));
    if (op.getCausal()) {
      // Key position j is visible to query position i when j <= i.
      int64_t sq = qType.getDimSize(2), sk = typeOf(k).getDimSize(2);
      auto posType = RankedTensorType::get({sq, sk}, m.b.getI64Type());
      Value row = IotaOp::create(m.b, m.loc, posType, 0);
      Value col = IotaOp::create(m.b, m.loc, posType, 1);
      Value visible = CompareOp::create(m.b, m.loc, ComparePredicate::le,
                                        col, row);
      scores = SelectOp::create(m.b, m.loc, visible, scores,
                                m.scalar(scores, -INFINITY));
    }
    if (Value mask = op.getMask())
      scores = typeOf(mask).getElementType().isInteger(1)
                   ? m.select(mask, scores, m.scalar(scores, -INFINITY))
                   : m.add(scores, mask);
    Value probs = SoftmaxOp::create(m.b, m.loc, scores, -1);
    return Value(MatmulOp::create(m.b, m.loc, probs, v));
  }
};

struct DecomposeDropout : Decomposition<DropoutOp> {
  using Decomposition::Decomposition;
  FailureOr<Value> decompose(DropoutOp op, Math &m) const override {
    Value x = op.getInput();
    double p = op.getP().convertToDouble();
    Value u = RandUniformOp::create(m.b, m.loc, typeOf(x), op.getSeed());
    Value keep = CompareOp::create(m.b, m.loc, ComparePredicate::ge, u,
                                   m.scalar(x, p));
    Value scaled = m.mul(x, m.scalar(x, 1.0 / (1.0 - p)));
    return Value(SelectOp::create(m.b, m.loc, keep, scaled, m.scalar(x, 0.0)));
  }
};

struct TgDecomposePass
    : spmdc::tg::impl::TgDecomposeBase<TgDecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeMean, DecomposeLinear, DecomposeSoftmax,
                 DecomposeLogSoftmax, DecomposeLayerNorm, DecomposeRmsNorm,
                 DecomposeGelu, DecomposeSilu, DecomposeCrossEntropy,
                 DecomposeAttention, DecomposeDropout>(&getContext());
    // Folding and CSE are not this pass's business: keep the rewrite exact.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      return signalPassFailure();
  }
};

} // namespace
