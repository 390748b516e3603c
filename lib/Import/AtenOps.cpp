//===- AtenOps.cpp - core ATen ops of torch.export into tg ops ------------===//
//
// One mapping per ATen target that a decomposed training-IR export of MLP,
// GPT-2 and Llama style models produces (docs/pytorch.md lists them). Each
// reads the node's arguments by schema name and defines its outputs;
// element types follow the node's declared outputs (torch's promotion).
//
//===----------------------------------------------------------------------===//

#include "TorchExport.h"

#include "spmdc/Runtime/Limits.h"
#include "spmdc/Support/ShapeString.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

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
  for (const json &input : node.at("inputs"))
    if (input.value("name", "") == name) {
      const json &a = input.at("arg");
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
  Value v = lookup(a->at("as_tensor").value("name", ""));
  if (!v)
    return error() << "argument '" << name << "' names an unknown value '"
                   << a->at("as_tensor").value("name", "") << "'";
  return v;
}

std::optional<Value> Node::optionalTensor(StringRef name) {
  const nlohmann::json *a = arg(name);
  if (!a || !a->contains("as_tensor"))
    return std::nullopt;
  Value v = lookup(a->at("as_tensor").value("name", ""));
  return v ? std::optional<Value>(v) : std::nullopt;
}

FailureOr<SmallVector<Value>> Node::tensors(StringRef name) {
  const nlohmann::json *a = arg(name);
  if (!a || !a->contains("as_tensors"))
    return error() << "expects a tensor list argument '" << name << "'";
  SmallVector<Value> values;
  for (const nlohmann::json &t : a->at("as_tensors")) {
    Value v = lookup(t.value("name", ""));
    if (!v)
      return error() << "argument '" << name << "' names an unknown value";
    values.push_back(v);
  }
  return values;
}

FailureOr<SmallVector<Value>> Node::optionalTensors(StringRef name) {
  const nlohmann::json *a = arg(name);
  // A list with no None in it is serialized as a plain tensor list.
  const char *key =
      a && a->contains("as_tensors") ? "as_tensors" : "as_optional_tensors";
  if (!a || !a->contains(key))
    return error() << "expects an optional tensor list argument '" << name
                   << "'";
  SmallVector<Value> values;
  for (const nlohmann::json &t : (*a)[key]) {
    if (std::string(key) == "as_tensors") {
      Value v = lookup(t.value("name", ""));
      if (!v)
        return error() << "argument '" << name << "' names an unknown value";
      values.push_back(v);
      continue;
    }
    if (!t.contains("as_tensor")) {
      values.push_back(Value());
      continue;
    }
    Value v = lookup(t.at("as_tensor").value("name", ""));
    if (!v)
      return error() << "argument '" << name << "' names an unknown value";
    values.push_back(v);
  }
  return values;
}

/// An int of the union encodings (as_int, as_sym_int, as_bool).
static std::optional<int64_t> asInteger(const json &a) {
  if (a.contains("as_int") && a.at("as_int").is_number_integer())
    return a.at("as_int").get<int64_t>();
  if (a.contains("as_sym_int"))
    return asInteger(a.at("as_sym_int"));
  if (a.contains("as_bool") && a.at("as_bool").is_boolean())
    return a.at("as_bool").get<bool>() ? 1 : 0;
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

LogicalResult Node::checkShape(ArrayRef<int64_t> shape, Type elementType,
                               const Twine &what) {
  uint64_t bytes;
  std::string sizeError;
  uint64_t elementBytes = (elementType.getIntOrFloatBitWidth() + 7) / 8;
  if (rt::checkTensorSize(std::vector<int64_t>(shape.begin(), shape.end()),
                          elementBytes, bytes, sizeError))
    return success();
  return error() << what << ": " << sizeError;
}

FailureOr<SmallVector<int64_t>> Node::sizes(StringRef name, MinusOne minusOne,
                                            ArrayRef<int64_t> input) {
  FailureOr<SmallVector<int64_t>> read = integers(name);
  if (failed(read))
    return failure();
  SmallVector<int64_t> given = *read, shape = *read;
  int64_t rank = shape.size(), inputRank = input.size();
  if (minusOne == MinusOne::Kept && rank < inputRank)
    return error() << "'" << name << "' " << shapeString(given) << " has "
                   << rank << " sizes, fewer than the input "
                   << shapeString(input) << " has dims";
  std::optional<int64_t> inferred;
  for (int64_t i = 0; i < rank; ++i) {
    if (shape[i] >= 0)
      continue;
    if (shape[i] != -1 || minusOne == MinusOne::Refused)
      return error() << "'" << name << "' " << shapeString(given)
                     << " holds a negative size " << shape[i];
    if (minusOne == MinusOne::Inferred) {
      if (inferred)
        return error() << "'" << name << "' " << shapeString(given)
                       << " leaves more than one dim (-1) to infer";
      inferred = i;
      continue;
    }
    // Kept: the input's size of this dim, which must exist.
    int64_t inputDim = i - (rank - inputRank);
    if (inputDim < 0)
      return error() << "'" << name << "' " << shapeString(given)
                     << " has a -1 at new leading dim " << i
                     << ", which has no size to keep";
    shape[i] = input[inputDim];
  }
  if (minusOne == MinusOne::Inferred) {
    // The input is an archive tensor or computed from one: its count fits.
    int64_t elements = 1, known = 1;
    for (int64_t d : input)
      elements *= d;
    for (auto [i, d] : llvm::enumerate(shape)) {
      if (inferred && static_cast<int64_t>(i) == *inferred)
        continue;
      std::optional<int64_t> product = llvm::checkedMul(known, d);
      if (!product)
        return error() << "'" << name << "' " << shapeString(given)
                       << " has more elements than a 64-bit count holds";
      known = *product;
    }
    if (inferred) {
      if (known == 0 || elements % known != 0)
        return error() << "'" << name << "' " << shapeString(given)
                       << " has no size for its -1 that gives the input's "
                       << elements << " elements (of " << shapeString(input)
                       << ")";
      shape[*inferred] = elements / known;
      known = elements;
    }
    if (known != elements)
      return error() << "'" << name << "' " << shapeString(given) << " has "
                     << known << " elements, but the input "
                     << shapeString(input) << " has " << elements;
  }
  if (minusOne == MinusOne::Kept)
    for (int64_t i = 0; i < inputRank; ++i) {
      int64_t from = input[i], to = shape[rank - inputRank + i];
      if (from != to && from != 1)
        return error() << "'" << name << "' " << shapeString(given)
                       << " expands the input " << shapeString(input)
                       << ": its dim " << i << " of size " << from
                       << " is not 1 and not " << to;
    }
  // The count only: the mappings check the shapes they build from these
  // with their element type (checkShape).
  int64_t count = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(count, d, &count))
      return error() << "'" << name << "' " << shapeString(given)
                     << " has more elements than a 64-bit count holds";
  return shape;
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
    if (std::optional<double> v = asFloat(a->at("as_float")))
      return *v;
  if (std::optional<int64_t> v = asInteger(*a))
    return static_cast<double>(*v);
  return error() << "argument '" << name << "' is not a number: " << a->dump();
}

FailureOr<bool> Node::boolean(StringRef name, bool defaultValue) {
  const nlohmann::json *a = arg(name);
  if (!a)
    return defaultValue;
  if (a->contains("as_bool") && a->at("as_bool").is_boolean())
    return a->at("as_bool").get<bool>();
  return error() << "argument '" << name << "' is not a bool: " << a->dump();
}

FailureOr<std::string> Node::string(StringRef name, std::string defaultValue) {
  const nlohmann::json *a = arg(name);
  if (!a)
    return defaultValue;
  if (a->contains("as_string") && a->at("as_string").is_string())
    return a->at("as_string").get<std::string>();
  return error() << "argument '" << name << "' is not a string: "
                 << a->dump();
}

