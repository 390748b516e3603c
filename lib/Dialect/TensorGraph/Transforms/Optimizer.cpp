//===- Optimizer.cpp - gradients into an optimizer update (--tg-optimizer) ===//
//
// Replaces the `grad` results of @main by updated parameters and optimizer
// state, following torch.optim.SGD and torch.optim.AdamW step for step, so
// that one compiled step matches PyTorch's. State is explicit: new `state`
// arguments in, updated `state` results out. The learning rate is an
// argument too (`hyper`, f64 as PyTorch's Python float), so that a schedule
// changes it from step to step without a new compile.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"

#include <cmath>

namespace spmdc::tg {
#define GEN_PASS_DEF_TGOPTIMIZER
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h.inc"
} // namespace spmdc::tg

using namespace mlir;
using namespace spmdc::tg;

namespace {

struct TgOptimizerPass : spmdc::tg::impl::TgOptimizerBase<TgOptimizerPass> {
  using TgOptimizerBase::TgOptimizerBase;

  void runOnOperation() override {
    // Unset (negative) hyperparameters take the optimizer's PyTorch default;
    // SGD's learning rate, which PyTorch requires, defaults to 0.01.
    bool sgd = optimizer == OptimizerKind::SGD;
    if (lr < 0)
      lr = sgd ? 0.01 : 1e-3;
    if (weightDecay < 0)
      weightDecay = sgd ? 0.0 : 0.01;
    if (!(clipGradNorm >= 0) || std::isinf(clipGradNorm)) {
      mlir::emitError(getOperation().getLoc(),
                      "--tg-optimizer's clip-grad-norm must be a positive "
                      "finite number (0: off), got ")
          << clipGradNorm;
      return signalPassFailure();
    }
    func::FuncOp fn = getEntryFunction(getOperation());
    if (!fn || failed(rewrite(fn)))
      signalPassFailure();
  }

  /// The learning rate, a new `hyper` argument of @main: a rank-0 f64, as
  /// the Python float PyTorch's optimizers hold, so that every product with
  /// it rounds as the constant it replaces did. `tg.default` records the
  /// pass's lr, which the runner feeds when no schedule says otherwise.
  Value addLearningRate(func::FuncOp fn) {
    Builder b(&getContext());
    NamedAttrList attrs;
    attrs.append(kNameAttr, b.getStringAttr("lr"));
    attrs.append(kRoleAttr, RoleAttr::get(b.getContext(), Role::hyper));
    attrs.append(kDefaultAttr, b.getF64FloatAttr(lr));
    unsigned index = fn.getNumArguments();
    (void)fn.insertArgument(index, RankedTensorType::get({}, b.getF64Type()),
                            attrs.getDictionary(&getContext()), fn.getLoc());
    return fn.getArgument(index);
  }

  /// A new `state` argument of @main.
  Value addState(func::FuncOp fn, StringRef name, RankedTensorType type) {
    OpBuilder b(&getContext());
    NamedAttrList attrs;
    attrs.append(kNameAttr, b.getStringAttr(name));
    attrs.append(kRoleAttr, RoleAttr::get(b.getContext(), Role::state));
    unsigned index = fn.getNumArguments();
    (void)fn.insertArgument(index, type, attrs.getDictionary(&getContext()),
                            fn.getLoc());
    stateResults.push_back({name.str(), Value()});
    return fn.getArgument(index);
  }

