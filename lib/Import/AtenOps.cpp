//===- AtenOps.cpp - core ATen ops of torch.export into tg ops ------------===//
//
// One mapping per ATen target that a decomposed training-IR export of MLP,
// GPT-2 and Llama style models produces (docs/pytorch.md lists them). Each
// reads the node's arguments by schema name and defines its outputs;
// element types follow the node's declared outputs (torch's promotion).
//
//===----------------------------------------------------------------------===//

#include "TorchExport.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <limits>

using namespace mlir;
using json = nlohmann::json;

namespace spmdc::torch_export {

Type scalarType(MLIRContext *context, int64_t code) {
  Builder b(context);
  // torch/_export/serde/schema.py ScalarType.
  switch (code) {
  case 4:
    return b.getI32Type();
  case 5:
    return b.getI64Type();
  case 6:
    return b.getF16Type();
  case 7:
    return b.getF32Type();
  case 8:
    return b.getF64Type();
  case 12:
    return b.getI1Type();
  case 13:
    return b.getBF16Type();
  default:
    return Type();
  }
}

//===----------------------------------------------------------------------===//
// Node
//===----------------------------------------------------------------------===//

const json *Node::arg(StringRef name) const {
  for (const json &input : node["inputs"])
    if (input.value("name", "") == name) {
      const json &a = input["arg"];
      if (a.contains("as_none"))
        return nullptr;
      return &a;
    }
  return nullptr;
}

FailureOr<Value> Node::tensor(StringRef name) {
  const nlohmann::json *a = arg(name);
  if (!a || !a->contains("as_tensor"))
    return error() << "expects a tensor argument '" << name << "'";
  Value v = lookup((*a)["as_tensor"].value("name", ""));
  if (!v)
    return error() << "argument '" << name << "' names an unknown value '"
                   << (*a)["as_tensor"].value("name", "") << "'";
  return v;
}

std::optional<Value> Node::optionalTensor(StringRef name) {
  const nlohmann::json *a = arg(name);
  if (!a || !a->contains("as_tensor"))
    return std::nullopt;
  Value v = lookup((*a)["as_tensor"].value("name", ""));
  return v ? std::optional<Value>(v) : std::nullopt;
}

FailureOr<SmallVector<Value>> Node::tensors(StringRef name) {
  const nlohmann::json *a = arg(name);
  if (!a || !a->contains("as_tensors"))
    return error() << "expects a tensor list argument '" << name << "'";
  SmallVector<Value> values;
  for (const nlohmann::json &t : (*a)["as_tensors"]) {
    Value v = lookup(t.value("name", ""));
    if (!v)
      return error() << "argument '" << name << "' names an unknown value";
    values.push_back(v);
  }
  return values;
}

/// An int of the union encodings (as_int, as_sym_int, as_bool).
static std::optional<int64_t> asInteger(const json &a) {
  if (a.contains("as_int") && a["as_int"].is_number_integer())
    return a["as_int"].get<int64_t>();
  if (a.contains("as_sym_int"))
    return asInteger(a["as_sym_int"]);
  if (a.contains("as_bool") && a["as_bool"].is_boolean())
    return a["as_bool"].get<bool>() ? 1 : 0;
  return std::nullopt;
}

FailureOr<int64_t> Node::integer(StringRef name,
                                 std::optional<int64_t> defaultValue) {
  const nlohmann::json *a = arg(name);
  if (!a) {
    if (defaultValue)
      return *defaultValue;
    return error() << "expects an integer argument '" << name << "'";
  }
  if (std::optional<int64_t> v = asInteger(*a))
    return *v;
  return error() << "argument '" << name << "' is not an integer: "
                 << a->dump();
}

FailureOr<SmallVector<int64_t>>
Node::integers(StringRef name, std::optional<SmallVector<int64_t>> defaultValue) {
  const nlohmann::json *a = arg(name);
  if (!a) {
    if (defaultValue)
      return *defaultValue;
    return error() << "expects an integer list argument '" << name << "'";
  }
  const char *key = a->contains("as_ints") ? "as_ints" : "as_sym_ints";
  if (!a->contains(key)) {
    if (std::optional<int64_t> one = asInteger(*a))
      return SmallVector<int64_t>{*one};
    return error() << "argument '" << name << "' is not an integer list: "
                   << a->dump();
  }
  SmallVector<int64_t> values;
  for (const nlohmann::json &v : (*a)[key]) {
    std::optional<int64_t> i =
        v.is_number_integer() ? std::optional(v.get<int64_t>()) : asInteger(v);
    if (!i)
      return error() << "argument '" << name
                     << "' holds a symbolic size; spmdc needs static shapes";
    values.push_back(*i);
  }
  return values;
}

/// A float that may be spelled "Infinity", "-Infinity" or "NaN".
static std::optional<double> asFloat(const json &v) {
  if (v.is_number())
    return v.get<double>();
  if (v == "Infinity")
    return std::numeric_limits<double>::infinity();
  if (v == "-Infinity")
    return -std::numeric_limits<double>::infinity();
  if (v == "NaN")
    return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

FailureOr<double> Node::number(StringRef name,
                               std::optional<double> defaultValue) {
  const nlohmann::json *a = arg(name);
  if (!a) {
    if (defaultValue)
      return *defaultValue;
    return error() << "expects a number argument '" << name << "'";
  }
  if (a->contains("as_float"))
    if (std::optional<double> v = asFloat((*a)["as_float"]))
      return *v;
  if (std::optional<int64_t> v = asInteger(*a))
    return static_cast<double>(*v);
  return error() << "argument '" << name << "' is not a number: " << a->dump();
}

FailureOr<bool> Node::boolean(StringRef name, bool defaultValue) {
  const nlohmann::json *a = arg(name);
  if (!a)
    return defaultValue;
  if (a->contains("as_bool") && (*a)["as_bool"].is_boolean())
    return (*a)["as_bool"].get<bool>();
  return error() << "argument '" << name << "' is not a bool: " << a->dump();
}

FailureOr<std::string> Node::string(StringRef name, std::string defaultValue) {
  const nlohmann::json *a = arg(name);
  if (!a)
    return defaultValue;
  if (a->contains("as_string") && (*a)["as_string"].is_string())
    return (*a)["as_string"].get<std::string>();
  return error() << "argument '" << name << "' is not a string: "
                 << a->dump();
}

bool Node::isFloatScalar(StringRef name) const {
  const nlohmann::json *a = arg(name);
  return a && a->contains("as_float");
}

FailureOr<Value> Node::tensorOrScalar(StringRef name, Type elementType) {
  if (std::optional<Value> t = optionalTensor(name))
    return *t;
  FailureOr<double> v = number(name);
  if (failed(v))
    return failure();
  return tg::buildScalar(b, loc, elementType, *v);
}

std::string Node::outputName(size_t i) const {
  size_t index = 0;
  for (const nlohmann::json &out : node["outputs"]) {
    if (out.contains("as_tensor")) {
      if (index++ == i)
        return out["as_tensor"].value("name", "");
    } else if (out.contains("as_tensors")) {
      for (const nlohmann::json &t : out["as_tensors"])
        if (index++ == i)
          return t.value("name", "");
    } else {
      ++index;
    }
  }
  return "";
}

size_t Node::numOutputs() const {
  size_t n = 0;
  for (const nlohmann::json &out : node["outputs"])
    n += out.contains("as_tensors") ? out["as_tensors"].size() : 1;
  return n;
}

RankedTensorType Node::outputType(size_t i) {
  return metaType(outputName(i));
}

Value Node::cast(Value value, Type elementType) {
  if (tg::typeOf(value).getElementType() == elementType)
    return value;
  return tg::ConvertOp::create(
      b, loc,
      RankedTensorType::get(tg::typeOf(value).getShape(), elementType), value);
}

LogicalResult Node::define(size_t i, Value value) {
  std::string name = outputName(i);
  if (name.empty())
    return success();
  RankedTensorType declared = metaType(name);
  if (!declared)
    return error() << "output '" << name << "' has no tensor metadata";
  if (tg::typeOf(value).getShape() != declared.getShape())
    return error() << "computes output '" << name << "' as "
                   << tg::typeOf(value) << " but the export declares "
                   << declared;
  defined.push_back({name, cast(value, declared.getElementType())});
  return success();
}

//===----------------------------------------------------------------------===//
// Mappings
//===----------------------------------------------------------------------===//

namespace {

#define TRY(decl, expr)                                                        \
  auto decl##OrFailure = (expr);                                               \
  if (failed(decl##OrFailure))                                                 \
    return failure();                                                          \
  auto decl = *decl##OrFailure;

Type outElement(Node &n) { return n.outputType(0).getElementType(); }

int64_t normalize(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

template <typename OpT>
Mapping unary() {
  return [](Node &n) -> LogicalResult {
    TRY(x, n.tensor("self"));
    // Float ops on integer inputs compute in the result's type.
    x = n.cast(x, outElement(n));
    return n.define(0, OpT::create(n.b, n.loc, x));
  };
}

/// a op b with both cast to the result's element type; `alpha` scales b.
template <typename OpT>
Mapping binary(bool hasAlpha = false) {
  return [hasAlpha](Node &n) -> LogicalResult {
    Type el = outElement(n);
    TRY(a, n.tensorOrScalar("self", el));
    TRY(b, n.tensorOrScalar("other", el));
    a = n.cast(a, el);
    b = n.cast(b, el);
    if (hasAlpha) {
      TRY(alpha, n.number("alpha", 1.0));
      if (alpha != 1.0)
        b = n.math().mul(b, n.math().scalar(b, alpha));
    }
    return n.define(0, OpT::create(n.b, n.loc, a, b));
  };
}

/// Comparisons in the wider of the operands' types.
Mapping comparison(StringRef predicate) {
  return [predicate](Node &n) -> LogicalResult {
    std::optional<Value> self = n.optionalTensor("self");
    if (!self)
      return n.error() << "expects a tensor 'self'";
    Type el = tg::typeOf(*self).getElementType();
    // A Python float against an integer tensor compares in floating point.
    if (!isa<FloatType>(el) && n.isFloatScalar("other"))
      el = n.b.getF64Type();
    TRY(other, n.tensorOrScalar("other", el));
    Type otherEl = tg::typeOf(other).getElementType();
    if (el != otherEl)
      el = isa<FloatType>(el) ? el
           : isa<FloatType>(otherEl) ? otherEl
                                      : n.b.getI64Type();
    return n.define(0, n.math().compare(predicate, n.cast(*self, el),
                                        n.cast(other, el)));
  };
}

Value toBool(Node &n, Value x) {
  if (tg::typeOf(x).getElementType().isInteger(1))
    return x;
  return n.math().compare("ne", x, n.math().scalar(x, 0.0));
}

/// Dims of a reduction: an empty or absent list means all of them.
FailureOr<SmallVector<int64_t>> reductionDims(Node &n, Value x,
                                              StringRef name) {
  TRY(dims, n.integers(name, SmallVector<int64_t>{}));
  if (dims.empty())
    for (int64_t d = 0; d < tg::typeOf(x).getRank(); ++d)
      dims.push_back(d);
  return dims;
}

template <typename OpT>
Mapping reduction(StringRef dimName) {
  return [dimName](Node &n) -> LogicalResult {
    TRY(x, n.tensor("self"));
    x = n.cast(x, outElement(n));
    TRY(dims, reductionDims(n, x, dimName));
    TRY(keep, n.boolean("keepdim", false));
    return n.define(0, OpT::create(n.b, n.loc, x, dims, keep));
  };
}

/// Ops that only relabel memory: the value itself.
LogicalResult identity(Node &n) {
  TRY(x, n.tensor("self"));
  return n.define(0, x);
}

/// Ops whose result is the input in a new shape (view, unsqueeze, ...).
LogicalResult reshapeToOutput(Node &n) {
  TRY(x, n.tensor("self"));
  RankedTensorType out = n.outputType(0);
  return n.define(0, tg::ReshapeOp::create(
                         n.b, n.loc,
                         RankedTensorType::get(out.getShape(),
                                               tg::typeOf(x).getElementType()),
                         x));
}

LogicalResult permute(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(dims, n.integers("dims"));
  for (int64_t &d : dims)
    d = normalize(d, tg::typeOf(x).getRank());
  return n.define(0, tg::TransposeOp::create(n.b, n.loc, x, dims));
}

LogicalResult transposeInt(Node &n) {
  TRY(x, n.tensor("self"));
  int64_t rank = tg::typeOf(x).getRank();
  TRY(d0, n.integer("dim0"));
  TRY(d1, n.integer("dim1"));
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[normalize(d0, rank)], perm[normalize(d1, rank)]);
  return n.define(0, tg::TransposeOp::create(n.b, n.loc, x, perm));
}

LogicalResult transpose2d(Node &n) {
  TRY(x, n.tensor("self"));
  if (tg::typeOf(x).getRank() < 2)
    return n.define(0, x);
  return n.define(0, tg::TransposeOp::create(n.b, n.loc, x,
                                             ArrayRef<int64_t>{1, 0}));
}

LogicalResult expand(Node &n) {
  TRY(x, n.tensor("self"));
  RankedTensorType out = n.outputType(0);
  if (tg::typeOf(x).getShape() == out.getShape())
    return n.define(0, x);
  return n.define(0, tg::BroadcastOp::create(
                         n.b, n.loc,
                         RankedTensorType::get(out.getShape(),
                                               tg::typeOf(x).getElementType()),
                         x));
}

LogicalResult matmul(Node &n) {
  TRY(a, n.tensor("self"));
  TRY(b, n.tensor(n.has("mat2") ? "mat2" : "other"));
  if (tg::typeOf(a).getRank() < 2 || tg::typeOf(b).getRank() < 2)
    return n.error() << "matmul of 1-D tensors is not supported";
  return n.define(0, tg::MatmulOp::create(n.b, n.loc, a, b));
}

LogicalResult addmm(Node &n) {
  TRY(bias, n.tensor("self"));
  TRY(a, n.tensor("mat1"));
  TRY(b, n.tensor("mat2"));
  TRY(beta, n.number("beta", 1.0));
  TRY(alpha, n.number("alpha", 1.0));
  tg::GraphMath m = n.math();
  Value product = tg::MatmulOp::create(n.b, n.loc, a, b);
  if (alpha != 1.0)
    product = m.mul(product, m.scalar(product, alpha));
  if (beta != 1.0)
    bias = m.mul(bias, m.scalar(bias, beta));
  return n.define(0, m.add(product, bias));
}

/// Python slice bounds: negative counts from the end, clamped to the dim.
LogicalResult slice(Node &n) {
  TRY(x, n.tensor("self"));
  int64_t rank = tg::typeOf(x).getRank();
  TRY(dim, n.integer("dim", 0));
  dim = normalize(dim, rank);
  int64_t size = tg::typeOf(x).getDimSize(dim);
  TRY(start, n.integer("start", 0));
  TRY(end, n.integer("end", std::numeric_limits<int64_t>::max()));
  TRY(step, n.integer("step", 1));
  auto clamp = [&](int64_t i) {
    if (i < 0)
      i += size;
    return std::clamp<int64_t>(i, 0, size);
  };
  start = clamp(start);
  end = std::max(clamp(end), start);
  return n.define(0, tg::SliceOp::create(n.b, n.loc, x, dim, start, end, step));
}

LogicalResult selectInt(Node &n) {
  TRY(x, n.tensor("self"));
  int64_t rank = tg::typeOf(x).getRank();
  TRY(dim, n.integer("dim"));
  TRY(index, n.integer("index"));
  dim = normalize(dim, rank);
  if (index < 0)
    index += tg::typeOf(x).getDimSize(dim);
  Value s = tg::SliceOp::create(n.b, n.loc, x, dim, index, index + 1, 1);
  RankedTensorType out = n.outputType(0);
  return n.define(0, tg::ReshapeOp::create(
                         n.b, n.loc,
                         RankedTensorType::get(out.getShape(),
                                               tg::typeOf(x).getElementType()),
                         s));
}

LogicalResult splitWithSizes(Node &n, bool bySize) {
  TRY(x, n.tensor("self"));
  TRY(dim, n.integer("dim", 0));
  dim = normalize(dim, tg::typeOf(x).getRank());
  int64_t size = tg::typeOf(x).getDimSize(dim);
  SmallVector<int64_t> sizes;
  if (bySize) {
    TRY(chunk, n.integer("split_size"));
    if (chunk <= 0)
      return n.error() << "split_size must be positive, got " << chunk;
    for (int64_t start = 0; start < size; start += chunk)
      sizes.push_back(std::min(chunk, size - start));
  } else {
    TRY(given, n.integers("split_sizes"));
    sizes = given;
  }
  int64_t start = 0;
  for (auto [i, s] : llvm::enumerate(sizes)) {
    if (failed(n.define(i, tg::SliceOp::create(n.b, n.loc, x, dim, start,
                                               start + s, 1))))
      return failure();
    start += s;
  }
  return success();
}

LogicalResult cat(Node &n) {
  TRY(xs, n.tensors("tensors"));
  TRY(dim, n.integer("dim", 0));
  Type el = outElement(n);
  for (Value &x : xs)
    x = n.cast(x, el);
  dim = normalize(dim, tg::typeOf(xs.front()).getRank());
  return n.define(0, tg::ConcatOp::create(n.b, n.loc, xs, dim));
}

LogicalResult toCopy(Node &n) {
  TRY(x, n.tensor("self"));
  return n.define(0, n.cast(x, outElement(n)));
}

/// weight and bias of a norm: given, or ones and zeros.
Value normParameter(Node &n, StringRef name, RankedTensorType type,
                    double fill) {
  if (std::optional<Value> t = n.optionalTensor(name))
    return *t;
  return tg::FullOp::create(n.b, n.loc, type, n.b.getF64FloatAttr(fill));
}

LogicalResult layerNorm(Node &n) {
  TRY(x, n.tensor("input"));
  TRY(shape, n.integers("normalized_shape"));
  TRY(eps, n.number("eps", 1e-5));
  auto paramType =
      RankedTensorType::get(shape, tg::typeOf(x).getElementType());
  Value w = normParameter(n, "weight", paramType, 1.0);
  Value b = normParameter(n, "bias", paramType, 0.0);
  Value y = tg::LayerNormOp::create(n.b, n.loc, x, w, b,
                                    n.b.getF64FloatAttr(eps));
  if (failed(n.define(0, y)))
    return failure();
  if (n.numOutputs() < 3)
    return success();
  // native_layer_norm also returns the mean and 1/std it normalized with.
  tg::GraphMath m = n.math();
  SmallVector<int64_t> dims;
  for (int64_t d = tg::typeOf(x).getRank() - shape.size();
       d < tg::typeOf(x).getRank(); ++d)
    dims.push_back(d);
  Value mean = m.mean(x, dims, true);
  Value centered = m.sub(x, mean);
  Value variance = m.mean(m.mul(centered, centered), dims, true);
  Value rstd = tg::RsqrtOp::create(n.b, n.loc,
                                   m.add(variance, m.scalar(variance, eps)));
  if (failed(n.define(1, mean)))
    return failure();
  return n.define(2, rstd);
}

template <typename OpT>
LogicalResult softmaxLike(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(dim, n.integer("dim"));
  x = n.cast(x, outElement(n));
  return n.define(0, OpT::create(n.b, n.loc, x, dim));
}

LogicalResult gelu(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(approximate, n.string("approximate", "none"));
  return n.define(0, tg::GeluOp::create(n.b, n.loc, x,
                                        n.b.getStringAttr(approximate)));
}

LogicalResult pow(Node &n) {
  Type el = outElement(n);
  TRY(a, n.tensorOrScalar("self", el));
  TRY(b, n.tensorOrScalar("exponent", el));
  return n.define(0, tg::PowOp::create(n.b, n.loc, n.cast(a, el),
                                       n.cast(b, el)));
}

LogicalResult where(Node &n) {
  TRY(c, n.tensor("condition"));
  Type el = outElement(n);
  TRY(a, n.tensorOrScalar("self", el));
  TRY(b, n.tensorOrScalar("other", el));
  return n.define(0, n.math().select(toBool(n, c), n.cast(a, el),
                                     n.cast(b, el)));
}

LogicalResult maskedFill(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(mask, n.tensor("mask"));
  TRY(value, n.tensorOrScalar("value", tg::typeOf(x).getElementType()));
  return n.define(0, n.math().select(toBool(n, mask),
                                     n.cast(value, tg::typeOf(x).getElementType()),
                                     x));
}

LogicalResult logicalNot(Node &n) {
  TRY(x, n.tensor("self"));
  return n.define(0, tg::NotOp::create(n.b, n.loc, toBool(n, x)));
}

template <typename OpT>
LogicalResult logicalBinary(Node &n) {
  TRY(a, n.tensor("self"));
  TRY(b, n.tensor("other"));
  return n.define(0, OpT::create(n.b, n.loc, toBool(n, a), toBool(n, b)));
}

LogicalResult anyDim(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(dims, reductionDims(n, x, n.has("dim") ? "dim" : "dims"));
  TRY(keep, n.boolean("keepdim", false));
  Value ints = n.cast(toBool(n, x), n.b.getI32Type());
  Value most = tg::MaxOp::create(n.b, n.loc, ints, dims, keep);
  return n.define(0, toBool(n, most));
}

/// full and full_like: the declared output filled with `fill_value`.
LogicalResult full(Node &n) {
  TRY(value, n.number("fill_value"));
  return n.define(0, tg::FullOp::create(n.b, n.loc, n.outputType(0),
                                        n.b.getF64FloatAttr(value)));
}

LogicalResult constantFill(Node &n, double value) {
  return n.define(0, tg::FullOp::create(n.b, n.loc, n.outputType(0),
                                        n.b.getF64FloatAttr(value)));
}

LogicalResult scalarTensor(Node &n) {
  TRY(value, n.number("s"));
  return n.define(0, tg::FullOp::create(n.b, n.loc, n.outputType(0),
                                        n.b.getF64FloatAttr(value)));
}

/// start + step * i, in the result's type.
LogicalResult arange(Node &n) {
  RankedTensorType out = n.outputType(0);
  TRY(start, n.number("start", 0.0));
  TRY(step, n.number("step", 1.0));
  tg::GraphMath m = n.math();
  Value i = tg::IotaOp::create(n.b, n.loc, out, 0);
  if (step != 1.0)
    i = m.mul(i, m.scalar(i, step));
  if (start != 0.0)
    i = m.add(i, m.scalar(i, start));
  return n.define(0, i);
}

LogicalResult embedding(Node &n) {
  TRY(w, n.tensor("weight"));
  TRY(indices, n.tensor("indices"));
  TRY(padding, n.integer("padding_idx", -1));
  if (padding != -1)
    return n.error() << "embedding with padding_idx (its row gets no "
                        "gradient) is not supported";
  return n.define(0, tg::EmbeddingOp::create(n.b, n.loc, w, indices));
}

LogicalResult gather(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(dim, n.integer("dim"));
  TRY(index, n.tensor("index"));
  return n.define(0, tg::GatherOp::create(
                         n.b, n.loc, x, index,
                         normalize(dim, tg::typeOf(x).getRank())));
}

LogicalResult linear(Node &n) {
  TRY(x, n.tensor("input"));
  TRY(w, n.tensor("weight"));
  std::optional<Value> bias = n.optionalTensor("bias");
  return n.define(0, tg::LinearOp::create(n.b, n.loc, x, w,
                                          bias ? *bias : Value()));
}

/// scaled_dot_product_attention and the CPU flash form run_decompositions
/// may leave (output, logsumexp): the output only.
LogicalResult attention(Node &n) {
  TRY(q, n.tensor("query"));
  TRY(k, n.tensor("key"));
  TRY(v, n.tensor("value"));
  if (n.optionalTensor("attn_mask"))
    return n.error() << "attention with an explicit mask is not supported";
  TRY(dropout, n.number("dropout_p", 0.0));
  if (dropout != 0.0)
    return n.error() << "attention dropout is not supported";
  TRY(causal, n.boolean("is_causal", false));
  FloatAttr scale;
  if (n.has("scale")) {
    TRY(s, n.number("scale"));
    scale = n.b.getF64FloatAttr(s);
  }
  Value out = tg::ScaledDotProductAttentionOp::create(
      n.b, n.loc, q, k, v, causal ? n.b.getUnitAttr() : UnitAttr(), scale);
  return n.define(0, out);
}

LogicalResult nativeDropout(Node &n) {
  TRY(x, n.tensor("input"));
  TRY(p, n.number("p"));
  TRY(train, n.boolean("train", true));
  if (!train || p == 0.0)
    return n.define(0, x);
  // A seed per node (its position in the graph): masks differ between
  // nodes, and each stays the same every step.
  Value y = tg::DropoutOp::create(n.b, n.loc, x, n.b.getF64FloatAttr(p),
                                  n.b.getI64IntegerAttr(n.index));
  return n.define(0, y);
}

LogicalResult noOutputs(Node &) { return success(); }

} // namespace

const llvm::StringMap<Mapping> &atenMappings() {
  static const llvm::StringMap<Mapping> table = [] {
    llvm::StringMap<Mapping> t;
    auto add = [&](StringRef op, Mapping m) {
      t["torch.ops.aten." + op.str()] = m;
    };
    // Elementwise.
    add("neg.default", unary<tg::NegOp>());
    add("abs.default", unary<tg::AbsOp>());
    add("exp.default", unary<tg::ExpOp>());
    add("log.default", unary<tg::LogOp>());
    add("sqrt.default", unary<tg::SqrtOp>());
    add("rsqrt.default", unary<tg::RsqrtOp>());
    add("reciprocal.default", unary<tg::ReciprocalOp>());
    add("tanh.default", unary<tg::TanhOp>());
    add("erf.default", unary<tg::ErfOp>());
    add("sigmoid.default", unary<tg::SigmoidOp>());
    add("sin.default", unary<tg::SinOp>());
    add("cos.default", unary<tg::CosOp>());
    add("relu.default", unary<tg::ReluOp>());
    add("silu.default", unary<tg::SiluOp>());
    add("gelu.default", gelu);
    for (StringRef overload : {"Tensor", "Scalar"}) {
      add(("add." + overload).str(), binary<tg::AddOp>(/*hasAlpha=*/true));
      add(("sub." + overload).str(), binary<tg::SubOp>(/*hasAlpha=*/true));
      add(("mul." + overload).str(), binary<tg::MulOp>());
      add(("div." + overload).str(), binary<tg::DivOp>());
      for (StringRef p : {"eq", "ne", "lt", "le", "gt", "ge"})
        add((p + "." + overload).str(), comparison(p));
    }
    add("maximum.default", binary<tg::MaximumOp>());
    add("minimum.default", binary<tg::MinimumOp>());
    add("pow.Tensor_Scalar", pow);
    add("pow.Tensor_Tensor", pow);
    add("where.self", where);
    add("masked_fill.Scalar", maskedFill);
    add("masked_fill.Tensor", maskedFill);
    add("logical_not.default", logicalNot);
    add("logical_and.default", logicalBinary<tg::AndOp>);
    add("logical_or.default", logicalBinary<tg::OrOp>);
    add("_to_copy.default", toCopy);
    // Reductions.
    add("sum.dim_IntList", reduction<tg::SumOp>("dim"));
    add("sum.default", reduction<tg::SumOp>("dim"));
    add("mean.dim", reduction<tg::MeanOp>("dim"));
    add("mean.default", reduction<tg::MeanOp>("dim"));
    add("amax.default", reduction<tg::MaxOp>("dim"));
    add("any.dim", anyDim);
    add("any.dims", anyDim);
    // Linear algebra.
    add("mm.default", matmul);
    add("bmm.default", matmul);
    add("matmul.default", matmul);
    add("addmm.default", addmm);
    add("linear.default", linear);
    // Shapes and data movement.
    for (StringRef op : {"view.default", "_unsafe_view.default",
                         "reshape.default", "unsqueeze.default",
                         "squeeze.dim", "squeeze.dims", "squeeze.default",
                         "flatten.using_ints"})
      add(op, reshapeToOutput);
    for (StringRef op : {"clone.default", "alias.default", "detach.default",
                         "lift_fresh_copy.default", "contiguous.default"})
      add(op, identity);
    add("permute.default", permute);
    add("transpose.int", transposeInt);
    add("t.default", transpose2d);
    add("expand.default", expand);
    add("slice.Tensor", slice);
    add("select.int", selectInt);
    add("split_with_sizes.default",
        [](Node &n) { return splitWithSizes(n, /*bySize=*/false); });
    add("split.Tensor", [](Node &n) { return splitWithSizes(n, true); });
    add("cat.default", cat);
    add("embedding.default", embedding);
    add("gather.default", gather);
    // Factories.
    add("full.default", full);
    add("full_like.default", full);
    add("zeros.default", [](Node &n) { return constantFill(n, 0.0); });
    add("zeros_like.default", [](Node &n) { return constantFill(n, 0.0); });
    add("ones.default", [](Node &n) { return constantFill(n, 1.0); });
    add("ones_like.default", [](Node &n) { return constantFill(n, 1.0); });
    add("scalar_tensor.default", scalarTensor);
    add("arange.default", arange);
    add("arange.start", arange);
    add("arange.start_step", arange);
    // Composites.
    add("native_layer_norm.default", layerNorm);
    add("layer_norm.default", layerNorm);
    add("_softmax.default", softmaxLike<tg::SoftmaxOp>);
    add("softmax.int", softmaxLike<tg::SoftmaxOp>);
    add("_log_softmax.default", softmaxLike<tg::LogSoftmaxOp>);
    add("log_softmax.int", softmaxLike<tg::LogSoftmaxOp>);
    add("scaled_dot_product_attention.default", attention);
    add("_scaled_dot_product_flash_attention_for_cpu.default", attention);
    add("native_dropout.default", nativeDropout);
    add("dropout.default", nativeDropout);
    // Checks torch leaves in the graph: nothing to compute.
    add("_assert_tensor_metadata.default", noOutputs);
    add("_assert_scalar.default", noOutputs);
    return t;
  }();
  return table;
}

} // namespace spmdc::torch_export