std::optional<Node::Layout> Node::recordedLayout(StringRef name) const {
  const json *a = arg(name);
  if (!a || !metaEntry || !a->contains("as_tensor") ||
      !a->at("as_tensor").is_object())
    return std::nullopt;
  const json *meta = metaEntry(a->at("as_tensor").value("name", ""));
  if (!meta || !meta->is_object() || !meta->contains("strides") ||
      !meta->at("strides").is_array())
    return std::nullopt;
  auto integer = [](const json &entry) -> std::optional<int64_t> {
    if (!entry.is_object() || !entry.contains("as_int") ||
        !entry.at("as_int").is_number_integer())
      return std::nullopt;
    return entry.at("as_int").get<int64_t>();
  };
  Layout layout;
  for (const json &entry : meta->at("strides")) {
    std::optional<int64_t> stride = integer(entry);
    if (!stride)
      return std::nullopt;
    layout.strides.push_back(*stride);
  }
  if (meta->contains("storage_offset")) {
    std::optional<int64_t> offset = integer(meta->at("storage_offset"));
    if (!offset)
      return std::nullopt;
    layout.storageOffset = *offset;
  }
  return layout;
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
  for (const nlohmann::json &out : node.at("outputs")) {
    if (out.contains("as_tensor")) {
      if (index++ == i)
        return out.at("as_tensor").value("name", "");
    } else if (out.contains("as_tensors")) {
      for (const nlohmann::json &t : out.at("as_tensors"))
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
  for (const nlohmann::json &out : node.at("outputs"))
    n += out.contains("as_tensors") ? out.at("as_tensors").size() : 1;
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

LogicalResult Node::addInferredTypes(
    OperationState &state,
    function_ref<LogicalResult(SmallVectorImpl<Type> &)> rule) {
  // The tg rules say why they fail (emitOptionalError at the node); this
  // watches for an error so that one that did not is not a silent failure.
  bool reported = false;
  SmallVector<Type> types;
  LogicalResult inferred = failure();
  {
    ScopedDiagnosticHandler watch(b.getContext(), [&](Diagnostic &diag) {
      reported |= diag.getSeverity() == DiagnosticSeverity::Error;
      return failure(); // Passed on to the importer's handler.
    });
    inferred = rule(types);
  }
  if (succeeded(inferred)) {
    state.addTypes(types);
    return success();
  }
  if (!reported)
    error() << "'" << state.name << "' refuses operands of types "
            << ValueRange(state.operands).getTypes();
  return failure();
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

/// `dim` (negative: from the end) as an index into a tensor of rank
/// `rank`, in place; an error at the node when it is not one. An archive's
/// dims are claims: one out of range would index past a shape (found by
/// fuzz/pt2-fuzzer.cpp), so every mapping checks them here.
LogicalResult normalizeDim(Node &n, int64_t &dim, int64_t rank) {
  int64_t normalized = dim < 0 ? dim + rank : dim;
  if (normalized < 0 || normalized >= rank)
    return n.error() << "dim " << dim << " is out of range for a tensor of rank "
                     << rank;
  dim = normalized;
  return success();
}

template <typename OpT>
Mapping unary() {
  return [](Node &n) -> LogicalResult {
    TRY(x, n.tensor("self"));
    // Float ops on integer inputs compute in the result's type.
    x = n.cast(x, outElement(n));
    return n.define(0, n.create<OpT>(x));
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
    return n.define(0, n.create<OpT>(a, b));
  };
}

/// Comparisons in the wider of the operands' types.
Mapping comparison(tg::ComparePredicate predicate) {
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
    return n.define(0, n.create<tg::CompareOp>(predicate, n.cast(*self, el),
                                               n.cast(other, el)));
  };
}

Value toBool(Node &n, Value x) {
  if (tg::typeOf(x).getElementType().isInteger(1))
    return x;
  return n.math().compare(tg::ComparePredicate::ne, x, n.math().scalar(x, 0.0));
}

/// Dims of a reduction: an empty or absent list means all of them. They
/// pass the reductions' shape rule (in range, none repeated) here, for the
/// mappings that reduce through GraphMath, which does not check them.
FailureOr<SmallVector<int64_t>> reductionDims(Node &n, Value x,
                                              StringRef name) {
  TRY(dims, n.integers(name, SmallVector<int64_t>{}));
  if (dims.empty())
    for (int64_t d = 0; d < tg::typeOf(x).getRank(); ++d)
      dims.push_back(d);
  if (failed(n.check<tg::SumOp>(x, dims, /*keepdim=*/false)))
    return failure();
  return dims;
}

template <typename OpT>
Mapping reduction(StringRef dimName) {
  return [dimName](Node &n) -> LogicalResult {
    TRY(x, n.tensor("self"));
    x = n.cast(x, outElement(n));
    TRY(dims, reductionDims(n, x, dimName));
    TRY(keep, n.boolean("keepdim", false));
    return n.define(0, n.create<OpT>(x, dims, keep));
  };
}

/// Ops that only relabel memory: the value itself.
LogicalResult identity(Node &n) {
  TRY(x, n.tensor("self"));
  return n.define(0, x);
}

/// `x` in `shape`, which must hold as many elements.
FailureOr<Value> reshapeTo(Node &n, Value x, ArrayRef<int64_t> shape) {
  RankedTensorType type = tg::typeOf(x);
  auto reshaped = RankedTensorType::get(shape, type.getElementType());
  if (reshaped.getNumElements() != type.getNumElements())
    return n.error() << "reshapes " << type << " to " << reshaped
                     << ": the element counts differ";
  return tg::ReshapeOp::create(n.b, n.loc, reshaped, x).getResult();
}

/// Ops whose result is the input in the declared output's shape
/// (unsqueeze, squeeze, flatten).
LogicalResult reshapeToOutput(Node &n) {
  TRY(x, n.tensor("self"));
  return n.define(0, reshapeTo(n, x, n.outputType(0).getShape()));
}

/// view, _unsafe_view and reshape: the input in the shape their size
/// argument `sizeName` gives (one -1 inferred from the element count),
/// which the declared output must have.
Mapping viewAs(StringRef sizeName) {
  return [sizeName](Node &n) -> LogicalResult {
    TRY(x, n.tensor("self"));
    TRY(shape,
        n.sizes(sizeName, Node::MinusOne::Inferred, tg::typeOf(x).getShape()));
    return n.define(0, reshapeTo(n, x, shape));
  };
}

LogicalResult permute(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(dims, n.integers("dims"));
  int64_t rank = tg::typeOf(x).getRank();
  if (static_cast<int64_t>(dims.size()) != rank)
    return n.error() << "permute of a tensor of rank " << rank << " takes "
                     << rank << " dims, not " << dims.size();
  llvm::SmallBitVector seen(rank);
  for (int64_t &d : dims) {
    if (failed(normalizeDim(n, d, rank)))
      return failure();
    if (seen.test(d))
      return n.error() << "permute's dims repeat dim " << d;
    seen.set(d);
  }
  return n.define(0, n.create<tg::TransposeOp>(x, dims));
}

LogicalResult transposeInt(Node &n) {
  TRY(x, n.tensor("self"));
  int64_t rank = tg::typeOf(x).getRank();
  TRY(d0, n.integer("dim0"));
  TRY(d1, n.integer("dim1"));
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  if (failed(normalizeDim(n, d0, rank)) || failed(normalizeDim(n, d1, rank)))
    return failure();
  std::swap(perm[d0], perm[d1]);
  return n.define(0, n.create<tg::TransposeOp>(x, perm));
}

LogicalResult transpose2d(Node &n) {
  TRY(x, n.tensor("self"));
  if (tg::typeOf(x).getRank() < 2)
    return n.define(0, x);
  return n.define(0, n.create<tg::TransposeOp>(x, ArrayRef<int64_t>{1, 0}));
}

/// expand: `self` broadcast to its size argument (-1 keeps a dim), which
/// the declared output must have.
LogicalResult expand(Node &n) {
  TRY(x, n.tensor("self"));
  RankedTensorType type = tg::typeOf(x);
  TRY(shape, n.sizes("size", Node::MinusOne::Kept, type.getShape()));
  if (type.getShape() == ArrayRef<int64_t>(shape))
    return n.define(0, x);
  if (failed(n.checkShape(shape, type.getElementType(), "expand's result")))
    return failure();
  return n.define(
      0,
      tg::BroadcastOp::create(
          n.b, n.loc, RankedTensorType::get(shape, type.getElementType()), x));
}

LogicalResult matmul(Node &n) {
  TRY(a, n.tensor("self"));
  TRY(b, n.tensor(n.has("mat2") ? "mat2" : "other"));
  if (tg::typeOf(a).getRank() < 2 || tg::typeOf(b).getRank() < 2)
    return n.error() << "matmul of 1-D tensors is not supported";
  return n.define(0, n.create<tg::MatmulOp>(a, b));
}

LogicalResult addmm(Node &n) {
  TRY(bias, n.tensor("self"));
  TRY(a, n.tensor("mat1"));
  TRY(b, n.tensor("mat2"));
  TRY(beta, n.number("beta", 1.0));
  TRY(alpha, n.number("alpha", 1.0));
  TRY(product, n.create<tg::MatmulOp>(a, b));
  tg::GraphMath m = n.math();
  if (alpha != 1.0)
    product = m.mul(product, m.scalar(product, alpha));
  if (beta != 1.0)
    bias = m.mul(bias, m.scalar(bias, beta));
  return n.define(0, n.create<tg::AddOp>(product, bias));
}

/// Python slice bounds: negative counts from the end, clamped to the dim.
LogicalResult slice(Node &n) {
  TRY(x, n.tensor("self"));
  int64_t rank = tg::typeOf(x).getRank();
  TRY(dim, n.integer("dim", 0));
  if (failed(normalizeDim(n, dim, rank)))
    return failure();
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
  return n.define(0, n.create<tg::SliceOp>(x, dim, start, end, step));
}

LogicalResult selectInt(Node &n) {
  TRY(x, n.tensor("self"));
  int64_t rank = tg::typeOf(x).getRank();
  TRY(dim, n.integer("dim"));
  TRY(index, n.integer("index"));
  if (failed(normalizeDim(n, dim, rank)))
    return failure();
  int64_t size = tg::typeOf(x).getDimSize(dim);
  // Checked here: index + 1 of the archive's INT64_MAX would overflow.
  if (index < -size || index >= size)
    return n.error() << "select index " << index
                     << " is out of range for a dim of size " << size;
  if (index < 0)
    index += size;
  TRY(s, n.create<tg::SliceOp>(x, dim, index, index + 1, 1));
  SmallVector<int64_t> shape(tg::typeOf(x).getShape());
  shape.erase(shape.begin() + dim);
  return n.define(0, reshapeTo(n, s, shape));
}

LogicalResult splitWithSizes(Node &n, bool bySize) {
  TRY(x, n.tensor("self"));
  TRY(dim, n.integer("dim", 0));
  if (failed(normalizeDim(n, dim, tg::typeOf(x).getRank())))
    return failure();
  int64_t size = tg::typeOf(x).getDimSize(dim);
  SmallVector<int64_t> sizes;
  if (bySize) {
    TRY(chunk, n.integer("split_size"));
    if (chunk <= 0)
      return n.error() << "split_size must be positive, got " << chunk;
    for (int64_t start = 0; start < size; start += chunk)
      sizes.push_back(std::min(chunk, size - start));
  } else {
    TRY(given, n.sizes("split_sizes"));
    std::optional<int64_t> total = 0;
    for (int64_t s : given)
      total = total ? llvm::checkedAdd(*total, s) : std::nullopt;
    if (total != size)
      return n.error() << "split_sizes " << shapeString(given)
                       << " do not add up to the size " << size << " of dim "
                       << dim;
    sizes = given;
  }
  int64_t start = 0;
  for (auto [i, s] : llvm::enumerate(sizes)) {
    if (failed(n.define(i, n.create<tg::SliceOp>(x, dim, start, start + s, 1))))
      return failure();
    start += s;
  }
  return success();
}

LogicalResult cat(Node &n) {
  TRY(given, n.tensors("tensors"));
  TRY(dim, n.integer("dim", 0));
  Type el = outElement(n);
  RankedTensorType out = n.outputType(0);
  // torch.cat skips empty 1-D tensors whatever the others' rank (an empty
  // key/value cache), and empty pieces add nothing.
  SmallVector<Value> xs;
  for (Value x : given) {
    RankedTensorType t = tg::typeOf(x);
    if (t.getNumElements() == 0 && (t.getRank() == 1 || given.size() > 1))
      continue;
    if (t.getRank() != out.getRank())
      return n.error() << "cat of " << t << " into " << out
                       << ": the ranks differ";
    xs.push_back(n.cast(x, el));
  }
  if (xs.empty())
    return n.define(0, tg::buildZeros(n.b, n.loc, out));
  if (xs.size() == 1)
    return n.define(0, xs.front());
  if (failed(normalizeDim(n, dim, out.getRank())))
    return failure();
  return n.define(0, n.create<tg::ConcatOp>(xs, dim));
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
  // The statistics below reduce over these dims (through GraphMath).
  RankedTensorType type = tg::typeOf(x);
  if (shape.size() > static_cast<size_t>(type.getRank()) ||
      type.getShape().take_back(shape.size()) != ArrayRef<int64_t>(shape))
    return n.error() << "normalized_shape " << shapeString(shape)
                     << " is not the last dims of the input " << type;
  auto paramType = RankedTensorType::get(shape, type.getElementType());
  Value w = normParameter(n, "weight", paramType, 1.0);
  Value b = normParameter(n, "bias", paramType, 0.0);
  if (failed(n.define(
          0, n.create<tg::LayerNormOp>(x, w, b, n.b.getF64FloatAttr(eps)))))
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
  TRY(rstd, n.create<tg::RsqrtOp>(m.add(variance, m.scalar(variance, eps))));
  if (failed(n.define(1, mean)))
    return failure();
  return n.define(2, rstd);
}

template <typename OpT>
LogicalResult softmaxLike(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(dim, n.integer("dim"));
  x = n.cast(x, outElement(n));
  return n.define(0, n.create<OpT>(x, dim));
}

LogicalResult gelu(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(approximate, n.string("approximate", "none"));
  return n.define(0, n.create<tg::GeluOp>(x, n.b.getStringAttr(approximate)));
}

LogicalResult pow(Node &n) {
  Type el = outElement(n);
  TRY(a, n.tensorOrScalar("self", el));
  TRY(b, n.tensorOrScalar("exponent", el));
  return n.define(0, n.create<tg::PowOp>(n.cast(a, el), n.cast(b, el)));
}

LogicalResult where(Node &n) {
  TRY(c, n.tensor("condition"));
  Type el = outElement(n);
  TRY(a, n.tensorOrScalar("self", el));
  TRY(b, n.tensorOrScalar("other", el));
  return n.define(
      0, n.create<tg::SelectOp>(toBool(n, c), n.cast(a, el), n.cast(b, el)));
}

LogicalResult maskedFill(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(mask, n.tensor("mask"));
  Type el = tg::typeOf(x).getElementType();
  TRY(value, n.tensorOrScalar("value", el));
  return n.define(
      0, n.create<tg::SelectOp>(toBool(n, mask), n.cast(value, el), x));
}

LogicalResult logicalNot(Node &n) {
  TRY(x, n.tensor("self"));
  return n.define(0, n.create<tg::NotOp>(toBool(n, x)));
}

template <typename OpT>
LogicalResult logicalBinary(Node &n) {
  TRY(a, n.tensor("self"));
  TRY(b, n.tensor("other"));
  return n.define(0, n.create<OpT>(toBool(n, a), toBool(n, b)));
}

LogicalResult anyDim(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(dims, reductionDims(n, x, n.has("dim") ? "dim" : "dims"));
  TRY(keep, n.boolean("keepdim", false));
  Value ints = n.cast(toBool(n, x), n.b.getI32Type());
  TRY(most, n.create<tg::MaxOp>(ints, dims, keep));
  return n.define(0, toBool(n, most));
}

/// The declared output filled with `value`; for the factories that take a
/// size argument (full, zeros, ones; not the _like ones), that size, which
/// the declared output must have.
LogicalResult fill(Node &n, double value) {
  RankedTensorType out = n.outputType(0);
  if (n.has("size")) {
    TRY(shape, n.sizes("size"));
    if (out.getShape() != ArrayRef<int64_t>(shape))
      return n.error() << "'size' " << shapeString(shape)
                       << " differs from the declared output " << out;
  }
  return n.define(
      0, tg::FullOp::create(n.b, n.loc, out, n.b.getF64FloatAttr(value)));
}

/// full and full_like: filled with `fill_value`.
LogicalResult full(Node &n) {
  TRY(value, n.number("fill_value"));
  return fill(n, value);
}

LogicalResult constantFill(Node &n, double value) { return fill(n, value); }

LogicalResult scalarTensor(Node &n) {
  TRY(value, n.number("s"));
  return n.define(0, tg::FullOp::create(n.b, n.loc, n.outputType(0),
                                        n.b.getF64FloatAttr(value)));
}

/// start + step * i, in the result's type, whose length must be
/// torch.arange's: ceil((end - start) / step) elements, none when the step
/// goes away from end.
LogicalResult arange(Node &n) {
  RankedTensorType out = n.outputType(0);
  TRY(start, n.number("start", 0.0));
  TRY(end, n.number("end"));
  TRY(step, n.number("step", 1.0));
  auto shown = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return std::string(text);
  };
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end) ||
      !std::isfinite(step))
    return n.error() << "arange needs a finite start and end and a nonzero "
                        "finite step, got start "
                     << shown(start) << ", end " << shown(end) << ", step "
                     << shown(step);
  double length = std::max(0.0, std::ceil((end - start) / step));
  if (out.getRank() != 1 || out.getDimSize(0) != length)
    return n.error() << "arange from " << shown(start) << " to "
                     << shown(end) << " by " << shown(step) << " has "
                     << shown(length) << " elements, but its output is "
                     << out;
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
  // PyTorch's -1 means none; a negative index counts from the end (of a
  // weight with rows: the op's shape rule refuses one without).
  IntegerAttr paddingAttr;
  if (padding != -1) {
    if (padding < 0 && tg::typeOf(w).getRank() > 0)
      padding += tg::typeOf(w).getDimSize(0);
    paddingAttr = n.b.getI64IntegerAttr(padding);
  }
  return n.define(0, n.create<tg::EmbeddingOp>(w, indices, paddingAttr));
}