  LogicalResult rewrite(func::FuncOp fn) {
    auto args = getArgumentInfos(fn);
    auto results = getResultInfos(fn);
    Operation *ret = fn.getBody().front().getTerminator();
    if (llvm::none_of(results, [](auto &r) { return r.role == Role::grad; }))
      return fn.emitError("--tg-optimizer needs the 'grad' results of "
                          "--tg-autodiff");
    if (llvm::any_of(args, [](const GraphValueInfo &a) {
          return a.role == Role::hyper && a.name == "lr";
        }))
      return fn.emitError("--tg-optimizer: @main already has a learning-rate "
                          "argument 'lr'");
    learningRate = addLearningRate(fn);

    // Ops from here to the return are the update: tagged for the report.
    Operation *lastBackwardOp = ret->getPrevNode();
    OpBuilder b(ret);
    Location loc = fn.getLoc();
    auto scalar = [&](Value like, double v) {
      return buildScalarLike(b, loc, like, v);
    };
    // AdamW's step count, shared by all parameters: t' = t + 1.
    Value step;
    if (optimizer == OptimizerKind::AdamW) {
      Value t = addState(fn, "step", RankedTensorType::get({}, b.getF32Type()));
      b.setInsertionPoint(ret);
      Value next = AddOp::create(b, loc, t, scalar(t, 1.0));
      stateResults.back().second = next;
      // The bias corrections are scalars: compute them in f64, as PyTorch
      // does, so that 1 - 0.999^t does not lose digits in f32.
      step = ConvertOp::create(
          b, loc, RankedTensorType::get({}, b.getF64Type()), next);
    }

    SmallVector<Value> kept;
    SmallVector<GraphValueInfo> keptInfo;
    struct Gradient {
      std::string name;
      Value param, grad;
    };
    SmallVector<Gradient> gradients;
    for (auto [i, info] : llvm::enumerate(results)) {
      Value value = ret->getOperand(i);
      if (info.role != Role::grad) {
        kept.push_back(value);
        keptInfo.push_back(info);
        continue;
      }
      auto paramIt = llvm::find_if(args, [&](const GraphValueInfo &a) {
        return a.role == Role::param && a.name == info.name;
      });
      if (paramIt == args.end())
        return fn.emitError() << "gradient '" << info.name
                              << "' has no parameter of that name";
      Value p = fn.getArgument(paramIt - args.begin());
      Value g = value;
      if (Operation *def = g.getDefiningOp())
        def->setAttr(kGradOfAttr, b.getStringAttr(info.name));
      gradients.push_back({info.name, p, g});
    }
    if (clipGradNorm > 0) {
      SmallVector<Value> grads;
      for (Gradient &g : gradients)
        grads.push_back(g.grad);
      clipByGlobalNorm(b, loc, grads);
      for (auto [g, clipped] : llvm::zip(gradients, grads))
        g.grad = clipped;
    }
    SmallVector<std::pair<std::string, Value>> updatedParams;
    for (Gradient &g : gradients) {
      Value updated = optimizer == OptimizerKind::SGD
                          ? sgd(fn, g.name, g.param, g.grad)
                          : adamw(fn, g.name, g.param, g.grad, step);
      updatedParams.push_back({g.name, updated});
    }

    // Results: what was there but the gradients, then the updated
    // parameters, then the updated state.
    SmallVector<Value> newResults(kept);
    SmallVector<DictionaryAttr> newAttrs;
    auto attrsOf = [&](StringRef name, Role role) {
      NamedAttrList attrs;
      attrs.append(kNameAttr, b.getStringAttr(name));
      attrs.append(kRoleAttr, RoleAttr::get(&getContext(), role));
      return attrs.getDictionary(&getContext());
    };
    for (const GraphValueInfo &info : keptInfo)
      newAttrs.push_back(attrsOf(info.name, *info.role));
    for (auto &[name, value] : updatedParams) {
      newResults.push_back(value);
      newAttrs.push_back(attrsOf(name, Role::param));
    }
    for (auto &[name, value] : stateResults) {
      newResults.push_back(value);
      newAttrs.push_back(attrsOf(name, Role::state));
    }
    for (Operation *op = lastBackwardOp ? lastBackwardOp->getNextNode()
                                        : &fn.getBody().front().front();
         op != ret; op = op->getNextNode())
      op->setAttr(kUpdateAttr, b.getUnitAttr());
    b.setInsertionPoint(ret);
    func::ReturnOp::create(b, ret->getLoc(), newResults);
    ret->erase();
    fn.setFunctionType(FunctionType::get(&getContext(), fn.getArgumentTypes(),
                                         ValueRange(newResults).getTypes()));
    fn.setAllResultAttrs(newAttrs);
    return success();
  }

  /// torch.nn.utils.clip_grad_norm_(params, clipGradNorm): every gradient
  /// times min(clipGradNorm / (total + 1e-6), 1), where total is the L2 norm
  /// of all gradients together. The squared norms meet in one concat and
  /// one sum before the sqrt, so that on a sharded step their partial sums
  /// are reduced together, once.
  void clipByGlobalNorm(OpBuilder &b, Location at,
                        MutableArrayRef<Value> grads) {
    Location loc = workLoc(kOptimizerWork, at);
    GraphMath x{b, loc};
    // The norm in f64 if a gradient is, else in f32 (torch's foreach norm
    // keeps each gradient's dtype; bf16 or f16 squares would lose digits).
    Type accType = b.getF32Type();
    for (Value g : grads)
      if (typeOf(g).getElementType().isF64())
        accType = b.getF64Type();
    auto origin = [&](Value v) {
      v.getDefiningOp()->setAttr(kOriginAttr, b.getStringAttr("grad_norm"));
      return v;
    };
    SmallVector<Value> squares;
    for (Value g : grads) {
      SmallVector<int64_t> dims =
          llvm::to_vector(llvm::seq<int64_t>(0, typeOf(g).getRank()));
      Value sq = x.mul(g, g);
      if (!dims.empty())
        sq = origin(x.sum(sq, dims, /*keepDim=*/false));
      if (typeOf(sq).getElementType() != accType)
        sq = ConvertOp::create(b, loc, RankedTensorType::get({}, accType), sq);
      squares.push_back(
          reshapeTo(b, loc, sq, RankedTensorType::get({1}, accType)));
    }
    Value all = squares.size() == 1
                    ? squares.front()
                    : ConcatOp::create(b, loc, squares, 0).getResult();
    Value total = origin(x.sum(all, {0}, /*keepDim=*/false));
    Value norm = SqrtOp::create(b, loc, total);
    Value coef =
        x.div(x.scalar(norm, clipGradNorm), x.add(norm, x.scalar(norm, 1e-6)));
    coef = MinimumOp::create(b, loc, coef, x.scalar(coef, 1.0));
    for (Value &g : grads) {
      Type el = typeOf(g).getElementType();
      Value c =
          el == accType
              ? coef
              : ConvertOp::create(b, loc, RankedTensorType::get({}, el), coef)
                    .getResult();
      g = x.mul(g, c);
    }
  }

