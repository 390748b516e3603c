//===- CallOpBufferization.cpp - func.call's analysis in linear time ------===//
//
// One-shot bufferization across function boundaries asks a func.call, for
// each of its operands and results and many times over, what it reads,
// writes and aliases. MLIR's own model answers each question by copying the
// callee's whole summary (`DenseMap::lookup` returns a copy), and answers
// "which operands alias this result" by asking every operand in turn: with
// GPT-2 small's @backward call (800 operands, 450 results) that was 0.3 s
// of a 3 s compile. This model gives the same answers from the summary in
// place. Every other question keeps the interface's default, as MLIR's
// model does; bufferize() and getBufferType() do what MLIR's do.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/CallOpBufferization.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;
using func_ext::FuncAnalysisState;
using func_ext::FuncOpAnalysisState;

namespace {

const FuncAnalysisState *funcAnalysis(const AnalysisState &state) {
  auto *oneShot = dyn_cast<OneShotAnalysisState>(&state);
  return oneShot ? oneShot->getExtension<FuncAnalysisState>() : nullptr;
}

func::FuncOp calledFunction(func::CallOp call,
                            SymbolTableCollection &symbolTables) {
  return dyn_cast_or_null<func::FuncOp>(
      symbolTables.lookupNearestSymbolFrom(call, call.getCalleeAttr()));
}

func::FuncOp calledFunction(func::CallOp call, const AnalysisState &state) {
  if (const FuncAnalysisState *analysis = funcAnalysis(state))
    return calledFunction(call, analysis->symbolTables);
  SymbolTableCollection symbolTables;
  return calledFunction(call, symbolTables);
}

/// The callee's summary when its analysis is complete, else null: callers
/// then assume the worst, as MLIR's model does.
const FuncAnalysisState *analyzedCallee(func::CallOp call,
                                        const AnalysisState &state,
                                        func::FuncOp &callee) {
  callee = calledFunction(call, state);
  assert(callee && "a call of a func.func");
  const FuncAnalysisState *analysis = funcAnalysis(state);
  if (!analysis)
    return nullptr;
  auto it = analysis->analyzedFuncOps.find(callee);
  if (it == analysis->analyzedFuncOps.end() ||
      it->second != FuncOpAnalysisState::Analyzed)
    return nullptr;
  return analysis;
}

/// Whether `index` is in `callee`'s entry of `sets`, without copying it.
template <typename Sets>
bool contains(const Sets &sets, func::FuncOp callee, int64_t index) {
  auto it = sets.find(callee);
  return it != sets.end() && it->second.contains(index);
}

/// The results argument `argument` of `callee` may be returned as, and
/// whether it is returned as itself (one result, equivalent to it).
struct ReturnedAs {
  ArrayRef<int64_t> results;
  bool equivalent = false;
};

ReturnedAs returnedAs(const FuncAnalysisState &analysis, func::FuncOp callee,
                      int64_t argument) {
  ReturnedAs returned;
  auto aliasing = analysis.aliasingReturnVals.find(callee);
  if (aliasing == analysis.aliasingReturnVals.end())
    return returned;
  auto results = aliasing->second.find(argument);
  if (results == aliasing->second.end())
    return returned;
  returned.results = results->second;
  if (returned.results.size() == 1) {
    auto equivalents = analysis.equivalentFuncArgs.find(callee);
    returned.equivalent =
        equivalents != analysis.equivalentFuncArgs.end() &&
        equivalents->second.contains(returned.results.front());
  }
  return returned;
}

struct CallOpModel
    : BufferizableOpInterface::ExternalModel<CallOpModel, func::CallOp> {
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &state) const {
    func::FuncOp callee;
    const FuncAnalysisState *analysis =
        analyzedCallee(cast<func::CallOp>(op), state, callee);
    return !analysis ||
           contains(analysis->readBbArgs, callee, operand.getOperandNumber());
  }

