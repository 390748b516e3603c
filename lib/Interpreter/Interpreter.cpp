//===- Interpreter.cpp - the reference interpreter of the tg dialect ------===//
//
// One case per op, each a call into Kernels.cpp; composites are computed
// directly, not through their decomposition, so that the interpreter can
// check `--tg-decompose`. N ranks run in lockstep, op by op; a dist
// collective is computed for each group from all its members' inputs.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Interpreter/Interpreter.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
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

using ValueMap = llvm::DenseMap<Value, Tensor>;

/// The largest tensor the interpreter computes (8 GiB of f64).
constexpr int64_t kMaxElements = int64_t(1) << 30;

/// Indices must lie in [0, bound): the kernels trust them.
LogicalResult checkIndices(Operation *op, const Tensor &indices,
                           int64_t bound) {
  for (double i : indices.data)
    if (i < 0 || i >= bound)
      return op->emitError() << "index " << static_cast<int64_t>(i)
                             << " is out of range [0, "
                             << bound << ")";
  return success();
}

/// Computes one tg op from one rank's values.
class OpEvaluator {
public:
  explicit OpEvaluator(const ValueMap &values) : values(values) {}
  FailureOr<Tensor> evaluate(Operation *op);

private:
  const Tensor &get(Value v) { return values.find(v)->second; }
  const ValueMap &values;
};

/// Chunk `index` of `parts` equal chunks of `x` along `dim`.
Tensor chunk(const Tensor &x, int64_t dim, int64_t parts, int64_t index) {
  int64_t size = x.shape[dim] / parts;
  return slice(x, dim, index * size, (index + 1) * size, 1);
}

/// Elementwise sum of same-shaped tensors, in the order given (so that every
/// member of a group gets the same bits).
Tensor sumOf(ArrayRef<const Tensor *> xs) {
  Tensor sum = *xs.front();
  for (const Tensor *x : xs.drop_front())
    for (size_t i = 0; i < sum.data.size(); ++i)
      sum.data[i] += x->data[i];
  return sum;
}

Tensor maxOf(ArrayRef<const Tensor *> xs) {
  Tensor max = *xs.front();
  for (const Tensor *x : xs.drop_front())
    for (size_t i = 0; i < max.data.size(); ++i)
      max.data[i] = std::max(max.data[i], x->data[i]);
  return max;
}

/// Runs a function on every rank of a mesh in lockstep: each op runs on all
/// ranks before the next one starts.
class SPMDInterpreter {
public:
  SPMDInterpreter(const dist::Mesh &mesh, const InterpreterOptions &options)
      : mesh(mesh), options(options) {}

  FailureOr<std::vector<std::vector<Tensor>>>
  run(func::FuncOp fn, std::vector<std::vector<Tensor>> argsPerRank);

private:
  int64_t numRanks() const { return mesh.numRanks(); }
  LogicalResult execute(Operation *op, std::vector<ValueMap> &values);
  LogicalResult call(func::CallOp op, std::vector<ValueMap> &values);
  /// Each rank's result of a dist op.
  FailureOr<std::vector<Tensor>> collective(Operation *op,
                                            ArrayRef<ValueMap> values);

  const dist::Mesh &mesh;
  const InterpreterOptions &options;
};

