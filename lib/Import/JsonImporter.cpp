//===- JsonImporter.cpp - the project's JSON graph format into tg ---------===//
//
// Reads docs/graph-format.md's format. Every node becomes one tg op built
// generically by its mnemonic; result types come from the op's own shape
// rule (InferTypeOpInterface) or, for ops without one, from the node's
// "shape"/"dtype". Errors name the file and a JSON pointer.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Import/Import.h"
#include "spmdc/Runtime/Limits.h"
#include "spmdc/Support/JsonDocument.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"

#include <nlohmann/json.hpp>

#include <utility>

using namespace mlir;
using json = nlohmann::json;

namespace spmdc {
namespace {

/// The JSON kind each attribute name takes; attribute names mean the same on
/// every op, so one table types them all.
enum class AttrKind { Int, IntList, Float, String, Predicate, Flag, Unknown };

AttrKind attrKindOf(StringRef name) {
  return llvm::StringSwitch<AttrKind>(name)
      .Cases({"dim", "start", "end", "step", "seed"}, AttrKind::Int)
      .Cases({"dims", "permutation"}, AttrKind::IntList)
      .Cases({"eps", "p", "scale", "value"}, AttrKind::Float)
      .Case("approximate", AttrKind::String)
      .Case("predicate", AttrKind::Predicate)
      .Cases({"keepdim", "causal"}, AttrKind::Flag)
      .Default(AttrKind::Unknown);
}

class JsonGraphImporter {
public:
  JsonGraphImporter(MLIRContext &context, StringRef fileName)
      : context(context), fileName(fileName), builder(&context),
        fileLoc(FileLineColLoc::get(&context, fileName, 0, 0)) {}

  OwningOpRef<ModuleOp> import(const json &root);

private:
  /// An error located at a JSON pointer of the document.
  InFlightDiagnostic error(const std::string &pointer) {
    return emitError(jsonPointerLoc(context, fileName, pointer));
  }

  LogicalResult checkKeys(const json &object, const std::string &pointer,
                          std::initializer_list<const char *> allowed,
                          std::initializer_list<const char *> required);
  FailureOr<RankedTensorType> parseTensorType(const json &object,
                                              const std::string &pointer);
  FailureOr<Type> parseDType(const json &dtype, const std::string &pointer);
  FailureOr<NamedAttribute> parseAttr(StringRef op, const std::string &key,
                                      const json &value,
                                      const std::string &pointer,
                                      RankedTensorType declaredType);
  LogicalResult importNode(const json &node, const std::string &pointer);
  LogicalResult defineValue(const std::string &name, Value value,
                            const std::string &pointer);

