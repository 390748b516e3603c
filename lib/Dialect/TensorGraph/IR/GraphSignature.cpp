//===- GraphSignature.cpp - names and roles of a graph's tensors ----------===//

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace spmdc::tg {

func::FuncOp getEntryFunction(ModuleOp module) {
  auto fn = module.lookupSymbol<func::FuncOp>(kEntryName);
  if (!fn)
    module.emitError() << "the module has no entry function @" << kEntryName;
  return fn;
}

std::optional<InitialValueRef> readInitialValueRef(DictionaryAttr attr) {
  auto file = attr.getAs<StringAttr>("file");
  auto entry = attr.getAs<StringAttr>("entry");
  auto offset = attr.getAs<IntegerAttr>("offset");
  auto bytes = attr.getAs<IntegerAttr>("bytes");
  auto storageOffset = attr.getAs<IntegerAttr>("storage_offset");
  auto strides = attr.getAs<DenseI64ArrayAttr>("strides");
  if (!file || !offset || !bytes || !storageOffset || !strides ||
      offset.getInt() < 0 || bytes.getInt() < 0 || storageOffset.getInt() < 0)
    return std::nullopt;
  InitialValueRef ref;
  ref.file = file.str();
  ref.entry = entry ? entry.str() : "";
  ref.offset = offset.getInt();
  ref.bytes = bytes.getInt();
  ref.storageOffset = storageOffset.getInt();
  ref.strides.assign(strides.asArrayRef().begin(), strides.asArrayRef().end());
  return ref;
}

DictionaryAttr initialValueRefAttr(MLIRContext *context,
                                   const InitialValueRef &ref) {
  Builder b(context);
  return b.getDictionaryAttr(
      {b.getNamedAttr("file", b.getStringAttr(ref.file)),
       b.getNamedAttr("entry", b.getStringAttr(ref.entry)),
       b.getNamedAttr("offset", b.getI64IntegerAttr(ref.offset)),
       b.getNamedAttr("bytes", b.getI64IntegerAttr(ref.bytes)),
       b.getNamedAttr("storage_offset", b.getI64IntegerAttr(ref.storageOffset)),
       b.getNamedAttr("strides", b.getDenseI64ArrayAttr(ref.strides))});
}

std::vector<ConstantBufferInfo> getConstantBuffers(ModuleOp module) {
  std::vector<ConstantBufferInfo> buffers;
  auto list = module->getAttrOfType<ArrayAttr>(kConstantBuffersAttr);
  if (!list)
    return buffers;
  for (Attribute a : list) {
    auto dict = llvm::dyn_cast<DictionaryAttr>(a);
    if (!dict)
      continue;
    auto name = dict.getAs<StringAttr>("name");
    auto type = dict.getAs<TypeAttr>("type");
    auto ref = dict.getAs<DictionaryAttr>("init_ref");
    std::optional<InitialValueRef> initRef =
        ref ? readInitialValueRef(ref) : std::nullopt;
    auto tensor = type ? llvm::dyn_cast<RankedTensorType>(type.getValue())
                       : RankedTensorType();
    if (!name || !tensor || !initRef)
      continue;
    buffers.push_back({name.str(), tensor, *initRef});
  }
  return buffers;
}

static std::vector<GraphValueInfo> readInfos(func::FuncOp fn, bool arguments) {
  std::vector<GraphValueInfo> infos;
  unsigned count = arguments ? fn.getNumArguments() : fn.getNumResults();
  for (unsigned i = 0; i < count; ++i) {
    DictionaryAttr attrs =
        arguments ? fn.getArgAttrDict(i) : fn.getResultAttrDict(i);
    Type type = arguments ? fn.getArgument(i).getType() : fn.getResultTypes()[i];
    GraphValueInfo info;
    info.type = llvm::dyn_cast<RankedTensorType>(type);
    if (attrs) {
      if (auto name = attrs.getAs<StringAttr>(kNameAttr))
        info.name = name.str();
      if (auto role = attrs.getAs<RoleAttr>(kRoleAttr))
        info.role = role.getValue();
      if (auto bound = attrs.getAs<IntegerAttr>(kIndexBoundAttr))
        info.indexBound = bound.getInt();
      info.initialValue = attrs.getAs<ElementsAttr>(kInitAttr);
      if (auto ref = attrs.getAs<DictionaryAttr>(kInitRefAttr))
        info.initRef = readInitialValueRef(ref);
      info.buffer = attrs.contains(kBufferAttr);
      if (auto value = attrs.getAs<FloatAttr>(kDefaultAttr))
        info.defaultValue = value.getValueAsDouble();
      if (auto aliases = attrs.getAs<ArrayAttr>(kAliasesAttr))
        for (Attribute a : aliases)
          info.aliases.push_back(llvm::cast<StringAttr>(a).str());
    }
    infos.push_back(std::move(info));
  }
  return infos;
}

std::vector<GraphValueInfo> getArgumentInfos(func::FuncOp fn) {
  return readInfos(fn, /*arguments=*/true);
}

std::vector<GraphValueInfo> getResultInfos(func::FuncOp fn) {
  return readInfos(fn, /*arguments=*/false);
}

bool feedsBack(const GraphValueInfo &result, const GraphValueInfo &argument) {
  return (result.role == Role::param || result.role == Role::state) &&
         result.role == argument.role && result.name == argument.name;
}

static LogicalResult verifyInfos(func::FuncOp fn, bool arguments) {
  StringRef what = arguments ? "argument" : "result";
  llvm::StringSet<> seen;
  int losses = 0;
  auto infos = readInfos(fn, arguments);
  for (auto [i, info] : llvm::enumerate(infos)) {
    if (!info.type)
      return fn.emitError() << what << " #" << i
                            << " is not a ranked tensor";
    if (info.name.empty() || !info.role)
      return fn.emitError() << what << " #" << i << " needs '" << kNameAttr
                            << "' and '" << kRoleAttr << "' attributes";
    if (!seen.insert(stringifyRole(*info.role).str() + "/" + info.name).second)
      return fn.emitError() << what << " #" << i << ": name '" << info.name
                            << "' is used twice for role '"
                            << stringifyRole(*info.role) << "'";
    if (info.role == Role::loss) {
      if (++losses > 1)
        return fn.emitError() << "the graph has more than one loss result";
      if (info.type.getRank() != 0 ||
          !llvm::isa<FloatType>(info.type.getElementType()))
        return fn.emitError() << "the loss result '" << info.name
                              << "' must be a float scalar, got "
                              << info.type;
    }
    if (info.role == Role::hyper &&
        (info.type.getRank() != 0 ||
         !llvm::isa<FloatType>(info.type.getElementType())))
      return fn.emitError() << "the hyperparameter '" << info.name
                            << "' must be a float scalar, got " << info.type;
  }
  return success();
}

LogicalResult verifyGraphSignature(ModuleOp module) {
  func::FuncOp fn = getEntryFunction(module);
  if (!fn)
    return failure();
  if (fn.isExternal())
    return fn.emitError() << "the entry function has no body";
  return success(succeeded(verifyInfos(fn, /*arguments=*/true)) &&
                 succeeded(verifyInfos(fn, /*arguments=*/false)));
}

/// The exclusive upper bound that `user` imposes on its integer operand
/// `operandNumber`, if any, looking through shape ops to further users.
static std::optional<int64_t> boundFromUse(Operation *user,
                                           unsigned operandNumber) {
  auto dimOf = [](Value v, int64_t dim) {
    auto type = llvm::cast<RankedTensorType>(v.getType());
    return type.getDimSize(dim < 0 ? dim + type.getRank() : dim);
  };
  if (auto op = llvm::dyn_cast<EmbeddingOp>(user))
    return dimOf(op.getWeight(), 0);
  if (auto op = llvm::dyn_cast<CrossEntropyOp>(user))
    return dimOf(op.getLogits(), -1);
  if (auto op = llvm::dyn_cast<GatherOp>(user))
    return operandNumber == 1 ? std::optional(dimOf(op.getInput(), op.getDim()))
                              : std::nullopt;
  // Through ops that move values around, and through the value operands
  // of a select (PyTorch's cross-entropy selects labels != ignore_index).
  bool selectsValue = llvm::isa<SelectOp>(user) && operandNumber != 0;
  if (selectsValue || user->hasTrait<tg::OpTrait::MovesValues>()) {
    std::optional<int64_t> bound;
    for (OpOperand &use : user->getResult(0).getUses())
      if (auto b = boundFromUse(use.getOwner(), use.getOperandNumber()))
        bound = bound ? std::min(*bound, *b) : *b;
    return bound;
  }
  return std::nullopt;
}

void annotateIndexBounds(func::FuncOp fn) {
  for (BlockArgument arg : fn.getArguments()) {
    auto type = llvm::dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.getElementType().isSignlessInteger() ||
        type.getElementType().isInteger(1) ||
        fn.getArgAttr(arg.getArgNumber(), kIndexBoundAttr))
      continue;
    std::optional<int64_t> bound;
    for (OpOperand &use : arg.getUses())
      if (auto b = boundFromUse(use.getOwner(), use.getOperandNumber()))
        bound = bound ? std::min(*bound, *b) : *b;
    if (bound && *bound >= 1)
      fn.setArgAttr(arg.getArgNumber(), kIndexBoundAttr,
                    Builder(fn.getContext()).getI64IntegerAttr(*bound));
  }
}

} // namespace spmdc::tg
