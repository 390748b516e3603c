//===- EvalEntry.cpp - the step's loss alone, as @eval (--tg-eval-entry) --===//
//
// spmd-run --eval-dataset measures the loss on held-out batches. The module
// carries the program for it: @main with only its loss kept. Copying @main
// rather than @forward keeps what a sharded @main does around the call of
// @forward (parameter gathers, the loss's reduction), so @eval takes its
// arguments on the same shards as the step and runs the same forward.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"

#include "llvm/ADT/BitVector.h"

namespace spmdc::tg {
#define GEN_PASS_DEF_TGEVALENTRY
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h.inc"
} // namespace spmdc::tg

using namespace mlir;
using namespace spmdc::tg;

namespace {

constexpr llvm::StringLiteral kEvalName = "eval";

struct TgEvalEntryPass : spmdc::tg::impl::TgEvalEntryBase<TgEvalEntryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp main = getEntryFunction(module);
    if (!main)
      return signalPassFailure();
    if (module.lookupSymbol(kEvalName)) {
      module.emitError("tg-eval-entry: the module already has a symbol '")
          << kEvalName << "'";
      return signalPassFailure();
    }
    std::optional<unsigned> loss;
    for (auto [i, info] : llvm::enumerate(getResultInfos(main)))
      if (info.role == Role::loss)
        loss = i;
    if (!loss)
      return;

    OpBuilder b(main);
    b.setInsertionPointAfter(main);
    auto eval = cast<func::FuncOp>(b.clone(*main.getOperation()));
    eval.setSymName(kEvalName);
    eval.setPublic();

    // Only the loss comes back.
    Block &body = eval.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value lossValue = ret.getOperand(*loss);
    DictionaryAttr lossAttrs = eval.getResultAttrDict(*loss);
    ret->setOperands(lossValue);
    eval.setType(FunctionType::get(&getContext(), eval.getArgumentTypes(),
                                   {lossValue.getType()}));
    eval.setAllResultAttrs(ArrayRef<DictionaryAttr>{lossAttrs});

    // What the loss does not need, last to first: the graph's ops are
    // values without effects, and the calls are of this module's own
    // @forward and @backward.
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (op->getNumResults() > 0 && op->use_empty())
        op->erase();
    llvm::BitVector unused(eval.getNumArguments());
    for (BlockArgument argument : body.getArguments())
      if (argument.use_empty())
        unused.set(argument.getArgNumber());
    if (failed(eval.eraseArguments(unused)))
      return signalPassFailure();
  }
};

} // namespace
