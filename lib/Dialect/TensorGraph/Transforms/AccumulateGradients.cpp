//===- AccumulateGradients.cpp - K micro-batches a step -------------------===//
//
// --tg-accumulate-gradients (spmdc --grad-accum K): the partitioned step of
// one micro-batch becomes a step over K of them. @main's ops fall into
// three kinds: those computed from the data (the forward and the
// backward: run once a micro-batch), the optimizer's update (`tg.update`:
// run once, on the mean of the micro-batches' gradients) and the rest
// (constants, weight transposes: run once, shared). Inlining @forward and
// @backward first keeps every micro-batch's gradient in one function with
// its sum, so the shard stage reduces the mean once, where the update
// takes it, instead of at each call's return.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"
#include "spmdc/Support/InlineCall.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

namespace spmdc::tg {
#define GEN_PASS_DEF_TGACCUMULATEGRADIENTS
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h.inc"
} // namespace spmdc::tg

using namespace mlir;
using namespace spmdc::tg;

namespace {

/// Replaces each call in `fn` of a function of the module by the callee's
/// body; erases callees left without calls.
LogicalResult inlineCalls(func::FuncOp fn) {
  SmallVector<func::CallOp> calls(fn.getBody().getOps<func::CallOp>());
  llvm::SetVector<func::FuncOp> callees;
  for (func::CallOp call : calls) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee || callee.isExternal() || !callee.getBody().hasOneBlock())
      return call.emitError("tg-accumulate-gradients: cannot inline the call "
                            "of ")
             << call.getCalleeAttr();
    spmdc::inlineCall(call, callee);
    callees.insert(callee);
  }
  ModuleOp module = fn->getParentOfType<ModuleOp>();
  for (func::FuncOp callee : callees)
    if (SymbolTable::symbolKnownUseEmpty(callee, module))
      callee.erase();
  return success();
}

