//===- Interpreter.cpp - the reference interpreter of the tg dialect ------===//
//
// One case per op, each a call into Kernels.cpp; composites are computed
// directly, not through their decomposition, so that the interpreter can
// check `--tg-decompose`.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Interpreter/Interpreter.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace spmdc::interp {

/// Rounds to nearest, ties to even, straight from the double (rounding
/// through f32 first could round twice).
static double roundThrough(double value, const llvm::fltSemantics &semantics) {
  llvm::APFloat f(value);
  bool losesInfo;
  f.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &losesInfo);
  return f.convertToDouble();
}

double roundToElementType(double value, Type elementType) {
  if (elementType.isF64())
    return value;
  if (elementType.isF32())
    return static_cast<float>(value);
  if (elementType.isF16())
    return roundThrough(value, llvm::APFloat::IEEEhalf());
  if (elementType.isBF16())
    return roundThrough(value, llvm::APFloat::BFloat());
  if (elementType.isInteger(1))
    return value != 0.0 ? 1.0 : 0.0;
  if (elementType.isInteger(32))
    return static_cast<double>(static_cast<int32_t>(std::trunc(value)));
  return std::trunc(value);
}

namespace {

Shape shapeOf(Value value) {
  auto type = llvm::cast<RankedTensorType>(value.getType());
  return Shape(type.getShape().begin(), type.getShape().end());
}

int64_t rankOf(Value value) {
  return llvm::cast<RankedTensorType>(value.getType()).getRank();
}

/// A dim attribute made non-negative against the operand's rank.
int64_t dimOf(int64_t dim, Value operand) {
  return dim < 0 ? dim + rankOf(operand) : dim;
}

std::vector<int64_t> dimsOf(ArrayRef<int64_t> dims, Value operand) {
  std::vector<int64_t> result;
  for (int64_t d : dims)
    result.push_back(dimOf(d, operand));
  return result;
}

bool isIntegerValue(Value value) {
  return llvm::isa<IntegerType>(
      llvm::cast<RankedTensorType>(value.getType()).getElementType());
}

/// Values of a DenseElementsAttr (ints or floats) as doubles.
Tensor constantTensor(ElementsAttr attr) {
  auto type = llvm::cast<RankedTensorType>(attr.getType());
  Tensor t(Shape(type.getShape().begin(), type.getShape().end()));
  auto dense = llvm::cast<DenseElementsAttr>(attr);
  size_t i = 0;
  if (llvm::isa<FloatType>(type.getElementType())) {
    for (const APFloat &v : dense.getValues<APFloat>())
      t.data[i++] = v.convertToDouble();
  } else {
    bool isBool = type.getElementType().isInteger(1);
    for (const APInt &v : dense.getValues<APInt>())
      t.data[i++] = isBool ? static_cast<double>(v.getBoolValue())
                           : static_cast<double>(v.getSExtValue());
  }
  return t;
}

class FunctionInterpreter {
public:
  explicit FunctionInterpreter(const InterpreterOptions &options)
      : options(options) {}

  FailureOr<std::vector<Tensor>> run(func::FuncOp fn,
                                     ArrayRef<Tensor> arguments);

private:
  const Tensor &get(Value v) { return values.find(v)->second; }
  LogicalResult execute(Operation *op);
  /// Computes the results of one tg op.
  FailureOr<Tensor> evaluate(Operation *op);