LogicalResult gather(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(dim, n.integer("dim"));
  TRY(index, n.tensor("index"));
  if (failed(normalizeDim(n, dim, tg::typeOf(x).getRank())))
    return failure();
  return n.define(0, n.create<tg::GatherOp>(x, index, dim));
}

LogicalResult linear(Node &n) {
  TRY(x, n.tensor("input"));
  TRY(w, n.tensor("weight"));
  std::optional<Value> bias = n.optionalTensor("bias");
  return n.define(0, n.create<tg::LinearOp>(x, w, bias ? *bias : Value()));
}

/// scaled_dot_product_attention and the CPU flash form run_decompositions
/// may leave (output, logsumexp): the output only.
LogicalResult attention(Node &n) {
  TRY(q, n.tensor("query"));
  TRY(k, n.tensor("key"));
  TRY(v, n.tensor("value"));
  std::optional<Value> mask = n.optionalTensor("attn_mask");
  if (mask && !tg::typeOf(*mask).getElementType().isInteger(1))
    *mask = n.cast(*mask, tg::typeOf(q).getElementType());
  TRY(gqa, n.boolean("enable_gqa", true));
  TRY(dropout, n.number("dropout_p", 0.0));
  if (dropout != 0.0)
    return n.error() << "attention dropout is not supported";
  TRY(causal, n.boolean("is_causal", false));
  FloatAttr scale;
  if (n.has("scale")) {
    TRY(s, n.number("scale"));
    scale = n.b.getF64FloatAttr(s);
  }
  TRY(out, n.create<tg::ScaledDotProductAttentionOp>(
               q, k, v, mask ? *mask : Value(),
               causal ? n.b.getUnitAttr() : UnitAttr(), scale));
  // The shape rule has made the operands [B, H, S, D].
  if (!gqa && tg::typeOf(q).getDimSize(1) != tg::typeOf(k).getDimSize(1))
    return n.error() << "attention with fewer key/value heads needs "
                        "enable_gqa=True";
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
  return n.define(0, n.create<tg::DropoutOp>(x, n.b.getF64FloatAttr(p),
                                             n.b.getI64IntegerAttr(n.index)));
}

/// pow.Scalar: a number raised to a tensor (RoPE's `theta ** (i / d)`).
LogicalResult powScalarBase(Node &n) {
  Type el = outElement(n);
  TRY(base, n.number("self"));
  TRY(exponent, n.tensor("exponent"));
  exponent = n.cast(exponent, el);
  return n.define(
      0, n.create<tg::PowOp>(n.math().scalar(exponent, base), exponent));
}

/// Bitwise ops on booleans are the logical ones; integer bit patterns have
/// no tg op.
template <typename OpT> LogicalResult bitwiseBinary(Node &n) {
  TRY(a, n.tensorOrScalar("self", n.b.getI1Type()));
  TRY(b, n.tensorOrScalar("other", n.b.getI1Type()));
  if (!tg::typeOf(a).getElementType().isInteger(1) ||
      !tg::typeOf(b).getElementType().isInteger(1))
    return n.error() << "bitwise ops on integer tensors are not supported "
                        "(on booleans they are)";
  return n.define(0, n.create<OpT>(a, b));
}

LogicalResult bitwiseNot(Node &n) {
  TRY(x, n.tensor("self"));
  if (!tg::typeOf(x).getElementType().isInteger(1))
    return n.error() << "bitwise_not of an integer tensor is not supported "
                        "(of a boolean it is)";
  return n.define(0, n.create<tg::NotOp>(x));
}

/// constant_pad_nd: pairs (before, after) from the last dim backwards; a
/// negative amount crops.
LogicalResult constantPad(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(pad, n.integers("pad"));
  TRY(value, n.number("value", 0.0));
  int64_t rank = tg::typeOf(x).getRank();
  if (pad.size() % 2 != 0 || static_cast<int64_t>(pad.size()) > 2 * rank)
    return n.error() << "pad needs pairs for at most " << rank << " dims, got "
                     << pad.size() << " values";
  // The result's shape first, from amounts that are the archive's claims:
  // a crop past the dim, or a size that overflows, is refused here.
  RankedTensorType type = tg::typeOf(x);
  SmallVector<int64_t> shape(type.getShape());
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    int64_t dim = rank - 1 - i, before = pad[2 * i], after = pad[2 * i + 1];
    int64_t size = shape[dim];
    std::optional<int64_t> padded = llvm::checkedAdd(size, before);
    padded = padded ? llvm::checkedAdd(*padded, after) : std::nullopt;
    if (before < -size || after < -size || !padded || *padded < 0)
      return n.error() << "pad (" << before << ", " << after << ") of dim "
                       << dim << " of size " << size
                       << (padded ? " crops more than the dim holds"
                                  : " gives a size a 64-bit count cannot hold");
    shape[dim] = *padded;
  }
  if (failed(n.checkShape(shape, type.getElementType(),
                          "constant_pad_nd's result")))
    return failure();
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    int64_t dim = rank - 1 - i, before = pad[2 * i], after = pad[2 * i + 1];
    int64_t size = tg::typeOf(x).getDimSize(dim);
    int64_t start = std::max<int64_t>(0, -before),
            end = size - std::max<int64_t>(0, -after);
    if (start != 0 || end != size) {
      TRY(cropped, n.create<tg::SliceOp>(x, dim, start, end, 1));
      x = cropped;
    }
    x = tg::padAlongDim(n.b, n.loc, x, dim, std::max<int64_t>(0, before),
                        std::max<int64_t>(0, after), value);
  }
  return n.define(0, x);
}

/// copy(self, src): src broadcast into self's shape and element type.
LogicalResult copy(Node &n) {
  TRY(self, n.tensor("self"));
  TRY(src, n.tensor("src"));
  RankedTensorType type = tg::typeOf(self);
  src = n.cast(src, type.getElementType());
  if (tg::typeOf(src).getShape() != type.getShape())
    src = tg::BroadcastOp::create(n.b, n.loc, type, src);
  return n.define(0, src);
}

/// `self` with `written` in place of its elements [start, start + the
/// size of `written`) along `dim`; failure (an error at the node) where
/// `written` does not fit there.
FailureOr<Value> replaceAlongDim(Node &n, Value self, int64_t dim,
                                 int64_t start, Value written) {
  int64_t size = tg::typeOf(self).getDimSize(dim);
  int64_t end = start + tg::typeOf(written).getDimSize(dim);
  SmallVector<Value> pieces;
  if (start > 0) {
    TRY(before, n.create<tg::SliceOp>(self, dim, 0, start, 1));
    pieces.push_back(before);
  }
  pieces.push_back(written);
  if (end < size) {
    TRY(after, n.create<tg::SliceOp>(self, dim, end, size, 1));
    pieces.push_back(after);
  }
  if (pieces.size() == 1)
    return written;
  return n.create<tg::ConcatOp>(pieces, dim);
}

/// slice_scatter: `self` with `src` written over self[start:end:step] of
/// `dim`.
LogicalResult sliceScatter(Node &n) {
  TRY(self, n.tensor("self"));
  TRY(src, n.tensor("src"));
  RankedTensorType type = tg::typeOf(self);
  TRY(dim, n.integer("dim", 0));
  if (failed(normalizeDim(n, dim, type.getRank())))
    return failure();
  if (tg::typeOf(src).getRank() != type.getRank())
    return n.error() << "slice_scatter writes " << tg::typeOf(src) << " into "
                     << type << ": the ranks differ";
  int64_t size = type.getDimSize(dim);
  TRY(start, n.integer("start", 0));
  TRY(step, n.integer("step", 1));
  if (step < 1)
    return n.error() << "slice_scatter's step must be positive, got " << step;
  if (start < 0)
    start += size;
  start = std::clamp<int64_t>(start, 0, size);
  src = n.cast(src, type.getElementType());
  int64_t count = tg::typeOf(src).getDimSize(dim);
  if (count == 0)
    return n.define(0, self);
  // Checked: the archive's step may be any positive number.
  std::optional<int64_t> reach = llvm::checkedMul(count - 1, step);
  reach = reach ? llvm::checkedAdd(*reach, start + 1) : std::nullopt;
  if (!reach || *reach > size)
    return n.error() << "slice_scatter writes " << count << " elements of step "
                     << step << " from " << start << " into a dim of size "
                     << size;
  int64_t span = *reach - start;
  // The written stretch: src spread to its stride; between its elements
  // (step > 1) self keeps its values.
  Value written = tg::spreadAlongDim(n.b, n.loc, src, dim, step);
  if (step > 1) {
    SmallVector<bool> hit(span, false);
    for (int64_t i = 0; i < span; i += step)
      hit[i] = true;
    SmallVector<int64_t> maskShape(type.getRank(), 1);
    maskShape[dim] = span;
    auto maskType = RankedTensorType::get(maskShape, n.b.getI1Type());
    Value mask = tg::ConstantOp::create(n.b, n.loc,
                                        DenseElementsAttr::get(maskType, hit));
    TRY(kept, n.create<tg::SliceOp>(self, dim, start, start + span, 1));
    TRY(merged, n.create<tg::SelectOp>(mask, written, kept));
    written = merged;
  }
  return n.define(0, replaceAlongDim(n, self, dim, start, written));
}