  bool bufferizesToMemoryWrite(Operation *op, OpOperand &operand,
                               const AnalysisState &state) const {
    func::FuncOp callee;
    const FuncAnalysisState *analysis =
        analyzedCallee(cast<func::CallOp>(op), state, callee);
    return !analysis || contains(analysis->writtenBbArgs, callee,
                                 operand.getOperandNumber());
  }

  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &state) const {
    func::FuncOp callee;
    const FuncAnalysisState *analysis =
        analyzedCallee(cast<func::CallOp>(op), state, callee);
    if (!analysis)
      return bufferization::detail::unknownGetAliasingValues(operand);
    ReturnedAs returned =
        returnedAs(*analysis, callee, operand.getOperandNumber());
    AliasingValueList aliases;
    for (int64_t result : returned.results)
      aliases.addAlias({op->getResult(result),
                        returned.equivalent ? BufferRelation::Equivalent
                                            : BufferRelation::Unknown,
                        /*isDefinite=*/returned.equivalent});
    return aliases;
  }

  /// The interface's default asks getAliasingValues of every operand; this
  /// reads the same summary once per operand, in operand order.
  AliasingOpOperandList
  getAliasingOpOperands(Operation *op, Value value,
                        const AnalysisState &state) const {
    func::FuncOp callee;
    const FuncAnalysisState *analysis =
        analyzedCallee(cast<func::CallOp>(op), state, callee);
    if (!analysis)
      return bufferization::detail::defaultGetAliasingOpOperands(value, state);
    int64_t resultNumber = cast<OpResult>(value).getResultNumber();
    AliasingOpOperandList operands;
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<TensorType>(operand.get().getType()))
        continue;
      ReturnedAs returned =
          returnedAs(*analysis, callee, operand.getOperandNumber());
      if (llvm::is_contained(returned.results, resultNumber))
        operands.addAlias({&operand,
                           returned.equivalent ? BufferRelation::Equivalent
                                               : BufferRelation::Unknown,
                           /*isDefinite=*/returned.equivalent});
    }
    return operands;
  }

  /// The callee's result type once it is bufferized, else its tensor type
  /// converted as the function boundary converts it.
  FailureOr<BufferLikeType>
  getBufferType(Operation *op, Value value, const BufferizationOptions &options,
                const BufferizationState &state,
                SmallVector<Value> &invocationStack) const {
    SymbolTableCollection symbolTables;
    func::FuncOp callee = calledFunction(cast<func::CallOp>(op), symbolTables);
    assert(callee && "a call of a func.func");
    Type resultType = callee.getFunctionType().getResult(
        cast<OpResult>(value).getResultNumber());
    if (auto buffer = dyn_cast<BaseMemRefType>(resultType))
      return cast<BufferLikeType>(buffer);
    auto tensorType = cast<TensorType>(resultType);
    return options.functionArgTypeConverterFn(
        cast<TensorLikeType>(tensorType),
        *options.defaultMemorySpaceFn(tensorType), callee, options);
  }

  /// A call of the bufferized callee on its operands' buffers, each cast
  /// (or copied, where a cast could be invalid) to the callee's type.
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto call = cast<func::CallOp>(op);
    SmallVector<Type> resultTypes;
    for (Value result : call.getResults()) {
      if (!isa<TensorType>(result.getType())) {
        resultTypes.push_back(result.getType());
        continue;
      }
      FailureOr<BufferLikeType> type =
          bufferization::getBufferType(result, options, state);
      if (failed(type))
        return failure();
      resultTypes.push_back(*type);
    }

    func::FuncOp callee = calledFunction(call, state.getSymbolTables());
    assert(callee && "a call of a func.func");
    FunctionType calleeType = callee.getFunctionType();
    SmallVector<Value> operands;
    for (OpOperand &operand : call->getOpOperands()) {
      if (!isa<TensorType>(operand.get().getType())) {
        operands.push_back(operand.get());
        continue;
      }
      FailureOr<Value> buffer =
          getBuffer(rewriter, operand.get(), options, state);
      if (failed(buffer))
        return failure();
      Type expected = calleeType.getInput(operand.getOperandNumber());
      if (!isa<BaseMemRefType>(expected)) {
        // The callee is not bufferized yet (a cycle of calls).
        FailureOr<BufferLikeType> type = bufferization::getBufferType(
            callee.getArgument(operand.getOperandNumber()), options, state);
        if (failed(type))
          return failure();
        expected = *type;
      }
      if (buffer->getType() != expected) {
        auto memref = dyn_cast<MemRefType>(expected);
        assert(memref && "a ranked buffer at the boundary");
        FailureOr<Value> cast =
            castOrReallocMemRefValue(rewriter, *buffer, memref, options);
        if (failed(cast))
          return failure();
        buffer = *cast;
      }
      operands.push_back(*buffer);
    }

    auto bufferized = func::CallOp::create(
        rewriter, call.getLoc(), callee.getSymName(), resultTypes, operands);
    bufferized->setAttrs(call->getAttrs());
    replaceOpWithBufferizedValues(rewriter, call, bufferized->getResults());
    return success();
  }
};

} // namespace

void spmdc::registerCallOpBufferization(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, func::FuncDialect *) {
    func::CallOp::attachInterface<CallOpModel>(*context);
  });
}