  const InterpreterOptions &options;
  llvm::DenseMap<Value, Tensor> values;
};

FailureOr<std::vector<Tensor>>
FunctionInterpreter::run(func::FuncOp fn, ArrayRef<Tensor> arguments) {
  if (fn.isExternal())
    return fn.emitError("cannot interpret a function without a body");
  if (arguments.size() != fn.getNumArguments())
    return fn.emitError() << "expects " << fn.getNumArguments()
                          << " arguments, got " << arguments.size();
  Block &body = fn.getBody().front();
  for (auto [arg, tensor] : llvm::zip(body.getArguments(), arguments)) {
    if (shapeOf(arg) != tensor.shape)
      return fn.emitError() << "argument #" << arg.getArgNumber()
                            << " has the wrong shape";
    values[arg] = tensor;
  }
  for (Operation &op : body.without_terminator())
    if (failed(execute(&op)))
      return failure();
  std::vector<Tensor> results;
  for (Value v : body.getTerminator()->getOperands())
    results.push_back(get(v));
  return results;
}

LogicalResult FunctionInterpreter::execute(Operation *op) {
  if (auto call = llvm::dyn_cast<func::CallOp>(op)) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        op, call.getCalleeAttr());
    if (!callee)
      return op->emitError("unknown callee");
    std::vector<Tensor> args;
    for (Value v : call.getOperands())
      args.push_back(get(v));
    auto results = FunctionInterpreter(options).run(callee, args);
    if (failed(results))
      return failure();
    for (auto [v, t] : llvm::zip(call.getResults(), *results))
      values[v] = std::move(t);
    return success();
  }
  if (op->getNumResults() != 1 ||
      !llvm::isa<RankedTensorType>(op->getResult(0).getType()))
    return op->emitError("the interpreter does not support this op");
  FailureOr<Tensor> result = evaluate(op);
  if (failed(result))
    return failure();
  Type element =
      llvm::cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
  // Integers and i1 are exact in f64 too; --f64 only skips float rounding.
  if (!options.f64 || !llvm::isa<FloatType>(element))
    for (double &v : result->data)
      v = roundToElementType(v, element);
  values[op->getResult(0)] = std::move(*result);
  return success();
}