/// repeat: tile `self` by `repeats` (which may add leading dims).
LogicalResult repeat(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(repeats, n.sizes("repeats"));
  RankedTensorType type = tg::typeOf(x);
  if (static_cast<int64_t>(repeats.size()) < type.getRank())
    return n.error() << "repeat needs at least " << type.getRank()
                     << " repeats, got " << repeats.size();
  // [s...] -> [1, s0, 1, s1, ...] -> [r0, s0, r1, s1, ...] -> [r0*s0, ...]
  SmallVector<int64_t> shape(repeats.size() - type.getRank(), 1);
  shape.append(type.getShape().begin(), type.getShape().end());
  SmallVector<int64_t> interleaved, tiled, result;
  for (auto [r, s] : llvm::zip(repeats, shape)) {
    interleaved.append({1, s});
    tiled.append({r, s});
    std::optional<int64_t> size = llvm::checkedMul(r, s);
    if (!size)
      return n.error() << "repeat of " << type << " by " << shapeString(repeats)
                       << " gives a size a 64-bit count cannot hold";
    result.push_back(*size);
  }
  Type el = type.getElementType();
  if (failed(n.checkShape(result, el, "repeat's result")))
    return failure();
  Value v = tg::ReshapeOp::create(n.b, n.loc,
                                  RankedTensorType::get(interleaved, el), x);
  v = tg::BroadcastOp::create(n.b, n.loc, RankedTensorType::get(tiled, el), v);
  return n.define(0, tg::ReshapeOp::create(
                         n.b, n.loc, RankedTensorType::get(result, el), v));
}

/// cumsum along `dim` as a Hillis-Steele scan: log2(n) shifted adds, exact
/// for integers, differentiable through slice and concat.
LogicalResult cumsum(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(dim, n.integer("dim"));
  x = n.cast(x, outElement(n));
  int64_t rank = tg::typeOf(x).getRank();
  if (rank == 0)
    return n.define(0, x);
  if (failed(normalizeDim(n, dim, rank)))
    return failure();
  int64_t size = tg::typeOf(x).getDimSize(dim);
  for (int64_t shift = 1; shift < size; shift *= 2) {
    TRY(head, n.create<tg::SliceOp>(x, dim, 0, size - shift, 1));
    x = n.math().add(x, tg::padAlongDim(n.b, n.loc, head, dim, shift, 0));
  }
  return n.define(0, x);
}

/// index.Tensor: advanced indexing by integer (or boolean-free) index
/// tensors, one per leading dim or None. The indexed dims are moved to the
/// front and flattened into one, the indices combined into a linear index
/// over them, and a gather along that dim reads the rows; the indexed
/// result dims then go where PyTorch puts them (in place of the indexed
/// dims when these are adjacent, in front otherwise).
FailureOr<Value> advancedIndex(Node &n, Value x, ArrayRef<Value> entries) {
  RankedTensorType type = tg::typeOf(x);
  int64_t rank = type.getRank();
  SmallVector<int64_t> indexedDims;
  SmallVector<Value> indices;
  int64_t position = entries.size();
  for (auto [dim, v] : llvm::enumerate(entries)) {
    if (!v)
      continue;
    Type el = tg::typeOf(v).getElementType();
    if (!isa<IntegerType>(el) || el.isInteger(1))
      return n.error() << "indexing by boolean masks is not supported "
                          "(their result shape depends on the data)";
    indexedDims.push_back(dim);
    indices.push_back(v);
  }
  if (indices.empty() || position > rank)
    return n.error() << "index needs 1 to " << rank << " index tensors";
  bool adjacent = indexedDims.back() - indexedDims.front() + 1 ==
                  static_cast<int64_t>(indexedDims.size());
  // The index tensors broadcast together (NumPy rules) to the result's
  // index dims.
  SmallVector<int64_t> indexShape(tg::typeOf(indices.front()).getShape());
  for (Value idx : llvm::drop_begin(indices)) {
    auto joint = tg::broadcastShapes(indexShape, tg::typeOf(idx).getShape());
    if (failed(joint))
      return n.error() << "index tensors of shapes " << shapeString(indexShape)
                       << " and " << shapeString(tg::typeOf(idx).getShape())
                       << " do not broadcast";
    indexShape = *joint;
  }
  tg::GraphMath m = n.math();
  // The linear index over the indexed dims, negative indices wrapped.
  Value linear;
  int64_t rows = 1;
  for (int64_t i = indices.size() - 1; i >= 0; --i) {
    int64_t size = type.getDimSize(indexedDims[i]);
    Value idx = n.cast(indices[i], n.b.getI64Type());
    idx = m.select(m.compare(tg::ComparePredicate::lt, idx, m.scalar(idx, 0)),
                   m.add(idx, m.scalar(idx, size)), idx);
    if (rows != 1)
      idx = m.mul(idx, m.scalar(idx, rows));
    linear = linear ? m.add(linear, idx) : idx;
    rows *= size;
  }
  auto linearType = RankedTensorType::get(indexShape, n.b.getI64Type());
  if (tg::typeOf(linear).getShape() != linearType.getShape())
    linear = tg::BroadcastOp::create(
        n.b, n.loc,
        RankedTensorType::get(linearType.getShape(), n.b.getI64Type()), linear);
  // x with the indexed dims first, flattened: [rows, rest].
  SmallVector<int64_t> perm(indexedDims.begin(), indexedDims.end());
  SmallVector<int64_t> restShape;
  int64_t rest = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(indexedDims, d)) {
      perm.push_back(d);
      restShape.push_back(type.getDimSize(d));
      rest *= type.getDimSize(d);
    }
  Type el = type.getElementType();
  Value table = x;
  if (!llvm::equal(perm, llvm::seq<int64_t>(0, rank)))
    table = tg::TransposeOp::create(n.b, n.loc, table, perm);
  table = tg::ReshapeOp::create(n.b, n.loc,
                                RankedTensorType::get({rows, rest}, el), table);
  int64_t count = linearType.getNumElements();
  Value flat = tg::ReshapeOp::create(
      n.b, n.loc, RankedTensorType::get({count, 1}, n.b.getI64Type()), linear);
  flat = tg::BroadcastOp::create(
      n.b, n.loc, RankedTensorType::get({count, rest}, n.b.getI64Type()), flat);
  Value picked = tg::GatherOp::create(n.b, n.loc, table, flat, 0);
  // [index dims..., rest dims...], then the index dims in place.
  SmallVector<int64_t> shape(linearType.getShape());
  int64_t indexRank = shape.size();
  shape.append(restShape);
  Value result = tg::ReshapeOp::create(
      n.b, n.loc, RankedTensorType::get(shape, el), picked);
  if (adjacent && indexedDims.front() > 0) {
    int64_t front = indexedDims.front();
    SmallVector<int64_t> order;
    for (int64_t d = 0; d < front; ++d)
      order.push_back(indexRank + d);
    for (int64_t d = 0; d < indexRank; ++d)
      order.push_back(d);
    for (int64_t d = indexRank + front; d < static_cast<int64_t>(shape.size());
         ++d)
      order.push_back(d);
    result = tg::TransposeOp::create(n.b, n.loc, result, order);
  }
  return result;
}

LogicalResult indexTensor(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(entries, n.optionalTensors("indices"));
  TRY(result, advancedIndex(n, x, entries));
  return n.define(0, result);
}

/// index_select: advanced indexing by a 1-D index on one dim.
LogicalResult indexSelect(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(dim, n.integer("dim"));
  TRY(index, n.tensor("index"));
  if (failed(normalizeDim(n, dim, tg::typeOf(x).getRank())))
    return failure();
  SmallVector<Value> entries(dim + 1, Value());
  entries[dim] = index;
  TRY(result, advancedIndex(n, x, entries));
  return n.define(0, result);
}

/// as_strided: output element i reads the input's storage at
/// storage_offset + sum(i_k * stride_k). A tg value has no storage, so the
/// input's is the layout the archive records for it, which must be dense
/// (each element once; any order of the dims, as a permuted or
/// channels-last tensor has): the input is read in storage order,
/// flattened, and gathered at the positions. Where they are the elements
/// in order (a restride of dims of size 1, as adaptive_avg_pool2d's
/// decomposition makes), it is a reshape.
LogicalResult asStrided(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(size, n.sizes("size"));
  TRY(stride, n.integers("stride"));
  RankedTensorType in = tg::typeOf(x);
  RankedTensorType out = n.outputType(0);
  if (size.size() != stride.size())
    return n.error() << "as_strided has " << size.size() << " sizes but "
                     << stride.size() << " strides";
  if (out.getShape() != ArrayRef<int64_t>(size))
    return n.error() << "as_strided's size does not match its output "
                     << out;
  int64_t rank = in.getRank();
  Node::Layout layout;
  if (std::optional<Node::Layout> recorded = n.recordedLayout("self"))
    layout = *recorded;
  else
    layout.strides = computeSuffixProduct(in.getShape());
  if (static_cast<int64_t>(layout.strides.size()) != rank)
    return n.error() << "the archive records " << layout.strides.size()
                     << " strides for as_strided's input of rank " << rank;
  // The input's dims from the outermost in memory; dense when each dim's
  // stride is the product of the sizes inside it (dims of size 1 aside).
  SmallVector<int64_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  llvm::sort(order, [&](int64_t a, int64_t b) {
    return std::make_pair(-layout.strides[a], a) <
           std::make_pair(-layout.strides[b], b);
  });
  int64_t dense = 1;
  for (int64_t d : llvm::reverse(order)) {
    if (in.getDimSize(d) == 1)
      continue;
    if (layout.strides[d] != dense)
      return n.error() << "as_strided's input is not dense in memory (the "
                          "archive records strides ["
                       << ArrayRef<int64_t>(layout.strides) << "] for " << in
                       << "): spmdc reads only dense inputs; make it "
                          "contiguous() before as_strided";
    dense *= in.getDimSize(d);
  }
  int64_t elements = in.getNumElements();
  int64_t outElements = out.getNumElements();
  constexpr int64_t kMostPositions = int64_t(1) << 26;
  if (outElements > kMostPositions)
    return n.error() << "as_strided's output of " << outElements
                     << " elements is more than spmdc gathers (" << kMostPositions
                     << ")";
  TRY(offset, n.integer("storage_offset", layout.storageOffset));
  // Each output element's place in the input's storage order.
  SmallVector<int64_t> positions;
  positions.reserve(outElements);
  bool inOrder = outElements == elements;
  SmallVector<int64_t> at(size.size(), 0);
  for (int64_t i = 0; i < outElements; ++i) {
    // The archive's numbers are claims: arithmetic that overflows reads
    // out of range too.
    std::optional<int64_t> position =
        llvm::checkedSub(offset, layout.storageOffset);
    for (auto [index, step] : llvm::zip(at, stride)) {
      std::optional<int64_t> term = llvm::checkedMul(index, step);
      position = position && term ? llvm::checkedAdd(*position, *term)
                                  : std::nullopt;
    }
    if (!position || *position < 0 || *position >= elements)
      return n.error() << "as_strided reads "
                       << (position ? "element " + std::to_string(*position)
                                    : std::string("an element out of range"))
                       << " of its input's storage, which holds " << elements
                       << " (a read past the tensor, into storage it is a "
                          "view of, which spmdc's values do not have)";
    inOrder &= *position == i;
    positions.push_back(*position);
    for (int64_t d = static_cast<int64_t>(at.size()) - 1; d >= 0; --d) {
      if (++at[d] < size[d])
        break;
      at[d] = 0;
    }
  }
  Value stored = x;
  if (!llvm::is_sorted(order))
    stored = tg::TransposeOp::create(n.b, n.loc, x, order);
  Value flat = tg::ReshapeOp::create(
      n.b, n.loc, RankedTensorType::get({elements}, in.getElementType()),
      stored);
  if (inOrder)
    return n.define(0, tg::ReshapeOp::create(n.b, n.loc, out, flat));
  Value index = tg::ConstantOp::create(
      n.b, n.loc,
      DenseElementsAttr::get(RankedTensorType::get(size, n.b.getI64Type()),
                             ArrayRef<int64_t>(positions)));
  TRY(gathered, advancedIndex(n, flat, {index}));
  return n.define(0, gathered);
}