FailureOr<std::vector<std::vector<Tensor>>>
SPMDInterpreter::run(func::FuncOp fn,
                     std::vector<std::vector<Tensor>> argsPerRank) {
  if (fn.isExternal())
    return fn.emitError("cannot interpret a function without a body");
  if (static_cast<int64_t>(argsPerRank.size()) != numRanks())
    return fn.emitError() << "expects arguments for " << numRanks()
                          << " ranks, got " << argsPerRank.size();
  Block &body = fn.getBody().front();
  std::vector<ValueMap> values(numRanks());
  for (int64_t rank = 0; rank < numRanks(); ++rank) {
    std::vector<Tensor> &arguments = argsPerRank[rank];
    if (arguments.size() != fn.getNumArguments())
      return fn.emitError() << "expects " << fn.getNumArguments()
                            << " arguments, got " << arguments.size();
    for (auto [arg, tensor] : llvm::zip(body.getArguments(), arguments)) {
      if (shapeOf(arg) != tensor.shape)
        return fn.emitError()
               << "argument #" << arg.getArgNumber() << " has the wrong shape";
      values[rank][arg] = std::move(tensor);
    }
  }
  for (Operation &op : body.without_terminator())
    if (failed(execute(&op, values)))
      return failure();
  std::vector<std::vector<Tensor>> results(numRanks());
  for (int64_t rank = 0; rank < numRanks(); ++rank)
    for (Value v : body.getTerminator()->getOperands())
      results[rank].push_back(values[rank].find(v)->second);
  return results;
}

LogicalResult SPMDInterpreter::call(func::CallOp op,
                                    std::vector<ValueMap> &values) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      op, op.getCalleeAttr());
  if (!callee)
    return op->emitError("unknown callee");
  std::vector<std::vector<Tensor>> args(numRanks());
  for (int64_t rank = 0; rank < numRanks(); ++rank)
    for (Value v : op.getOperands())
      args[rank].push_back(values[rank].find(v)->second);
  auto results = run(callee, std::move(args));
  if (failed(results))
    return failure();
  for (int64_t rank = 0; rank < numRanks(); ++rank)
    for (auto [v, t] : llvm::zip(op.getResults(), (*results)[rank]))
      values[rank][v] = std::move(t);
  return success();
}

LogicalResult SPMDInterpreter::execute(Operation *op,
                                       std::vector<ValueMap> &values) {
  if (auto callOp = llvm::dyn_cast<func::CallOp>(op))
    return call(callOp, values);
  // A started collective's value is its result (the interpreter computes
  // it at the start; dist.wait passes it on).
  auto tensorTypeOf = [](Value v) -> RankedTensorType {
    if (auto pending = llvm::dyn_cast<dist::PendingType>(v.getType()))
      return pending.getResult();
    return llvm::dyn_cast<RankedTensorType>(v.getType());
  };
  if (op->getNumResults() != 1 || !tensorTypeOf(op->getResult(0)))
    return op->emitError("the interpreter does not support this op");
  // The interpreter holds every value as f64: refuse what cannot fit.
  int64_t elements = tensorTypeOf(op->getResult(0)).getNumElements();
  if (elements > kMaxElements)
    return op->emitError("the interpreter holds tensors of up to 2^30 "
                         "elements; this one has ")
           << elements;
  std::vector<Tensor> results;
  if (llvm::isa<dist::DistDialect>(op->getDialect())) {
    FailureOr<std::vector<Tensor>> collectiveResults = collective(op, values);
    if (failed(collectiveResults))
      return failure();
    results = std::move(*collectiveResults);
  } else {
    for (int64_t rank = 0; rank < numRanks(); ++rank) {
      // With several ranks, an error says whose it is.
      std::optional<ScopedDiagnosticHandler> naming;
      if (numRanks() > 1)
        naming.emplace(op->getContext(), [rank](Diagnostic &diag) {
          if (diag.getSeverity() == DiagnosticSeverity::Error)
            diag.attachNote() << "on rank " << rank;
          return failure(); // and on to the next handler
        });
      FailureOr<Tensor> result = OpEvaluator(values[rank]).evaluate(op);
      if (failed(result))
        return failure();
      results.push_back(std::move(*result));
    }
  }
  Value resultValue = op->getResult(0);
  RankedTensorType resultType = tensorTypeOf(resultValue);
  Shape expected(resultType.getShape().begin(), resultType.getShape().end());
  Type element = resultType.getElementType();
  for (int64_t rank = 0; rank < numRanks(); ++rank) {
    Tensor &result = results[rank];
    if (result.shape != expected)
      return op->emitError("the interpreter computed a result of the wrong "
                           "shape for this op");
    // Integers and i1 are exact in f64 too; --f64 only skips float rounding.
    if (!options.f64 || !llvm::isa<FloatType>(element))
      for (double &v : result.data)
        v = roundToElementType(v, element);
    values[rank][resultValue] = std::move(result);
  }
  return success();
}

