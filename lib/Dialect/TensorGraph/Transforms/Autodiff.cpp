//===- Autodiff.cpp - reverse-mode gradients of @main (--tg-autodiff) -----===//
//
// Walks @main's ops backwards from the loss, asking each op for its VJP
// (VJPOpInterface), accumulating gradients of values used more than once,
// and returns the gradient of every parameter as a `grad` result.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"

#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"

namespace spmdc::tg {
#define GEN_PASS_DEF_TGAUTODIFF
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h.inc"
} // namespace spmdc::tg

using namespace mlir;
using namespace spmdc::tg;

namespace {

bool isFloatTensor(Value v) {
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  return type && llvm::isa<FloatType>(type.getElementType());
}

/// Float values that depend on a parameter: only they need gradients.
llvm::DenseSet<Value> activeValues(func::FuncOp fn,
                                   ArrayRef<GraphValueInfo> args) {
  llvm::DenseSet<Value> active;
  for (auto [arg, info] : llvm::zip(fn.getArguments(), args))
    if (info.role == Role::param && isFloatTensor(arg))
      active.insert(arg);
  for (Operation &op : fn.getBody().front().without_terminator())
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return active.contains(v); }))
      for (Value result : op.getResults())
        if (isFloatTensor(result))
          active.insert(result);
  return active;
}

struct TgAutodiffPass : spmdc::tg::impl::TgAutodiffBase<TgAutodiffPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp fn = getEntryFunction(module);
    if (!fn)
      return signalPassFailure();
    if (failed(differentiate(fn)))
      return signalPassFailure();
  }

  LogicalResult differentiate(func::FuncOp fn) {
    auto args = getArgumentInfos(fn);
    auto results = getResultInfos(fn);
    auto lossIt = llvm::find_if(
        results, [](const GraphValueInfo &r) { return r.role == Role::loss; });
    if (lossIt == results.end())
      return fn.emitError("--tg-autodiff needs a result of role 'loss'");
    if (llvm::any_of(results,
                     [](const GraphValueInfo &r) { return r.role == Role::grad; }))
      return fn.emitError("the graph already has gradients: autodiff runs "
                          "once");

    Block &body = fn.getBody().front();
    Operation *ret = body.getTerminator();
    Value loss = ret->getOperand(lossIt - results.begin());
    llvm::DenseSet<Value> active = activeValues(fn, args);

    OpBuilder b(ret);
    llvm::DenseMap<Value, Value> grads;
    auto accumulate = [&](Value v, Value g) {
      auto [it, inserted] = grads.try_emplace(v, g);
      if (!inserted)
        it->second = AddOp::create(b, g.getLoc(), it->second, g);
    };
    if (active.contains(loss))
      grads[loss] = buildScalarLike(b, loss.getLoc(), loss, 1.0);

    // Reverse program order is a reverse topological order of the block.
    SmallVector<Operation *> forward;
    for (Operation &op : body.without_terminator())
      forward.push_back(&op);
    for (Operation *op : llvm::reverse(forward)) {
      if (op->getNumResults() != 1)
        continue;
      auto gradIt = grads.find(op->getResult(0));
      if (gradIt == grads.end())
        continue;
      auto vjp = llvm::dyn_cast<VJPOpInterface>(op);
      // Boolean results and factories: constants to the derivative.
      if ((!vjp && op->hasTrait<spmdc::tg::OpTrait::NoDerivative>()) ||
          op->hasAttr(kConstantToDerivativeAttr))
        continue;
      if (!vjp)
        return op->emitError("has no derivative rule")
               << (op->hasTrait<spmdc::tg::OpTrait::Composite>()
                       ? " (it is a composite: run --tg-decompose first)"
                       : "");
      b.setInsertionPoint(ret);
      SmallVector<Value> operandGrads;
      if (failed(vjp.buildVJP(b, gradIt->second, operandGrads)))
        return failure();
      for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
        if (g && active.contains(operand))
          accumulate(operand, g);
    }

    // One `grad` result per float parameter, zeros if the loss ignores it.
    SmallVector<Value> newResults(ret->getOperands());
    SmallVector<Type> resultTypes(fn.getResultTypes());
    SmallVector<DictionaryAttr> resultAttrs;
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      resultAttrs.push_back(fn.getResultAttrDict(i));
    b.setInsertionPoint(ret);
    for (auto [arg, info] : llvm::zip(fn.getArguments(), args)) {
      if (info.role != Role::param || !isFloatTensor(arg))
        continue;
      Value g = grads.lookup(arg);
      if (!g)
        g = buildZeros(b, arg.getLoc(), typeOf(arg));
      newResults.push_back(g);
      resultTypes.push_back(g.getType());
      NamedAttrList attrs;
      attrs.append(kNameAttr, b.getStringAttr(info.name));
      attrs.append(kRoleAttr, RoleAttr::get(b.getContext(), Role::grad));
      resultAttrs.push_back(attrs.getDictionary(&getContext()));
    }
    func::ReturnOp::create(b, ret->getLoc(), newResults);
    ret->erase();
    fn.setFunctionType(
        FunctionType::get(&getContext(), fn.getArgumentTypes(), resultTypes));
    fn.setAllResultAttrs(resultAttrs);

    // Backward code whose gradient nothing needs, and forward code only it
    // used, goes.
    IRRewriter rewriter(&getContext());
    (void)runRegionDCE(rewriter, fn.getBody());
    return success();
  }
};

} // namespace