/// flip: each listed dim read backwards (a gather by constant indices).
LogicalResult flip(Node &n) {
  TRY(x, n.tensor("self"));
  TRY(dims, n.integers("dims"));
  for (int64_t d : dims) {
    if (failed(normalizeDim(n, d, tg::typeOf(x).getRank())))
      return failure();
    int64_t size = tg::typeOf(x).getDimSize(d);
    SmallVector<int64_t> reversed;
    for (int64_t i = size - 1; i >= 0; --i)
      reversed.push_back(i);
    Value index = tg::ConstantOp::create(
        n.b, n.loc,
        DenseElementsAttr::get(RankedTensorType::get({size}, n.b.getI64Type()),
                               ArrayRef<int64_t>(reversed)));
    SmallVector<Value> entries(d + 1, Value());
    entries[d] = index;
    TRY(flipped, advancedIndex(n, x, entries));
    x = flipped;
  }
  return n.define(0, x);
}

/// clamp: max(min(x, hi), lo) with numbers or tensors as bounds.
LogicalResult clamp(Node &n) {
  TRY(x, n.tensor("self"));
  Type el = outElement(n);
  x = n.cast(x, el);
  if (n.has("min")) {
    TRY(lo, n.tensorOrScalar("min", el));
    TRY(clamped, n.create<tg::MaximumOp>(x, n.cast(lo, el)));
    x = clamped;
  }
  if (n.has("max")) {
    TRY(hi, n.tensorOrScalar("max", el));
    TRY(clamped, n.create<tg::MinimumOp>(x, n.cast(hi, el)));
    x = clamped;
  }
  return n.define(0, x);
}

/// Elementwise functions built from the primitives, in the output type.
LogicalResult elementwise(Node &n,
                          llvm::function_ref<Value(tg::GraphMath &, Value)> f) {
  TRY(x, n.tensor("self"));
  x = n.cast(x, outElement(n));
  tg::GraphMath m = n.math();
  return n.define(0, f(m, x));
}

Value exp(tg::GraphMath &m, Value x) {
  return tg::ExpOp::create(m.b, m.loc, x);
}

/// floor, ceil, trunc, round: the value itself on integers, which are
/// whole already (PyTorch's too).
template <typename OpT>
Mapping rounding() {
  return [](Node &n) -> LogicalResult {
    TRY(x, n.tensor("self"));
    x = n.cast(x, outElement(n));
    if (!isa<FloatType>(tg::typeOf(x).getElementType()))
      return n.define(0, x);
    return n.define(0, n.create<OpT>(x));
  };
}

/// round.decimals as PyTorch computes it: nearbyint(x * 10^d) / 10^d, or
/// nearbyint(x / 10^-d) * 10^-d for negative d.
LogicalResult roundDecimals(Node &n) {
  TRY(x, n.tensor("self"));
  x = n.cast(x, outElement(n));
  TRY(decimals, n.integer("decimals", 0));
  if (!isa<FloatType>(tg::typeOf(x).getElementType()))
    return n.define(0, x);
  tg::GraphMath m = n.math();
  auto round = [&](Value v) {
    return tg::RoundOp::create(n.b, n.loc, v).getResult();
  };
  if (decimals == 0)
    return n.define(0, round(x));
  Value ten = m.scalar(x, std::pow(10.0, std::abs(decimals)));
  return n.define(0, decimals > 0 ? m.div(round(m.mul(x, ten)), ten)
                                  : m.mul(round(m.div(x, ten)), ten));
}

/// sign: 1, 0 or -1 in x's type (0 for NaN, as PyTorch gives).
LogicalResult sign(Node &n) {
  TRY(x, n.tensor("self"));
  Type el = outElement(n);
  x = n.cast(x, el);
  if (el.isInteger(1))
    return n.define(0, x);
  tg::GraphMath m = n.math();
  Value zero = m.scalar(x, 0.0);
  Value positive = n.cast(m.compare(tg::ComparePredicate::gt, x, zero), el);
  Value negative = n.cast(m.compare(tg::ComparePredicate::lt, x, zero), el);
  return n.define(0, m.sub(positive, negative));
}

/// A formula of `self` and `other` (tensors or scalars), both cast to the
/// result's element type, once they are known to broadcast (the rule of
/// rem, which all the formulas' ops share).
LogicalResult binaryFormula(
    Node &n, llvm::function_ref<Value(tg::GraphMath &, Value, Value)> f) {
  Type el = outElement(n);
  TRY(a, n.tensorOrScalar("self", el));
  TRY(b, n.tensorOrScalar("other", el));
  a = n.cast(a, el);
  b = n.cast(b, el);
  if (failed(n.check<tg::RemOp>(a, b)))
    return failure();
  tg::GraphMath m = n.math();
  return n.define(0, f(m, a, b));
}

Value rem(tg::GraphMath &m, Value a, Value b) {
  return tg::RemOp::create(m.b, m.loc, a, b);
}

/// Where a remainder truncated toward zero (`r`, of a / b) and the
/// remainder of a floored quotient differ: r is not zero and its sign is
/// not b's.
Value signsDiffer(tg::GraphMath &m, Value r, Value b) {
  using P = tg::ComparePredicate;
  Value negativeR = m.compare(P::lt, r, m.scalar(r, 0.0));
  Value negativeB = m.compare(P::lt, b, m.scalar(b, 0.0));
  return tg::AndOp::create(m.b, m.loc,
                           m.compare(P::ne, r, m.scalar(r, 0.0)),
                           m.compare(P::ne, negativeR, negativeB));
}

/// remainder: Python's `a % b`, with b's sign.
Value remainder(tg::GraphMath &m, Value a, Value b) {
  Value r = rem(m, a, b);
  return m.select(signsDiffer(m, r, b), m.add(r, b), r);
}

/// div with rounding_mode "floor" or "trunc" (None: true division). Floor
/// division of floats follows PyTorch's kernel (c10's div_floor_floating),
/// which rounds the exact quotient (a - fmod(a, b)) / b rather than a / b;
/// of integers, the truncated quotient less one where the signs differ and
/// b does not divide a. Neither mode has a derivative (PyTorch's is zero).
LogicalResult divWithRounding(Node &n) {
  TRY(mode, n.string("rounding_mode", ""));
  if (mode.empty())
    return binaryFormula(
        n, [](tg::GraphMath &m, Value a, Value b) { return m.div(a, b); });
  if (mode != "trunc" && mode != "floor")
    return n.error() << "rounding_mode '" << mode
                     << "' is not one of \"trunc\", \"floor\"";
  bool floor = mode == "floor";
  return binaryFormula(n, [&](tg::GraphMath &m, Value a, Value b) {
    using P = tg::ComparePredicate;
    bool isFloat = isa<FloatType>(tg::typeOf(a).getElementType());
    Value quotient = m.div(a, b);
    Value result;
    if (!floor) {
      result = isFloat ? tg::TruncOp::create(m.b, m.loc, quotient).getResult()
                       : quotient;
    } else if (!isFloat) {
      Value fix = signsDiffer(m, rem(m, a, b), b);
      result = m.select(fix, m.sub(quotient, m.scalar(quotient, 1.0)),
                        quotient);
    } else {
      Value mod = rem(m, a, b);
      Value exact = m.div(m.sub(a, mod), b);
      exact = m.select(signsDiffer(m, mod, b),
                       m.sub(exact, m.scalar(exact, 1.0)), exact);
      Value floored = tg::FloorOp::create(m.b, m.loc, exact);
      floored = m.select(
          m.compare(P::gt, m.sub(exact, floored), m.scalar(exact, 0.5)),
          m.add(floored, m.scalar(floored, 1.0)), floored);
      // A zero quotient keeps a / b's sign; b == 0 gives a / b itself.
      floored = m.select(m.compare(P::eq, exact, m.scalar(exact, 0.0)),
                         m.mul(quotient, m.scalar(quotient, 0.0)), floored);
      result = m.select(m.compare(P::eq, b, m.scalar(b, 0.0)), quotient,
                        floored);
    }
    if (Operation *def = result.getDefiningOp())
      def->setAttr(tg::kConstantToDerivativeAttr, m.b.getUnitAttr());
    return result;
  });
}
Value log(tg::GraphMath &m, Value x) {
  return tg::LogOp::create(m.b, m.loc, x);
}

/// leaky_relu / hardtanh / elu: piecewise by tg.select.
LogicalResult leakyRelu(Node &n) {
  TRY(slope, n.number("negative_slope", 0.01));
  return elementwise(n, [&](tg::GraphMath &m, Value x) {
    return m.select(m.compare(tg::ComparePredicate::gt, x, m.scalar(x, 0.0)), x,
                    m.mul(x, m.scalar(x, slope)));
  });
}

LogicalResult hardtanh(Node &n) {
  TRY(lo, n.number("min_val", -1.0));
  TRY(hi, n.number("max_val", 1.0));
  return elementwise(n, [&](tg::GraphMath &m, Value x) -> Value {
    Value low = tg::MaximumOp::create(m.b, m.loc, x, m.scalar(x, lo));
    return tg::MinimumOp::create(m.b, m.loc, low, m.scalar(x, hi));
  });
}

LogicalResult elu(Node &n) {
  TRY(alpha, n.number("alpha", 1.0));
  TRY(scale, n.number("scale", 1.0));
  TRY(inputScale, n.number("input_scale", 1.0));
  return elementwise(n, [&](tg::GraphMath &m, Value x) -> Value {
    Value negative = m.mul(
        m.scalar(x, alpha),
        m.sub(exp(m, m.mul(x, m.scalar(x, inputScale))), m.scalar(x, 1.0)));
    Value y = m.select(m.compare(tg::ComparePredicate::gt, x, m.scalar(x, 0.0)), x, negative);
    return scale == 1.0 ? y : m.mul(y, m.scalar(y, scale));
  });
}