FailureOr<std::vector<Tensor>>
SPMDInterpreter::collective(Operation *op, ArrayRef<ValueMap> values) {
  Value input = op->getOperand(0);
  auto axesOf = [&](ArrayAttr names) -> FailureOr<SmallVector<int>> {
    FailureOr<SmallVector<int>> axes = mesh.axisIndices(names);
    if (failed(axes))
      return op->emitError()
             << "names axes " << names << " that the interpreter's mesh (of "
             << numRanks() << " rank" << (numRanks() == 1 ? "" : "s")
             << ") does not have";
    return axes;
  };
  // The inputs of `rank`'s group, in group order, and `rank`'s index in it.
  auto groupInputs = [&](int64_t rank, ArrayRef<int> axes, int64_t &index) {
    SmallVector<const Tensor *> inputs;
    for (int64_t member : mesh.groupMembers(rank, axes))
      inputs.push_back(&values[member].find(input)->second);
    index = mesh.groupIndex(rank, axes);
    return inputs;
  };
  // `fn(group inputs, index)` for every rank.
  auto perRank =
      [&](ArrayAttr names,
          llvm::function_ref<Tensor(ArrayRef<const Tensor *>, int64_t)> fn)
      -> FailureOr<std::vector<Tensor>> {
    FailureOr<SmallVector<int>> axes = axesOf(names);
    if (failed(axes))
      return failure();
    std::vector<Tensor> results;
    for (int64_t rank = 0; rank < numRanks(); ++rank) {
      int64_t index;
      SmallVector<const Tensor *> inputs = groupInputs(rank, *axes, index);
      results.push_back(fn(inputs, index));
    }
    return results;
  };
  using R = FailureOr<std::vector<Tensor>>;
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case<dist::AllReduceOp, dist::StartAllReduceOp>([&](auto o) {
        bool max = o.getReduction() == dist::Reduction::max;
        return perRank(o.getAxes(),
                       [&](ArrayRef<const Tensor *> in, int64_t) {
                         return max ? maxOf(in) : sumOf(in);
                       });
      })
      .Case<dist::AllGatherOp, dist::StartAllGatherOp>([&](auto o) {
        int64_t dim = o.getDim();
        return perRank(o.getAxes(), [&](ArrayRef<const Tensor *> in, int64_t) {
          std::vector<Tensor> parts;
          for (const Tensor *t : in)
            parts.push_back(*t);
          return concat(parts, dim);
        });
      })
      .Case<dist::ReduceScatterOp, dist::StartReduceScatterOp>(
          [&](auto o) {
        int64_t dim = o.getDim();
        return perRank(o.getAxes(),
                       [&](ArrayRef<const Tensor *> in, int64_t index) {
                         return chunk(sumOf(in), dim, in.size(), index);
                       });
      })
      .Case<dist::AllToAllOp, dist::StartAllToAllOp>([&](auto o) {
        int64_t split = o.getSplitDim(), concatDim = o.getConcatDim();
        return perRank(o.getAxes(),
                       [&](ArrayRef<const Tensor *> in, int64_t index) {
                         std::vector<Tensor> parts;
                         for (const Tensor *t : in)
                           parts.push_back(chunk(*t, split, in.size(), index));
                         return concat(parts, concatDim);
                       });
      })
      .Case([&](dist::WaitOp o) -> R {
        std::vector<Tensor> results;
        for (int64_t rank = 0; rank < numRanks(); ++rank)
          results.push_back(values[rank].find(o.getPending())->second);
        return results;
      })
      .Case([&](dist::LocalSliceOp o) {
        int64_t dim = o.getDim();
        return perRank(o.getAxes(),
                       [&](ArrayRef<const Tensor *> in, int64_t index) {
                         return chunk(*in[index], dim, in.size(), index);
                       });
      })
      .Default([&](Operation *other) -> R {
        return other->emitError("the interpreter does not support op '")
               << other->getName() << "'";
      });
}