struct TgAccumulateGradientsPass
    : spmdc::tg::impl::TgAccumulateGradientsBase<TgAccumulateGradientsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (microBatches < 1) {
      getOperation().emitError("tg-accumulate-gradients: micro-batches must "
                               "be at least 1, not ")
          << microBatches;
      return signalPassFailure();
    }
    if (microBatches == 1)
      return;
    func::FuncOp main = getEntryFunction(getOperation());
    if (!main || failed(inlineCalls(main)) || failed(accumulate(main)))
      return signalPassFailure();
  }

  LogicalResult accumulate(func::FuncOp main) {
    int64_t k = microBatches;
    Block &body = main.getBody().front();
    Operation *ret = body.getTerminator();
    std::vector<GraphValueInfo> arguments = getArgumentInfos(main);
    std::vector<GraphValueInfo> results = getResultInfos(main);

    // The data inputs and their common batch.
    SmallVector<BlockArgument> data;
    std::optional<int64_t> batch;
    for (auto [i, info] : llvm::enumerate(arguments)) {
      if (info.role != Role::data)
        continue;
      if (info.type.getRank() == 0 ||
          (batch && info.type.getDimSize(0) != *batch))
        return main.emitError("--grad-accum: data input '")
               << info.name << "' of shape " << info.type
               << " has no batch dim 0 "
               << (batch ? "like the other data inputs' " +
                               std::to_string(*batch)
                         : std::string())
               << "; micro-batches split every data input along dim 0";
      batch = info.type.getDimSize(0);
      data.push_back(body.getArgument(i));
    }
    if (data.empty())
      return main.emitError("--grad-accum: the step has no data input to "
                            "split into micro-batches");

    // What the data computes, outside the update: the micro-batch's ops.
    llvm::DenseSet<Value> fromData(data.begin(), data.end());
    SmallVector<Operation *> perMicroBatch, update;
    for (Operation &op : body.without_terminator()) {
      if (op.hasAttr(kUpdateAttr)) {
        update.push_back(&op);
        continue;
      }
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return fromData.contains(v); })) {
        perMicroBatch.push_back(&op);
        fromData.insert(op.result_begin(), op.result_end());
      }
    }
    // Where micro-batch values leave it: the update's operands and @main's
    // results. Each is averaged; only the loss and gradients may be.
    llvm::SetVector<Value> leaving;
    for (Operation *op : update)
      for (Value v : op->getOperands())
        if (fromData.contains(v) && !llvm::is_contained(data, v))
          leaving.insert(v);
    for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
      if (!fromData.contains(v))
        continue;
      std::optional<Role> role = results[i].role;
      if (role != Role::loss && role != Role::grad)
        return main.emitError("--grad-accum: result '")
               << results[i].name
               << "' is computed from the data but is not the loss or a "
                  "gradient (model state the forward updates, such as "
                  "batch-norm statistics, is not averaged over "
                  "micro-batches)";
      leaving.insert(v);
    }
    for (Value v : leaving)
      if (!isa<FloatType>(typeOf(v).getElementType()))
        return v.getDefiningOp()->emitError(
            "--grad-accum: an integer value of the micro-batch reaches the "
            "update");

    // The update runs last, after every micro-batch.
    for (Operation *op : update)
      op->moveBefore(ret);
    OpBuilder b(update.empty() ? ret : update.front());
    Location loc = main.getLoc();

    // Each data input: K micro-batches of rows b K + k.
    SmallVector<SmallVector<Value>> slices(data.size());
    for (auto [d, input] : llvm::enumerate(data)) {
      RankedTensorType micro = typeOf(input);
      SmallVector<int64_t> whole(micro.getShape()), split(micro.getShape());
      whole[0] *= k;
      split.insert(split.begin() + 1, k);
      input.setType(micro.clone(whole));
      Value rows = ReshapeOp::create(b, loc, micro.clone(split), input);
      for (int64_t i = 0; i < k; ++i) {
        Value slice = SliceOp::create(b, loc, rows, 1, i, i + 1, 1);
        slices[d].push_back(ReshapeOp::create(b, loc, micro, slice));
      }
    }
    main.setType(FunctionType::get(&getContext(), body.getArgumentTypes(),
                                   main.getResultTypes()));

    // The micro-batches one after the other; the sum of each leaving value.
    DenseMap<Value, Value> sums;
    for (int64_t i = 0; i < k; ++i) {
      IRMapping map;
      for (auto [d, input] : llvm::enumerate(data))
        map.map(input, slices[d][i]);
      for (Operation *op : perMicroBatch) {
        Operation *copy = b.clone(*op, map);
        // The gradient's name goes to its mean.
        copy->removeAttr(kGradOfAttr);
      }
      for (Value v : leaving) {
        Value mine = map.lookup(v);
        auto [it, first] = sums.try_emplace(v, mine);
        if (!first)
          it->second = AddOp::create(b, loc, it->second, mine);
      }
    }
    for (Value v : leaving) {
      Operation *mean = MulOp::create(b, loc, sums[v],
                                      buildScalarLike(b, loc, v, 1.0 / k))
                            .getOperation();
      if (auto grad = v.getDefiningOp()->getAttr(kGradOfAttr))
        mean->setAttr(kGradOfAttr, grad);
      v.replaceUsesWithIf(mean->getResult(0), [&](OpOperand &use) {
        return use.getOwner() == ret || use.getOwner()->hasAttr(kUpdateAttr);
      });
    }
    for (Operation *op : llvm::reverse(perMicroBatch))
      op->erase();

    // The report states it with the partition's figures, which are one
    // micro-batch's.
    ModuleOp module = getOperation();
    NamedAttrList stats;
    if (auto partition = module->getAttrOfType<DictionaryAttr>("tg.partition"))
      stats.assign(partition.getValue());
    stats.set("micro_batches", b.getI64IntegerAttr(k));
    module->setAttr("tg.partition", stats.getDictionary(&getContext()));
    return success();
  }
};

} // namespace