/// var: the mean squared deviation over `dim`, divided by n - correction.
LogicalResult variance(Node &n) {
  TRY(x, n.tensor("self"));
  x = n.cast(x, outElement(n));
  TRY(dims, reductionDims(n, x, "dim"));
  TRY(keep, n.boolean("keepdim", false));
  double correction = 1.0;
  if (n.has("correction")) {
    TRY(c, n.number("correction"));
    correction = c;
  } else {
    TRY(unbiased, n.boolean("unbiased", true));
    correction = unbiased ? 1.0 : 0.0;
  }
  int64_t count = 1;
  for (int64_t d : tg::normalizedDims(dims, tg::typeOf(x).getRank()))
    count *= tg::typeOf(x).getDimSize(d);
  tg::GraphMath m = n.math();
  Value centered = m.sub(x, m.mean(x, dims, true));
  Value squares = m.sum(m.mul(centered, centered), dims, keep);
  return n.define(
      0, m.mul(squares,
               m.scalar(squares, 1.0 / std::max(0.0, count - correction))));
}

/// amin and min/max over a dim: the value, and for .dim the index of the
/// first extreme (the smallest position holding it).
Value firstIndexOf(Node &n, Value x, Value extreme, int64_t dim) {
  tg::GraphMath m = n.math();
  RankedTensorType type = tg::typeOf(x);
  auto positions = RankedTensorType::get(type.getShape(), n.b.getI64Type());
  Value iota = tg::IotaOp::create(n.b, n.loc, positions, dim);
  Value kept = tg::ReshapeOp::create(
      n.b, n.loc,
      RankedTensorType::get(tg::keepDimType(type, {dim}).getShape(),
                            type.getElementType()),
      extreme);
  Value big = m.scalar(iota, static_cast<double>(type.getDimSize(dim)));
  Value candidate = m.select(m.compare(tg::ComparePredicate::eq, x, kept), m.neg(iota), m.neg(big));
  return m.neg(m.max(candidate, {dim}, false));
}

LogicalResult extremeOverDim(Node &n, bool isMax, bool withIndex,
                             bool indexOnly) {
  TRY(x, n.tensor("self"));
  tg::GraphMath m = n.math();
  RankedTensorType type = tg::typeOf(x);
  TRY(keep, n.boolean("keepdim", false));
  SmallVector<int64_t> dims;
  Value input = x;
  if (indexOnly && !n.has("dim")) {
    // argmax without dim: over the flattened tensor.
    input = tg::ReshapeOp::create(
        n.b, n.loc,
        RankedTensorType::get({type.getNumElements()}, type.getElementType()),
        x);
    dims = {0};
    keep = false;
  } else if (withIndex || indexOnly) {
    TRY(dim, n.integer("dim"));
    if (failed(normalizeDim(n, dim, type.getRank())))
      return failure();
    dims = {dim};
  } else {
    TRY(all, reductionDims(n, x, "dim"));
    dims = all;
  }
  auto extreme = [&](Value v) -> Value {
    return isMax ? m.max(v, dims, false) : m.neg(m.max(m.neg(v), dims, false));
  };
  Value value = extreme(input);
  auto keepShape = [&](Value v) -> Value {
    if (!keep)
      return v;
    return tg::ReshapeOp::create(
        n.b, n.loc,
        RankedTensorType::get(
            tg::keepDimType(tg::typeOf(input), dims).getShape(),
            tg::typeOf(v).getElementType()),
        v);
  };
  if (!indexOnly && failed(n.define(0, keepShape(value))))
    return failure();
  if (!withIndex && !indexOnly)
    return success();
  Value index = keepShape(firstIndexOf(n, input, value, dims.front()));
  return n.define(indexOnly ? 0 : 1, index);
}

/// select_scatter: `src` written over index `index` of `dim`.
LogicalResult selectScatter(Node &n) {
  TRY(self, n.tensor("self"));
  TRY(src, n.tensor("src"));
  TRY(dim, n.integer("dim"));
  TRY(index, n.integer("index"));
  RankedTensorType type = tg::typeOf(self);
  if (failed(normalizeDim(n, dim, type.getRank())))
    return failure();
  int64_t size = type.getDimSize(dim);
  if (index < -size || index >= size)
    return n.error() << "select_scatter index " << index
                     << " is out of range for a dim of size " << size;
  if (index < 0)
    index += size;
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = 1;
  Value row = tg::ReshapeOp::create(
      n.b, n.loc, RankedTensorType::get(shape, type.getElementType()),
      n.cast(src, type.getElementType()));
  return n.define(0, replaceAlongDim(n, self, dim, index, row));
}

/// native_group_norm: statistics over each group of channels and the
/// spatial dims; outputs (out, mean [N, G], rstd [N, G]).
LogicalResult groupNorm(Node &n) {
  TRY(x, n.tensor("input"));
  std::optional<Value> weight = n.optionalTensor("weight");
  std::optional<Value> bias = n.optionalTensor("bias");
  TRY(groups, n.integer("group"));
  TRY(eps, n.number("eps", 1e-5));
  RankedTensorType type = tg::typeOf(x);
  if (type.getRank() < 2 || type.getNumElements() == 0)
    return n.error() << "group_norm needs a non-empty [N, C, ...], got "
                     << type;
  int64_t batch = type.getDimSize(0), channels = type.getDimSize(1);
  if (groups < 1 || channels % groups)
    return n.error() << "group_norm of " << channels << " channels in "
                     << groups << " groups";
  Type el = type.getElementType();
  int64_t rest = type.getNumElements() / (batch * channels);
  Value grouped = tg::ReshapeOp::create(
      n.b, n.loc,
      RankedTensorType::get({batch, groups, channels / groups * rest}, el), x);
  tg::GraphMath m = n.math();
  Value mean = m.mean(grouped, {2}, true);
  Value centered = m.sub(grouped, mean);
  Value var = m.mean(m.mul(centered, centered), {2}, true);
  Value rstd = tg::RsqrtOp::create(n.b, n.loc, m.add(var, m.scalar(var, eps)));
  Value y = tg::ReshapeOp::create(n.b, n.loc, type, m.mul(centered, rstd));
  SmallVector<int64_t> channelShape(type.getRank(), 1);
  channelShape[1] = channels;
  auto perChannel = [&](Value v) -> Value {
    return tg::ReshapeOp::create(
        n.b, n.loc, RankedTensorType::get(channelShape, el), n.cast(v, el));
  };
  if (weight)
    y = m.mul(y, perChannel(*weight));
  if (bias)
    y = m.add(y, perChannel(*bias));
  if (failed(n.define(0, y)))
    return failure();
  auto stats = RankedTensorType::get({batch, groups}, el);
  if (n.hasOutput(1) &&
      failed(n.define(1, tg::ReshapeOp::create(n.b, n.loc, stats, mean))))
    return failure();
  if (n.hasOutput(2))
    return n.define(2, tg::ReshapeOp::create(n.b, n.loc, stats, rstd));
  return success();
}

/// The window positions of a pooling or convolution along the spatial dims
/// (2..): `input` padded by `padding` (and on the right as far as the
/// declared output needs), then one strided slice per kernel offset, each
/// [N, C, O...], in row-major order of the offsets.
struct Windows {
  SmallVector<Value> slices;
  SmallVector<int64_t> outputSize;
};

FailureOr<Windows> windows(Node &n, Value input, ArrayRef<int64_t> kernel,
                           ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                           ArrayRef<int64_t> dilation,
                           ArrayRef<int64_t> outputSize, double fill) {
  int64_t spatial = kernel.size();
  for (int64_t i = 0; i < spatial; ++i)
    if (kernel[i] < 1 || stride[i] < 1 || dilation[i] < 1 || padding[i] < 0)
      return n.error() << "spatial dim " << i << ": kernel " << kernel[i]
                       << ", stride " << stride[i] << ", dilation "
                       << dilation[i] << ", padding " << padding[i]
                       << " (kernel, stride and dilation must be positive, "
                          "padding not negative)";
  // One slice per kernel offset: a kernel of the archive's word that
  // would make more than this many is refused, not enumerated.
  constexpr int64_t kMostWindowOffsets = int64_t(1) << 16;
  int64_t offsets = 1;
  for (int64_t k : kernel)
    if (__builtin_mul_overflow(offsets, k, &offsets) ||
        offsets > kMostWindowOffsets)
      return n.error() << "a kernel of " << shapeString(kernel)
                       << " has more window offsets than spmdc enumerates ("
                       << kMostWindowOffsets << ")";
  // The padded input's shape first, in checked arithmetic: strides,
  // dilations and paddings are the archive's claims.
  RankedTensorType type = tg::typeOf(input);
  SmallVector<int64_t> paddedShape(type.getShape()), after(spatial);
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t size = type.getDimSize(2 + i);
    if (outputSize[i] < 1)
      return n.error() << "window of " << kernel[i] << " does not fit spatial "
                       << "dim " << i << " of size " << size;
    std::optional<int64_t> reach =
        llvm::checkedMul(outputSize[i] - 1, stride[i]);
    std::optional<int64_t> extent =
        llvm::checkedMul(kernel[i] - 1, dilation[i]);
    std::optional<int64_t> needed =
        reach && extent ? llvm::checkedAdd(*reach, *extent + 1) : std::nullopt;
    std::optional<int64_t> leftPadded = llvm::checkedAdd(size, padding[i]);
    if (needed && leftPadded)
      after[i] = std::max<int64_t>(padding[i], *needed - *leftPadded);
    std::optional<int64_t> total = needed && leftPadded
                                       ? llvm::checkedAdd(*leftPadded, after[i])
                                       : std::nullopt;
    if (!total)
      return n.error() << "spatial dim " << i << " of size " << size
                       << ": kernel " << kernel[i] << ", stride " << stride[i]
                       << ", dilation " << dilation[i] << ", padding "
                       << padding[i] << " and output size " << outputSize[i]
                       << " reach past what a 64-bit count holds";
    paddedShape[2 + i] = *total;
  }
  // The spatial dims alone too: a batch or channel dim of 0 would hide
  // their product (which bounds the output positions' too).
  if (failed(n.checkShape(paddedShape, type.getElementType(),
                          "the padded input of the windows")) ||
      failed(n.checkShape(ArrayRef<int64_t>(paddedShape).drop_front(2),
                          type.getElementType(),
                          "the padded input's spatial dims")))
    return failure();
  Value padded = input;
  for (int64_t i = 0; i < spatial; ++i)
    padded =
        tg::padAlongDim(n.b, n.loc, padded, 2 + i, padding[i], after[i], fill);
  Windows w;
  w.outputSize.assign(outputSize.begin(), outputSize.end());
  SmallVector<int64_t> offset(spatial, 0);
  while (true) {
    Value slice = padded;
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t start = offset[i] * dilation[i];
      TRY(strided, n.create<tg::SliceOp>(
                       slice, 2 + i, start,
                       start + (outputSize[i] - 1) * stride[i] + 1, stride[i]));
      slice = strided;
    }
    w.slices.push_back(slice);
    int64_t i = spatial - 1;
    for (; i >= 0; --i) {
      if (++offset[i] < kernel[i])
        break;
      offset[i] = 0;
    }
    if (i < 0)
      break;
  }
  return w;
}