FailureOr<Tensor> FunctionInterpreter::evaluate(Operation *op) {
  auto unary = [&](double (*fn)(double)) {
    return map(get(op->getOperand(0)), fn);
  };
  auto binary = [&](double (*fn)(double, double)) {
    return zip(get(op->getOperand(0)), get(op->getOperand(1)), fn);
  };
  using R = FailureOr<Tensor>;
  return llvm::TypeSwitch<Operation *, R>(op)
      // Elementwise unary.
      .Case([&](tg::NegOp) { return unary([](double x) { return -x; }); })
      .Case([&](tg::AbsOp) { return unary([](double x) { return std::fabs(x); }); })
      .Case([&](tg::ExpOp) { return unary([](double x) { return std::exp(x); }); })
      .Case([&](tg::LogOp) { return unary([](double x) { return std::log(x); }); })
      .Case([&](tg::SqrtOp) { return unary([](double x) { return std::sqrt(x); }); })
      .Case([&](tg::RsqrtOp) {
        return unary([](double x) { return 1.0 / std::sqrt(x); });
      })
      .Case([&](tg::ReciprocalOp) {
        return unary([](double x) { return 1.0 / x; });
      })
      .Case([&](tg::TanhOp) { return unary([](double x) { return std::tanh(x); }); })
      .Case([&](tg::ErfOp) { return unary([](double x) { return std::erf(x); }); })
      .Case([&](tg::SigmoidOp) {
        return unary([](double x) { return 1.0 / (1.0 + std::exp(-x)); });
      })
      .Case([&](tg::SinOp) { return unary([](double x) { return std::sin(x); }); })
      .Case([&](tg::CosOp) { return unary([](double x) { return std::cos(x); }); })
      .Case([&](tg::ReluOp) {
        return unary([](double x) { return x > 0.0 ? x : 0.0; });
      })
      .Case([&](tg::NotOp) {
        return unary([](double x) { return x != 0.0 ? 0.0 : 1.0; });
      })
      .Case([&](tg::SiluOp) { return silu(get(op->getOperand(0))); })
      .Case([&](tg::GeluOp g) {
        return gelu(get(g.getInput()), g.getApproximate() == "tanh");
      })
      // Elementwise binary.
      .Case([&](tg::AddOp) { return binary([](double a, double b) { return a + b; }); })
      .Case([&](tg::SubOp) { return binary([](double a, double b) { return a - b; }); })
      .Case([&](tg::MulOp) { return binary([](double a, double b) { return a * b; }); })
      .Case([&](tg::DivOp d) -> R {
        if (isIntegerValue(d.getLhs()))
          return binary([](double a, double b) { return std::trunc(a / b); });
        return binary([](double a, double b) { return a / b; });
      })
      .Case([&](tg::PowOp) {
        return binary([](double a, double b) { return std::pow(a, b); });
      })
      .Case([&](tg::MaximumOp) {
        return binary([](double a, double b) { return std::isnan(a) || a > b ? a : b; });
      })
      .Case([&](tg::MinimumOp) {
        return binary([](double a, double b) { return std::isnan(a) || a < b ? a : b; });
      })
      .Case([&](tg::AndOp) {
        return binary([](double a, double b) { return a != 0 && b != 0 ? 1.0 : 0.0; });
      })
      .Case([&](tg::OrOp) {
        return binary([](double a, double b) { return a != 0 || b != 0 ? 1.0 : 0.0; });
      })
      .Case([&](tg::CompareOp c) -> R {
        StringRef p = c.getPredicate();
        std::function<bool(double, double)> cmp =
            p == "eq"   ? [](double a, double b) { return a == b; }
            : p == "ne" ? [](double a, double b) { return a != b; }
            : p == "lt" ? [](double a, double b) { return a < b; }
            : p == "le" ? [](double a, double b) { return a <= b; }
            : p == "gt" ? [](double a, double b) { return a > b; }
                        : [](double a, double b) { return a >= b; };
        return zip(get(c.getLhs()), get(c.getRhs()),
                   [&](double a, double b) { return cmp(a, b) ? 1.0 : 0.0; });
      })
      .Case([&](tg::SelectOp s) {
        return select(get(s.getCondition()), get(s.getOnTrue()),
                      get(s.getOnFalse()));
      })
      .Case([&](tg::ConvertOp c) {
        // Float to integer truncates; the result rounding does that.
        return get(c.getInput());
      })
      // Reductions.
      .Case([&](tg::SumOp r) {
        return reduce(get(r.getInput()), dimsOf(r.getDims(), r.getInput()),
                      r.getKeepdim(), ReduceKind::Sum);
      })
      .Case([&](tg::MaxOp r) {
        return reduce(get(r.getInput()), dimsOf(r.getDims(), r.getInput()),
                      r.getKeepdim(), ReduceKind::Max);
      })
      .Case([&](tg::MeanOp r) {
        return reduce(get(r.getInput()), dimsOf(r.getDims(), r.getInput()),
                      r.getKeepdim(), ReduceKind::Mean);
      })
      // Linear algebra and data movement.
      .Case([&](tg::MatmulOp m) { return matmul(get(m.getLhs()), get(m.getRhs())); })
      .Case([&](tg::ReshapeOp r) {
        return reshape(get(r.getInput()), shapeOf(r.getResult()));
      })
      .Case([&](tg::TransposeOp t) {
        return transpose(get(t.getInput()),
                         std::vector<int64_t>(t.getPermutation().begin(),
                                              t.getPermutation().end()));
      })
      .Case([&](tg::BroadcastOp b) {
        return broadcastTo(get(b.getInput()), shapeOf(b.getResult()));
      })
      .Case([&](tg::SliceOp s) {
        return slice(get(s.getInput()), dimOf(s.getDim(), s.getInput()),
                     s.getStart(), s.getEnd(), s.getStep());
      })
      .Case([&](tg::ConcatOp c) {
        std::vector<Tensor> inputs;
        for (Value v : c.getInputs())
          inputs.push_back(get(v));
        return concat(inputs, dimOf(c.getDim(), c.getInputs().front()));
      })
      .Case([&](tg::EmbeddingOp e) -> R {
        const Tensor &weight = get(e.getWeight());
        for (double i : get(e.getIndices()).data)
          if (i < 0 || i >= weight.shape[0])
            return e.emitError() << "index " << i << " is out of range [0, "
                                 << weight.shape[0] << ")";
        return embedding(weight, get(e.getIndices()));
      })
      .Case([&](tg::EmbeddingBackwardOp e) {
        return embeddingBackward(get(e.getGrad()), get(e.getIndices()),
                                 shapeOf(e.getResult())[0]);
      })
      .Case([&](tg::GatherOp g) -> R {
        int64_t dim = dimOf(g.getDim(), g.getInput());
        int64_t size = shapeOf(g.getInput())[dim];
        for (double i : get(g.getIndex()).data)
          if (i < 0 || i >= size)
            return g.emitError() << "index " << i << " is out of range [0, "
                                 << size << ")";
        return gather(get(g.getInput()), get(g.getIndex()), dim);
      })
      .Case([&](tg::ScatterAddOp s) {
        return scatterAdd(get(s.getIndex()), get(s.getSource()),
                          dimOf(s.getDim(), s.getResult()),
                          shapeOf(s.getResult()));
      })
      // Factories.
      .Case([&](tg::IotaOp i) {
        return iota(shapeOf(i.getResult()), dimOf(i.getDim(), i.getResult()));
      })
      .Case([&](tg::FullOp f) {
        return Tensor(shapeOf(f.getResult()), f.getValue().convertToDouble());
      })
      .Case([&](tg::ConstantOp c) { return constantTensor(c.getValue()); })
      .Case([&](tg::RandUniformOp r) {
        return randUniform(shapeOf(r.getResult()), r.getSeed());
      })
      // Composites.
      .Case([&](tg::LinearOp l) {
        // x @ w^T + b, through the primitive kernels.
        Tensor wT = transpose(get(l.getWeight()), {1, 0});
        Tensor y = matmul(get(l.getInput()), wT);
        if (l.getBias())
          y = zip(y, get(l.getBias()), [](double a, double b) { return a + b; });
        return y;
      })
      .Case([&](tg::SoftmaxOp s) {
        return softmax(get(s.getInput()), dimOf(s.getDim(), s.getInput()));
      })
      .Case([&](tg::LogSoftmaxOp s) {
        return logSoftmax(get(s.getInput()), dimOf(s.getDim(), s.getInput()));
      })
      .Case([&](tg::LayerNormOp l) {
        return layerNorm(get(l.getInput()), get(l.getWeight()),
                         get(l.getBias()), l.getEps().convertToDouble());
      })
      .Case([&](tg::RmsNormOp r) {
        return rmsNorm(get(r.getInput()), get(r.getWeight()),
                       r.getEps().convertToDouble());
      })
      .Case([&](tg::CrossEntropyOp c) -> R {
        int64_t classes = shapeOf(c.getLogits()).back();
        for (double l : get(c.getLabels()).data)
          if (l < 0 || l >= classes)
            return c.emitError() << "label " << l << " is out of range [0, "
                                 << classes << ")";
        return crossEntropy(get(c.getLogits()), get(c.getLabels()));
      })
      .Case([&](tg::ScaledDotProductAttentionOp a) {
        std::optional<double> scale;
        if (a.getScale())
          scale = a.getScale()->convertToDouble();
        return scaledDotProductAttention(get(a.getQuery()), get(a.getKey()),
                                         get(a.getValue()), a.getCausal(),
                                         scale);
      })
      .Case([&](tg::DropoutOp d) {
        return dropout(get(d.getInput()), d.getP().convertToDouble(),
                       d.getSeed());
      })
      .Default([&](Operation *other) -> R {
        return other->emitError("the interpreter does not support op '")
               << other->getName() << "'";
      });
}

} // namespace

FailureOr<std::vector<Tensor>> runFunction(func::FuncOp fn,
                                           ArrayRef<Tensor> arguments,
                                           const InterpreterOptions &options) {
  return FunctionInterpreter(options).run(fn, arguments);
}

} // namespace spmdc::interp