  /// torch.optim.SGD: g += wd p; buf = momentum buf + g (buf starts at 0,
  /// which makes the first step buf = g as in PyTorch); p -= lr buf.
  Value sgd(func::FuncOp fn, StringRef name, Value p, Value g) {
    OpBuilder b(fn.getBody().front().getTerminator());
    GraphMath m{b, workLoc(kOptimizerWork, p.getLoc())};
    if (weightDecay != 0.0)
      g = m.add(g, m.mul(p, m.scalar(p, weightDecay)));
    if (momentum != 0.0) {
      Value buf = addState(fn, (name + ".momentum_buffer").str(), typeOf(p));
      b.setInsertionPoint(fn.getBody().front().getTerminator());
      g = m.add(m.mul(buf, m.scalar(p, momentum)), g);
      stateResults.back().second = g;
    }
    return m.sub(p, m.mul(g, toElementType(b, p, learningRate)));
  }

  /// `scalar` (rank 0) converted to the element type of `like`.
  Value toElementType(OpBuilder &b, Value like, Value scalar) {
    Type el = typeOf(like).getElementType();
    if (typeOf(scalar).getElementType() == el)
      return scalar;
    return ConvertOp::create(b, workLoc(kOptimizerWork, like.getLoc()),
                             RankedTensorType::get({}, el), scalar);
  }

  /// torch.optim.AdamW: p *= 1 - lr wd; m = b1 m + (1-b1) g;
  /// v = b2 v + (1-b2) g^2; p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
  Value adamw(func::FuncOp fn, StringRef name, Value p, Value g, Value step) {
    Value m = addState(fn, (name + ".exp_avg").str(), typeOf(p));
    size_t mIndex = stateResults.size() - 1;
    Value v = addState(fn, (name + ".exp_avg_sq").str(), typeOf(p));
    size_t vIndex = stateResults.size() - 1;
    OpBuilder b(fn.getBody().front().getTerminator());
    Location loc = workLoc(kOptimizerWork, p.getLoc());
    GraphMath x{b, loc};
    auto toParamType = [&](Value s) { return toElementType(b, p, s); };

    // 1 - lr wd in f64, then rounded to the parameter's type, as PyTorch's
    // param.mul_(1 - lr * weight_decay) rounds its Python float. Without
    // weight decay the factor is 1: no op.
    Value decayed = p;
    if (weightDecay != 0.0) {
      Value lr = learningRate;
      decayed =
          x.mul(p, toParamType(x.sub(x.scalar(lr, 1.0),
                                     x.mul(lr, x.scalar(lr, weightDecay)))));
    }
    Value m2 = x.add(x.mul(m, x.scalar(p, beta1)),
                     x.mul(g, x.scalar(p, 1.0 - beta1)));
    Value v2 = x.add(x.mul(v, x.scalar(p, beta2)),
                     x.mul(x.mul(g, g), x.scalar(p, 1.0 - beta2)));
    stateResults[mIndex].second = m2;
    stateResults[vIndex].second = v2;
    Value bc1 = x.sub(x.scalar(step, 1.0),
                      PowOp::create(b, loc, x.scalar(step, beta1), step));
    Value bc2 = x.sub(x.scalar(step, 1.0),
                      PowOp::create(b, loc, x.scalar(step, beta2), step));
    Value stepSize = toParamType(x.div(learningRate, bc1));
    Value bc2Sqrt = toParamType(SqrtOp::create(b, loc, bc2));
    Value denom = x.add(x.div(SqrtOp::create(b, loc, v2), bc2Sqrt),
                        x.scalar(p, eps));
    return x.sub(decayed, x.mul(x.div(m2, denom), stepSize));
  }

  /// The `lr` argument (f64, rank 0).
  Value learningRate;
  /// Names and updated values of the state arguments added so far.
  SmallVector<std::pair<std::string, Value>> stateResults;
};

} // namespace