/// The declared output's spatial sizes (its dims after N and C): as many
/// as the input's.
FailureOr<SmallVector<int64_t>> outputSpatialSizes(Node &n, Value input) {
  RankedTensorType out = n.outputType(0), in = tg::typeOf(input);
  if (out.getRank() != in.getRank())
    return n.error() << "computes " << out << " from " << in
                     << ": the ranks differ";
  return SmallVector<int64_t>(out.getShape().drop_front(2));
}

/// A per-spatial-dim list: one value for all, or one per dim.
FailureOr<SmallVector<int64_t>> spatialList(Node &n, StringRef name,
                                            int64_t spatial,
                                            SmallVector<int64_t> fallback) {
  TRY(v, n.integers(name, fallback));
  if (v.size() == 1)
    v.assign(spatial, v.front());
  if (static_cast<int64_t>(v.size()) != spatial)
    return n.error() << "'" << name << "' needs " << spatial << " values, got "
                     << v.size();
  return v;
}

/// A pooling op's kernel_size, stride (empty: the kernel's) and padding.
FailureOr<std::tuple<SmallVector<int64_t>, SmallVector<int64_t>,
                     SmallVector<int64_t>>>
poolArguments(Node &n, int64_t spatial) {
  TRY(kernel, spatialList(n, "kernel_size", spatial, {}));
  TRY(strideGiven, n.integers("stride", SmallVector<int64_t>{}));
  SmallVector<int64_t> stride = kernel;
  if (!strideGiven.empty()) {
    TRY(s, spatialList(n, "stride", spatial, {}));
    stride = s;
  }
  TRY(padding, spatialList(n, "padding", spatial, {0}));
  return std::make_tuple(kernel, stride, padding);
}

/// The window slices stacked on a new dim 2: [N, C, K, O...].
Value stackWindows(Node &n, ArrayRef<Value> slices) {
  SmallVector<Value> columns;
  for (Value s : slices) {
    RankedTensorType t = tg::typeOf(s);
    SmallVector<int64_t> shape(t.getShape());
    shape.insert(shape.begin() + 2, 1);
    columns.push_back(tg::ReshapeOp::create(
        n.b, n.loc, RankedTensorType::get(shape, t.getElementType()), s));
  }
  if (columns.size() == 1)
    return columns.front();
  return tg::ConcatOp::create(n.b, n.loc, columns, 2);
}

/// convolution (any number of spatial dims, stride, padding, dilation,
/// groups) as im2col and one batched matmul over the groups.
LogicalResult convolution(Node &n) {
  TRY(x, n.tensor("input"));
  TRY(w, n.tensor("weight"));
  std::optional<Value> bias = n.optionalTensor("bias");
  TRY(transposed, n.boolean("transposed", false));
  if (transposed)
    return n.error() << "transposed convolution is not supported";
  RankedTensorType xType = tg::typeOf(x), wType = tg::typeOf(w);
  int64_t spatial = xType.getRank() - 2;
  if (spatial < 1 || wType.getRank() != xType.getRank())
    return n.error() << "convolution needs [N, C, spatial...] input and "
                        "[O, C/groups, kernel...] weight";
  TRY(stride, spatialList(n, "stride", spatial, {1}));
  TRY(padding, spatialList(n, "padding", spatial, {0}));
  TRY(dilation, spatialList(n, "dilation", spatial, {1}));
  TRY(groups, n.integer("groups", 1));
  int64_t batch = xType.getDimSize(0), channels = xType.getDimSize(1),
          outChannels = wType.getDimSize(0);
  if (groups < 1 || channels % groups || outChannels % groups ||
      channels / groups != wType.getDimSize(1))
    return n.error() << "convolution of " << channels << " channels into "
                     << outChannels << " with " << groups
                     << " groups and weight " << wType;
  SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
  TRY(outputSize, outputSpatialSizes(n, x));
  TRY(win, windows(n, x, kernel, stride, padding, dilation, outputSize, 0.0));
  // [N, C, K, O...] -> [N, G, C/G * K, P]
  int64_t k = win.slices.size(), positions = 1;
  for (int64_t o : outputSize)
    positions *= o;
  Type el = xType.getElementType();
  Value columns = tg::ReshapeOp::create(
      n.b, n.loc,
      RankedTensorType::get({batch, groups, channels / groups * k, positions},
                            el),
      stackWindows(n, win.slices));
  Value weights = tg::ReshapeOp::create(
      n.b, n.loc,
      RankedTensorType::get(
          {groups, outChannels / groups, channels / groups * k}, el),
      w);
  Value y = tg::MatmulOp::create(n.b, n.loc, weights, columns);
  SmallVector<int64_t> shape = {batch, outChannels};
  shape.append(outputSize);
  y = tg::ReshapeOp::create(n.b, n.loc, RankedTensorType::get(shape, el), y);
  if (bias) {
    SmallVector<int64_t> biasShape(spatial + 1, 1);
    biasShape[0] = outChannels;
    y = n.math().add(
        y, tg::ReshapeOp::create(n.b, n.loc,
                                 RankedTensorType::get(biasShape, el), *bias));
  }
  return n.define(0, y);
}

/// max_pool{1,2,3}d_with_indices: the max over each window (padding is
/// -inf), and the flat spatial index of its first maximum.
LogicalResult maxPoolWithIndices(Node &n) {
  TRY(x, n.tensor("self"));
  RankedTensorType type = tg::typeOf(x);
  TRY(kernelGiven, n.integers("kernel_size"));
  int64_t spatial =
      kernelGiven.size() == 1 ? type.getRank() - 2 : kernelGiven.size();
  if (spatial < 1 || spatial > type.getRank() - 1)
    return n.error() << "max_pool of " << type << " needs [N, C, spatial...]";
  if (type.getRank() - 2 != spatial)
    return n.error() << "max_pool without a batch dim is not supported";
  TRY(pool, poolArguments(n, spatial));
  auto [kernel, stride, padding] = pool;
  TRY(dilation, spatialList(n, "dilation", spatial, {1}));
  TRY(outputSize, outputSpatialSizes(n, x));
  TRY(win,
      windows(n, x, kernel, stride, padding, dilation, outputSize, -INFINITY));
  Value stacked = stackWindows(n, win.slices);
  tg::GraphMath m = n.math();
  Value best = m.max(stacked, {2}, /*keepDim=*/false);
  if (failed(n.define(0, best)))
    return failure();
  if (!n.hasOutput(1))
    return success();
  // Flat input position of each window element; the smallest among the
  // maxima is the first in PyTorch's scan order.
  int64_t k = win.slices.size();
  SmallVector<int64_t> posShape = {k};
  posShape.append(outputSize);
  auto posType = RankedTensorType::get(posShape, n.b.getI64Type());
  // A constant of that many positions, computed here: bounded as
  // as_strided's are.
  constexpr int64_t kMostPositions = int64_t(1) << 26;
  int64_t count = 1;
  for (int64_t d : posShape)
    if (__builtin_mul_overflow(count, d, &count) || count > kMostPositions)
      return n.error() << "max_pool's indices need more window positions ("
                       << shapeString(posShape) << ") than spmdc computes ("
                       << kMostPositions << ")";
  SmallVector<int64_t> inputSize(type.getShape().drop_front(2));
  SmallVector<int64_t> positions;
  SmallVector<int64_t> offset(spatial, 0), at(spatial, 0);
  for (int64_t w = 0; w < k; ++w) {
    int64_t rem = w;
    for (int64_t i = spatial - 1; i >= 0; --i) {
      offset[i] = rem % kernel[i];
      rem /= kernel[i];
    }
    std::fill(at.begin(), at.end(), 0);
    while (true) {
      int64_t flat = 0;
      for (int64_t i = 0; i < spatial; ++i)
        flat = flat * inputSize[i] + at[i] * stride[i] - padding[i] +
               offset[i] * dilation[i];
      positions.push_back(flat);
      int64_t i = spatial - 1;
      for (; i >= 0; --i) {
        if (++at[i] < outputSize[i])
          break;
        at[i] = 0;
      }
      if (i < 0)
        break;
    }
  }
  Value pos = tg::ConstantOp::create(
      n.b, n.loc,
      DenseElementsAttr::get(posType, ArrayRef<int64_t>(positions)));
  Value keep = tg::ReshapeOp::create(
      n.b, n.loc,
      RankedTensorType::get(
          tg::keepDimType(tg::typeOf(stacked), {2}).getShape(),
          type.getElementType()),
      best);
  Value isMax = m.compare(tg::ComparePredicate::eq, stacked, keep);
  Value big =
      m.scalar(pos, static_cast<double>(std::numeric_limits<int32_t>::max()));
  Value candidate = m.select(isMax, m.neg(pos), m.neg(big));
  return n.define(1, m.neg(m.max(candidate, {2}, false)));
}

/// avg_pool{2,3}d: the mean over each window, counting padding unless
/// count_include_pad is false; divisor_override replaces the count.
LogicalResult avgPool(Node &n) {
  TRY(x, n.tensor("self"));
  RankedTensorType type = tg::typeOf(x);
  int64_t spatial = type.getRank() - 2;
  if (spatial < 1)
    return n.error() << "avg_pool of " << type << " needs [N, C, spatial...]";
  TRY(pool, poolArguments(n, spatial));
  auto [kernel, stride, padding] = pool;
  TRY(countPad, n.boolean("count_include_pad", true));
  SmallVector<int64_t> dilation(spatial, 1);
  TRY(outputSize, outputSpatialSizes(n, x));
  TRY(win, windows(n, x, kernel, stride, padding, dilation, outputSize, 0.0));
  tg::GraphMath m = n.math();
  Value sum = m.sum(stackWindows(n, win.slices), {2}, false);
  std::optional<Value> divisor;
  if (n.has("divisor_override")) {
    TRY(d, n.number("divisor_override"));
    divisor = m.scalar(sum, d);
  } else if (countPad &&
             llvm::all_of(padding, [](int64_t p) { return p == 0; })) {
    divisor = m.scalar(sum, static_cast<double>(win.slices.size()));
  }
  if (!divisor) {
    // The count of each window: the same pooling of ones (padding 0, and
    // beyond the padded input, PyTorch's ceil-mode windows, never counted).
    Value ones = tg::FullOp::create(n.b, n.loc, type, n.b.getF64FloatAttr(1.0));
    if (countPad) {
      for (int64_t i = 0; i < spatial; ++i)
        ones = tg::padAlongDim(n.b, n.loc, ones, 2 + i, padding[i], padding[i],
                               1.0);
      SmallVector<int64_t> zero(spatial, 0);
      TRY(counted,
          windows(n, ones, kernel, stride, zero, dilation, outputSize, 0.0));
      divisor = m.sum(stackWindows(n, counted.slices), {2}, false);
    } else {
      TRY(counted,
          windows(n, ones, kernel, stride, padding, dilation, outputSize, 0.0));
      divisor = m.sum(stackWindows(n, counted.slices), {2}, false);
    }
  }
  return n.define(0, m.div(sum, *divisor));
}