  MLIRContext &context;
  std::string fileName;
  OpBuilder builder;
  Location fileLoc;
  llvm::StringMap<Value> values;
};

LogicalResult JsonGraphImporter::checkKeys(
    const json &object, const std::string &pointer,
    std::initializer_list<const char *> allowed,
    std::initializer_list<const char *> required) {
  return checkJsonKeys(context, fileName, object, pointer, allowed, required);
}

FailureOr<Type> JsonGraphImporter::parseDType(const json &dtype,
                                              const std::string &pointer) {
  std::string name = dtype.is_string() ? dtype.get<std::string>() : "";
  Type type = llvm::StringSwitch<Type>(name)
                  .Case("f64", builder.getF64Type())
                  .Case("f32", builder.getF32Type())
                  .Case("f16", builder.getF16Type())
                  .Case("bf16", builder.getBF16Type())
                  .Case("i64", builder.getI64Type())
                  .Case("i32", builder.getI32Type())
                  .Case("i1", builder.getI1Type())
                  .Default(Type());
  if (!type)
    return error(pointer) << "unknown dtype " << dtype.dump()
                          << " (expected f64, f32, f16, bf16, i64, i32 or i1)";
  return type;
}

FailureOr<RankedTensorType>
JsonGraphImporter::parseTensorType(const json &object,
                                   const std::string &pointer) {
  if (!object.contains("shape") || !object.contains("dtype"))
    return error(pointer) << "needs both 'shape' and 'dtype'";
  const json &shapeJson = object["shape"];
  if (!shapeJson.is_array())
    return error(pointer + "/shape") << "expected a list of sizes";
  SmallVector<int64_t> shape;
  // Element counts past 2^48 overflow byte arithmetic downstream.
  constexpr int64_t kMaxElements = int64_t(1) << 48;
  int64_t elements = 1;
  for (auto [i, size] : llvm::enumerate(shapeJson)) {
    if (!size.is_number_integer() || size.get<int64_t>() < 0)
      return error(pointer + "/shape/" + std::to_string(i))
             << "expected a non-negative integer size, got " << size.dump();
    int64_t n = size.get<int64_t>();
    if (n > 0 && elements > kMaxElements / n)
      return error(pointer + "/shape")
             << "the tensor has more than 2^48 elements";
    elements *= n;
    shape.push_back(n);
  }
  auto element = parseDType(object["dtype"], pointer + "/dtype");
  if (failed(element))
    return failure();
  uint64_t bytes;
  std::string sizeError;
  if (!rt::checkTensorSize(
          std::vector<int64_t>(shape.begin(), shape.end()),
          std::max(1u, element->getIntOrFloatBitWidth() / 8), bytes,
          sizeError))
    return error(pointer + "/shape") << sizeError;
  return RankedTensorType::get(shape, *element);
}

FailureOr<NamedAttribute> JsonGraphImporter::parseAttr(
    StringRef op, const std::string &key, const json &value,
    const std::string &pointer, RankedTensorType declaredType) {
  StringAttr name = builder.getStringAttr(key);
  if (op == "constant" && key == "value") {
    // A literal tensor: a flat row-major list of the node's dtype.
    if (!declaredType)
      return error(pointer) << "a constant needs 'shape' and 'dtype'";
    if (!value.is_array() ||
        static_cast<int64_t>(value.size()) != declaredType.getNumElements())
      return error(pointer) << "expected a flat list of "
                            << declaredType.getNumElements() << " numbers";
    Type element = declaredType.getElementType();
    SmallVector<Attribute> elements;
    for (auto [i, v] : llvm::enumerate(value)) {
      if (!v.is_number() && !v.is_boolean())
        return error(pointer + "/" + std::to_string(i))
               << "expected a number, got " << v.dump();
      double d = v.is_boolean() ? v.get<bool>() : v.get<double>();
      if (auto f = llvm::dyn_cast<FloatType>(element))
        elements.push_back(builder.getFloatAttr(f, d));
      else
        elements.push_back(
            builder.getIntegerAttr(element, static_cast<int64_t>(d)));
    }
    return NamedAttribute(name, DenseElementsAttr::get(declaredType, elements));
  }

  switch (attrKindOf(key)) {
  case AttrKind::Int:
    if (!value.is_number_integer())
      return error(pointer) << "expected an integer, got " << value.dump();
    return NamedAttribute(name, builder.getI64IntegerAttr(value.get<int64_t>()));
  case AttrKind::IntList: {
    if (!value.is_array())
      return error(pointer) << "expected a list of integers, got "
                            << value.dump();
    SmallVector<int64_t> ints;
    for (auto [i, v] : llvm::enumerate(value)) {
      if (!v.is_number_integer())
        return error(pointer + "/" + std::to_string(i))
               << "expected an integer, got " << v.dump();
      ints.push_back(v.get<int64_t>());
    }
    return NamedAttribute(name, builder.getDenseI64ArrayAttr(ints));
  }
  case AttrKind::Float:
    if (value.is_string() && (value == "Infinity" || value == "-Infinity"))
      return NamedAttribute(
          name, builder.getF64FloatAttr(value == "Infinity"
                                            ? INFINITY
                                            : -INFINITY));
    if (!value.is_number())
      return error(pointer) << "expected a number, got " << value.dump();
    return NamedAttribute(name, builder.getF64FloatAttr(value.get<double>()));
  case AttrKind::String:
    if (!value.is_string())
      return error(pointer) << "expected a string, got " << value.dump();
    return NamedAttribute(name,
                          builder.getStringAttr(value.get<std::string>()));
  case AttrKind::Predicate: {
    std::optional<tg::ComparePredicate> predicate =
        value.is_string()
            ? tg::symbolizeComparePredicate(value.get<std::string>())
            : std::nullopt;
    if (!predicate)
      return error(pointer) << "expected one of \"eq\", \"ne\", \"lt\", "
                               "\"le\", \"gt\", \"ge\", got "
                            << value.dump();
    return NamedAttribute(
        name, tg::ComparePredicateAttr::get(&context, *predicate));
  }
  case AttrKind::Flag:
    if (!value.is_boolean())
      return error(pointer) << "expected true or false, got " << value.dump();
    return NamedAttribute(name, builder.getUnitAttr());
  case AttrKind::Unknown:
    break;
  }
  return error(pointer) << "unknown attribute '" << key << "'";
}

LogicalResult JsonGraphImporter::defineValue(const std::string &name,
                                             Value value,
                                             const std::string &pointer) {
  if (name.empty())
    return error(pointer) << "names must not be empty";
  if (!values.try_emplace(name, value).second)
    return error(pointer) << "name '" << name << "' is defined twice";
  return success();
}

/// The operand count `op`'s traits require: (n, false) for exactly n,
/// (n, true) for at least n; none for variadic operands.
template <unsigned... Exact, unsigned... AtLeast>
static std::optional<std::pair<size_t, bool>>
operandArityOf(RegisteredOperationName op,
               std::integer_sequence<unsigned, Exact...>,
               std::integer_sequence<unsigned, AtLeast...>) {
  std::optional<std::pair<size_t, bool>> arity;
  if (op.hasTrait<OpTrait::ZeroOperands>())
    arity = {0, false};
  if (op.hasTrait<OpTrait::OneOperand>())
    arity = {1, false};
  ((op.hasTrait<OpTrait::NOperands<Exact>::template Impl>()
        ? void(arity = {Exact, false})
        : void()),
   ...);
  ((op.hasTrait<OpTrait::AtLeastNOperands<AtLeast>::template Impl>()
        ? void(arity = {AtLeast, true})
        : void()),
   ...);
  return arity;
}

static std::optional<std::pair<size_t, bool>>
operandArity(RegisteredOperationName op) {
  return operandArityOf(op, std::integer_sequence<unsigned, 2, 3, 4, 5, 6, 7, 8>(),
                        std::integer_sequence<unsigned, 1, 2, 3, 4>());
}

LogicalResult JsonGraphImporter::importNode(const json &node,
                                            const std::string &pointer) {
  if (failed(checkKeys(node, pointer,
                       {"name", "op", "inputs", "attrs", "shape", "dtype"},
                       {"name", "op"})))
    return failure();
  if (!node["name"].is_string())
    return error(pointer + "/name") << "expected a string";
  if (!node["op"].is_string())
    return error(pointer + "/op") << "expected a string";
  std::string nodeName = node["name"].get<std::string>();
  std::string opName = node["op"].get<std::string>();
  Location loc = NameLoc::get(builder.getStringAttr(nodeName), fileLoc);

  std::optional<RegisteredOperationName> registered =
      RegisteredOperationName::lookup("tg." + opName, &context);
  if (!registered)
    return error(pointer + "/op")
           << "unknown op '" << opName << "' in node '" << nodeName
           << "' (see docs/dialect.md for the ops)";

  SmallVector<Value> operands;
  if (node.contains("inputs")) {
    const json &inputs = node["inputs"];
    if (!inputs.is_array())
      return error(pointer + "/inputs") << "expected a list of value names";
    for (auto [i, input] : llvm::enumerate(inputs)) {
      std::string inputPointer = pointer + "/inputs/" + std::to_string(i);
      if (!input.is_string())
        return error(inputPointer) << "expected a value name, got "
                                   << input.dump();
      auto it = values.find(input.get<std::string>());
      if (it == values.end())
        return error(inputPointer)
               << "unknown value '" << input.get<std::string>()
               << "' (not an input or an earlier node)";
      operands.push_back(it->second);
    }
  }

  // The op's shape rule reads its operands by position, unchecked: the
  // count its traits require comes first (an `add` of one input read past
  // its operands; found by fuzz/json-graph-fuzzer.cpp).
  if (auto arity = operandArity(*registered);
      arity && (operands.size() < arity->first ||
                (!arity->second && operands.size() != arity->first)))
    return error(pointer + "/inputs")
           << "op '" << opName << "' takes " << (arity->second ? "at least " : "")
           << arity->first << " input" << (arity->first == 1 ? "" : "s")
           << ", got " << operands.size();

  RankedTensorType declaredType;
  if (node.contains("shape") || node.contains("dtype")) {
    auto type = parseTensorType(node, pointer);
    if (failed(type))
      return failure();
    declaredType = *type;
  }

  NamedAttrList attrs;
  if (node.contains("attrs")) {
    const json &attrsJson = node["attrs"];
    if (!attrsJson.is_object())
      return error(pointer + "/attrs") << "expected an object";
    ArrayRef<StringAttr> known = registered->getAttributeNames();
    for (auto it = attrsJson.begin(); it != attrsJson.end(); ++it) {
      std::string attrPointer = pointer + "/attrs/" + it.key();
      if (!llvm::is_contained(known, builder.getStringAttr(it.key())))
        return error(attrPointer) << "op '" << opName
                                  << "' has no attribute '" << it.key() << "'";
      auto attr = parseAttr(opName, it.key(), it.value(), attrPointer,
                            declaredType);
      if (failed(attr))
        return failure();
      // A false flag is an absent unit attribute.
      if (it.value().is_boolean() && !it.value().get<bool>())
        continue;
      attrs.push_back(*attr);
    }
  }

  // The result type: the op's own shape rule where it has one, checked
  // against a declared type; otherwise the declared type.
  SmallVector<Type> resultTypes;
  if (auto *infer = registered->getInterface<InferTypeOpInterface>()) {
    if (failed(infer->inferReturnTypes(&context, loc, operands,
                                       attrs.getDictionary(&context),
                                       OpaqueProperties(nullptr),
                                       RegionRange(), resultTypes)))
      return failure();
    if (declaredType && resultTypes.front() != declaredType)
      return error(pointer) << "node '" << nodeName << "' declares type "
                            << declaredType << " but op '" << opName
                            << "' gives " << resultTypes.front();
  } else {
    if (!declaredType)
      return error(pointer) << "node '" << nodeName << "' (op '" << opName
                            << "') needs 'shape' and 'dtype'";
    resultTypes.push_back(declaredType);
  }

  OperationState state(loc, *registered);
  state.addOperands(operands);
  state.addAttributes(attrs);
  state.addTypes(resultTypes);
  Operation *op = builder.create(state);
  if (failed(verify(op, /*verifyRecursively=*/false)))
    return failure();
  return defineValue(nodeName, op->getResult(0), pointer + "/name");
}

OwningOpRef<ModuleOp> JsonGraphImporter::import(const json &root) {
  if (failed(checkKeys(root, "",
                       {"format", "version", "name", "inputs", "nodes",
                        "outputs"},
                       {"version", "inputs", "nodes", "outputs"})))
    return nullptr;
  if (root.contains("format") && root["format"] != "spmdc.graph") {
    error("/format") << "expected \"spmdc.graph\", got "
                     << root["format"].dump();
    return nullptr;
  }
  if (!root["version"].is_number_integer() || root["version"] != 1) {
    error("/version") << "unsupported version " << root["version"].dump()
                      << " (this spmdc reads version 1)";
    return nullptr;
  }
  for (const char *list : {"inputs", "nodes", "outputs"})
    if (!root[list].is_array()) {
      error(std::string("/") + list) << "expected a list";
      return nullptr;
    }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  if (root.contains("name") && root["name"].is_string())
    (*module)->setAttr(tg::kModelAttr,
                       builder.getStringAttr(root["name"].get<std::string>()));

  // The signature: one argument per input.
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  for (auto [i, input] : llvm::enumerate(root["inputs"])) {
    std::string pointer = "/inputs/" + std::to_string(i);
    if (failed(checkKeys(input, pointer,
                         {"name", "role", "dtype", "shape", "index_bound"},
                         {"name", "role", "dtype", "shape"})))
      return nullptr;
    if (!input["name"].is_string() || !input["role"].is_string()) {
      error(pointer) << "'name' and 'role' must be strings";
      return nullptr;
    }
    std::string role = input["role"].get<std::string>();
    std::optional<tg::Role> inputRole = tg::symbolizeRole(role);
    if (!inputRole || !tg::isArgumentRole(*inputRole)) {
      error(pointer + "/role") << "unknown input role '" << role
                               << "' (expected param, data or state)";
      return nullptr;
    }
    auto type = parseTensorType(input, pointer);
    if (failed(type))
      return nullptr;
    NamedAttrList attrs;
    attrs.append(tg::kNameAttr, builder.getStringAttr(
                                    input["name"].get<std::string>()));
    attrs.append(tg::kRoleAttr, tg::RoleAttr::get(&context, *inputRole));
    if (input.contains("index_bound")) {
      if (!input["index_bound"].is_number_integer() ||
          input["index_bound"].get<int64_t>() < 1) {
        error(pointer + "/index_bound") << "expected a positive integer";
        return nullptr;
      }
      attrs.append(tg::kIndexBoundAttr, builder.getI64IntegerAttr(
                                            input["index_bound"].get<int64_t>()));
    }
    argTypes.push_back(*type);
    argAttrs.push_back(attrs.getDictionary(&context));
  }

  builder.setInsertionPointToEnd(module->getBody());
  auto fn = func::FuncOp::create(builder, fileLoc, tg::kEntryName,
                                 builder.getFunctionType(argTypes, {}));
  Block *body = fn.addEntryBlock();
  builder.setInsertionPointToStart(body);
  for (auto [i, input] : llvm::enumerate(root["inputs"])) {
    fn.setArgAttrs(i, argAttrs[i]);
    if (failed(defineValue(input["name"].get<std::string>(),
                           body->getArgument(i),
                           "/inputs/" + std::to_string(i) + "/name")))
      return nullptr;
  }

  for (auto [i, node] : llvm::enumerate(root["nodes"]))
    if (failed(importNode(node, "/nodes/" + std::to_string(i))))
      return nullptr;

  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (auto [i, output] : llvm::enumerate(root["outputs"])) {
    std::string pointer = "/outputs/" + std::to_string(i);
    if (failed(checkKeys(output, pointer, {"name", "value", "role"},
                         {"name", "value", "role"})))
      return nullptr;
    if (!output["name"].is_string() || !output["value"].is_string() ||
        !output["role"].is_string()) {
      error(pointer) << "'name', 'value' and 'role' must be strings";
      return nullptr;
    }
    std::string role = output["role"].get<std::string>();
    std::optional<tg::Role> outputRole = tg::symbolizeRole(role);
    if (!outputRole || !tg::isResultRole(*outputRole)) {
      error(pointer + "/role")
          << "unknown output role '" << role
          << "' (expected loss, output, param, state or grad)";
      return nullptr;
    }
    auto it = values.find(output["value"].get<std::string>());
    if (it == values.end()) {
      error(pointer + "/value")
          << "unknown value '" << output["value"].get<std::string>() << "'";
      return nullptr;
    }
    results.push_back(it->second);
    NamedAttrList attrs;
    attrs.append(tg::kNameAttr, builder.getStringAttr(
                                    output["name"].get<std::string>()));
    attrs.append(tg::kRoleAttr, tg::RoleAttr::get(&context, *outputRole));
    resultAttrs.push_back(attrs.getDictionary(&context));
  }
  func::ReturnOp::create(builder, fileLoc, results);
  fn.setFunctionType(builder.getFunctionType(argTypes,
                                             ValueRange(results).getTypes()));
  for (auto [i, attrs] : llvm::enumerate(resultAttrs))
    fn.setResultAttrs(i, attrs);

  if (failed(verify(*module)))
    return nullptr;
  tg::annotateIndexBounds(fn);
  return module;
}

} // namespace

OwningOpRef<ModuleOp> importJsonGraph(StringRef text, StringRef fileName,
                                      MLIRContext &context) {
  std::optional<json> root = parseJsonDocument(text, fileName, context);
  if (!root)
    return nullptr;
  return JsonGraphImporter(context, fileName).import(*root);
}

} // namespace spmdc