FailureOr<Tensor> OpEvaluator::evaluate(Operation *op) {
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
      .Case([&](tg::FloorOp) { return unary([](double x) { return std::floor(x); }); })
      .Case([&](tg::CeilOp) { return unary([](double x) { return std::ceil(x); }); })
      .Case([&](tg::TruncOp) { return unary([](double x) { return std::trunc(x); }); })
      // The default rounding mode: to nearest, halves to even.
      .Case([&](tg::RoundOp) { return unary([](double x) { return std::nearbyint(x); }); })
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
      // Exact for integers too: their values are whole doubles.
      .Case([&](tg::RemOp) {
        return binary([](double a, double b) { return std::fmod(a, b); });
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
        std::function<bool(double, double)> cmp;
        switch (c.getPredicate()) {
        case tg::ComparePredicate::eq:
          cmp = [](double a, double b) { return a == b; };
          break;
        case tg::ComparePredicate::ne:
          cmp = [](double a, double b) { return a != b; };
          break;
        case tg::ComparePredicate::lt:
          cmp = [](double a, double b) { return a < b; };
          break;
        case tg::ComparePredicate::le:
          cmp = [](double a, double b) { return a <= b; };
          break;
        case tg::ComparePredicate::gt:
          cmp = [](double a, double b) { return a > b; };
          break;
        case tg::ComparePredicate::ge:
          cmp = [](double a, double b) { return a >= b; };
          break;
        }
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
        if (failed(checkIndices(e, get(e.getIndices()), weight.shape[0])))
          return failure();
        return embedding(weight, get(e.getIndices()));
      })
      .Case([&](tg::EmbeddingBackwardOp e) -> R {
        int64_t rows = shapeOf(e.getResult())[0];
        if (failed(checkIndices(e, get(e.getIndices()), rows)))
          return failure();
        return embeddingBackward(get(e.getGrad()), get(e.getIndices()), rows);
      })
      .Case([&](tg::GatherOp g) -> R {
        int64_t dim = dimOf(g.getDim(), g.getInput());
        if (failed(checkIndices(g, get(g.getIndex()),
                                shapeOf(g.getInput())[dim])))
          return failure();
        return gather(get(g.getInput()), get(g.getIndex()), dim);
      })
      .Case([&](tg::ScatterAddOp s) -> R {
        int64_t dim = dimOf(s.getDim(), s.getResult());
        if (failed(checkIndices(s, get(s.getIndex()),
                                shapeOf(s.getResult())[dim])))
          return failure();
        return scatterAdd(get(s.getIndex()), get(s.getSource()), dim,
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
        if (failed(checkIndices(c, get(c.getLabels()),
                                shapeOf(c.getLogits()).back())))
          return failure();
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
  // One rank: a mesh of no axes.
  dist::Mesh single;
  std::vector<std::vector<Tensor>> args{
      std::vector<Tensor>(arguments.begin(), arguments.end())};
  auto results = runFunctionSPMD(fn, std::move(args), single, options);
  if (failed(results))
    return failure();
  return std::move(results->front());
}

FailureOr<std::vector<std::vector<Tensor>>>
runFunctionSPMD(func::FuncOp fn, std::vector<std::vector<Tensor>> argsPerRank,
                const dist::Mesh &mesh, const InterpreterOptions &options) {
  return SPMDInterpreter(mesh, options).run(fn, std::move(argsPerRank));
}

} // namespace spmdc::interp