/// Batch norm: batch statistics in training (biased variance to normalize,
/// unbiased for the running variance), running statistics otherwise.
/// Outputs (out, mean, rstd[, new running mean, new running var]).
LogicalResult batchNorm(Node &n, bool functional, bool alwaysEval) {
  TRY(x, n.tensor("input"));
  std::optional<Value> weight = n.optionalTensor("weight");
  std::optional<Value> bias = n.optionalTensor("bias");
  std::optional<Value> runningMean = n.optionalTensor("running_mean");
  std::optional<Value> runningVar = n.optionalTensor("running_var");
  TRY(training, n.boolean("training", !alwaysEval));
  TRY(momentum, n.number("momentum", 0.1));
  TRY(eps, n.number("eps", 1e-5));
  RankedTensorType type = tg::typeOf(x);
  if (type.getRank() < 2)
    return n.error() << "batch_norm needs [N, C, ...], got " << type;
  int64_t channels = type.getDimSize(1);
  SmallVector<int64_t> dims = {0};
  int64_t count = type.getDimSize(0);
  for (int64_t d = 2; d < type.getRank(); ++d) {
    dims.push_back(d);
    count *= type.getDimSize(d);
  }
  SmallVector<int64_t> channelShape(type.getRank(), 1);
  channelShape[1] = channels;
  Type el = type.getElementType();
  auto perChannel = [&](Value v) {
    return tg::ReshapeOp::create(n.b, n.loc,
                                 RankedTensorType::get(channelShape, el),
                                 n.cast(v, el))
        .getResult();
  };
  tg::GraphMath m = n.math();
  Value mean, var;
  if (training) {
    mean = m.mean(x, dims, /*keepDim=*/true);
    Value centered = m.sub(x, mean);
    var = m.mean(m.mul(centered, centered), dims, true);
  } else {
    if (!runningMean || !runningVar)
      return n.error() << "batch_norm in eval mode needs running statistics";
    mean = perChannel(*runningMean);
    var = perChannel(*runningVar);
  }
  Value rstd = tg::RsqrtOp::create(n.b, n.loc, m.add(var, m.scalar(var, eps)));
  Value y = m.mul(m.sub(x, mean), rstd);
  if (weight)
    y = m.mul(y, perChannel(*weight));
  if (bias)
    y = m.add(y, perChannel(*bias));
  auto flat = [&](Value v) {
    return tg::ReshapeOp::create(n.b, n.loc,
                                 RankedTensorType::get({channels}, el), v)
        .getResult();
  };
  if (failed(n.define(0, y)))
    return failure();
  // The saved statistics: per channel in training, empty otherwise.
  // A named array: an ArrayRef over a braced list would refer to a
  // temporary that dies before the loop runs (ASan: stack-use-after-scope).
  Value statistics[] = {mean, rstd};
  for (auto [i, saved] : llvm::enumerate(statistics)) {
    if (!n.hasOutput(i + 1))
      continue;
    Value v = training ? flat(saved)
                       : tg::buildZeros(n.b, n.loc, n.outputType(i + 1));
    if (failed(n.define(i + 1, v)))
      return failure();
  }
  if (!functional || n.numOutputs() < 5)
    return success();
  if (!runningMean || !runningVar)
    return n.error() << "batch_norm's functional form needs running "
                        "statistics to update";
  // The running statistics' updates (their own dtype, usually f32).
  Value newMean = *runningMean, newVar = *runningVar;
  if (training) {
    Type statEl = tg::typeOf(*runningMean).getElementType();
    Value batchMean = n.cast(flat(mean), statEl);
    Value unbiased = n.cast(
        flat(m.mul(var, m.scalar(var, count / std::max<double>(1, count - 1)))),
        statEl);
    // The running statistics' shapes are the archive's word, not the
    // batch's: the blend's add checks them.
    auto blend = [&](Value running, Value batchValue) {
      return n.create<tg::AddOp>(
          m.mul(running, m.scalar(running, 1.0 - momentum)),
          m.mul(batchValue, m.scalar(batchValue, momentum)));
    };
    TRY(blendedMean, blend(*runningMean, batchMean));
    TRY(blendedVar, blend(*runningVar, unbiased));
    newMean = blendedMean;
    newVar = blendedVar;
  }
  if (failed(n.define(3, newMean)))
    return failure();
  return n.define(4, newVar);
}

/// adaptive_avg_pool: PyTorch's windows [floor(i*in/out), ceil((i+1)*in/out)).
LogicalResult adaptiveAvgPool(Node &n) {
  TRY(x, n.tensor("self"));
  RankedTensorType out = n.outputType(0);
  RankedTensorType type = tg::typeOf(x);
  if (out.getRank() != type.getRank())
    return n.error() << "computes " << out << " from " << type
                     << ": the ranks differ";
  tg::GraphMath m = n.math();
  Value v = x;
  for (int64_t dim = type.getRank() - 1; dim >= 0; --dim) {
    int64_t in = type.getDimSize(dim), o = out.getDimSize(dim);
    if (in == o)
      continue;
    if (o < 1 || in < 1)
      return n.error() << "adaptive pooling of " << in << " elements into " << o
                       << " windows";
    SmallVector<Value> pieces;
    for (int64_t i = 0; i < o; ++i) {
      int64_t start = i * in / o, end = ((i + 1) * in + o - 1) / o;
      pieces.push_back(m.mean(
          tg::SliceOp::create(n.b, n.loc, v, dim, start, end, 1), {dim}, true));
    }
    v = pieces.size() == 1
            ? pieces.front()
            : tg::ConcatOp::create(n.b, n.loc, pieces, dim).getResult();
  }
  return n.define(0, v);
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
    add("log1p.default", [](Node &n) {
      return elementwise(n, [](tg::GraphMath &m, Value x) {
        return log(m, m.add(x, m.scalar(x, 1.0)));
      });
    });
    add("expm1.default", [](Node &n) {
      return elementwise(n, [](tg::GraphMath &m, Value x) {
        return m.sub(exp(m, x), m.scalar(x, 1.0));
      });
    });
    add("log2.default", [](Node &n) {
      return elementwise(n, [](tg::GraphMath &m, Value x) {
        return m.mul(log(m, x), m.scalar(x, 1.0 / std::log(2.0)));
      });
    });
    add("log10.default", [](Node &n) {
      return elementwise(n, [](tg::GraphMath &m, Value x) {
        return m.mul(log(m, x), m.scalar(x, 1.0 / std::log(10.0)));
      });
    });
    add("tan.default", [](Node &n) {
      return elementwise(n, [](tg::GraphMath &m, Value x) {
        return m.div(tg::SinOp::create(m.b, m.loc, x),
                     tg::CosOp::create(m.b, m.loc, x));
      });
    });
    add("sinh.default", [](Node &n) {
      return elementwise(n, [](tg::GraphMath &m, Value x) {
        return m.mul(m.sub(exp(m, x), exp(m, m.neg(x))), m.scalar(x, 0.5));
      });
    });
    add("cosh.default", [](Node &n) {
      return elementwise(n, [](tg::GraphMath &m, Value x) {
        return m.mul(m.add(exp(m, x), exp(m, m.neg(x))), m.scalar(x, 0.5));
      });
    });
    add("leaky_relu.default", leakyRelu);
    add("hardtanh.default", hardtanh);
    add("elu.default", elu);
    add("clamp.default", clamp);
    add("clamp.Tensor", clamp);
    add("isnan.default", [](Node &n) -> LogicalResult {
      TRY(x, n.tensor("self"));
      return n.define(0, n.math().compare(tg::ComparePredicate::ne, x, x));
    });
    add("logical_xor.default", [](Node &n) -> LogicalResult {
      TRY(a, n.tensor("self"));
      TRY(b, n.tensor("other"));
      return n.define(0, n.create<tg::CompareOp>(tg::ComparePredicate::ne,
                                                 toBool(n, a), toBool(n, b)));
    });
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
      for (auto p : {tg::ComparePredicate::eq, tg::ComparePredicate::ne,
                     tg::ComparePredicate::lt, tg::ComparePredicate::le,
                     tg::ComparePredicate::gt, tg::ComparePredicate::ge})
        add((tg::stringifyComparePredicate(p) + "." + overload).str(),
            comparison(p));
    }
    add("floor.default", rounding<tg::FloorOp>());
    add("ceil.default", rounding<tg::CeilOp>());
    add("trunc.default", rounding<tg::TruncOp>());
    add("round.default", rounding<tg::RoundOp>());
    add("round.decimals", roundDecimals);
    add("sign.default", sign);
    for (StringRef overload : {"Tensor", "Scalar"}) {
      add(("fmod." + overload).str(), [](Node &n) {
        return binaryFormula(n, rem);
      });
      add(("remainder." + overload).str(), [](Node &n) {
        return binaryFormula(n, remainder);
      });
      add(("div." + overload + "_mode").str(), divWithRounding);
    }
    add("maximum.default", binary<tg::MaximumOp>());
    add("minimum.default", binary<tg::MinimumOp>());
    add("pow.Tensor_Scalar", pow);
    add("pow.Tensor_Tensor", pow);
    add("pow.Scalar", powScalarBase);
    add("bitwise_and.Tensor", bitwiseBinary<tg::AndOp>);
    add("bitwise_and.Scalar", bitwiseBinary<tg::AndOp>);
    add("bitwise_or.Tensor", bitwiseBinary<tg::OrOp>);
    add("bitwise_or.Scalar", bitwiseBinary<tg::OrOp>);
    add("bitwise_not.default", bitwiseNot);
    add("cumsum.default", cumsum);
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
    add("amin.default",
        [](Node &n) { return extremeOverDim(n, false, false, false); });
    add("max.dim",
        [](Node &n) { return extremeOverDim(n, true, true, false); });
    add("min.dim",
        [](Node &n) { return extremeOverDim(n, false, true, false); });
    add("argmax.default",
        [](Node &n) { return extremeOverDim(n, true, false, true); });
    add("argmin.default",
        [](Node &n) { return extremeOverDim(n, false, false, true); });
    add("var.correction", variance);
    add("var.dim", variance);
    add("any.dim", anyDim);
    add("any.dims", anyDim);
    // Linear algebra.
    add("mm.default", matmul);
    add("bmm.default", matmul);
    add("matmul.default", matmul);
    add("addmm.default", addmm);
    add("linear.default", linear);
    // Shapes and data movement.
    add("view.default", viewAs("size"));
    add("_unsafe_view.default", viewAs("size"));
    add("reshape.default", viewAs("shape"));
    for (StringRef op : {"unsqueeze.default", "squeeze.dim", "squeeze.dims",
                         "squeeze.default", "flatten.using_ints"})
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
    add("constant_pad_nd.default", constantPad);
    add("copy.default", copy);
    add("slice_scatter.default", sliceScatter);
    add("repeat.default", repeat);
    add("index.Tensor", indexTensor);
    add("convolution.default", convolution);
    add("max_pool2d_with_indices.default", maxPoolWithIndices);
    add("max_pool3d_with_indices.default", maxPoolWithIndices);
    add("adaptive_avg_pool1d.default", adaptiveAvgPool);
    add("_adaptive_avg_pool2d.default", adaptiveAvgPool);
    add("adaptive_avg_pool2d.default", adaptiveAvgPool);
    add("_adaptive_avg_pool3d.default", adaptiveAvgPool);
    add("_native_batch_norm_legit_functional.default",
        [](Node &n) { return batchNorm(n, /*functional=*/true, false); });
    add("_native_batch_norm_legit_no_training.default",
        [](Node &n) { return batchNorm(n, false, /*alwaysEval=*/true); });
    add("_native_batch_norm_legit.no_stats",
        [](Node &n) { return batchNorm(n, false, false); });
    add("embedding.default", embedding);
    add("gather.default", gather);
    add("index_select.default", indexSelect);
    add("flip.default", flip);
    add("as_strided.default", asStrided);
    add("select_scatter.default", selectScatter);
    add("avg_pool2d.default", avgPool);
    add("avg_pool3d.default", avgPool);
    add("native_group_norm.default", groupNorm);
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
