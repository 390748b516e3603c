//===- WideInterfacesThroughMemory.cpp - wide calls by pointer ------------===//
//
// --wide-interfaces-through-memory: a step's glue functions take and return
// every tensor of the step as memref descriptors, thousands of scalars. As
// SSA arguments and one returned aggregate they are all live from entry to
// return, and LLVM's instruction selection, scheduler and register
// allocator cost grew faster than linearly in them (GPT-2 small's backward
// and main: 30 of the JIT's 40 seconds). Through memory, each value is
// loaded where it is used and stored where it is made.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace spmdc {
#define GEN_PASS_DEF_WIDEINTERFACESTHROUGHMEMORY
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

using SymbolUsers = llvm::StringMap<SmallVector<Operation *>>;

/// The ops that name each symbol of `module`, in one walk: what
/// SymbolTable::getSymbolUses finds, without first making each op's
/// properties into an attribute dictionary (uniqued in the context, a
/// tenth of a second on GPT-2 small's ~100,000 ops). Types are not looked
/// into: they name no symbols. Nothing when an unregistered op with regions
/// may hide a symbol table.
std::optional<SymbolUsers> symbolUsers(ModuleOp module) {
  SymbolUsers users;
  auto note = [&](Operation *user, Attribute attr) {
    if (auto ref = dyn_cast<SymbolRefAttr>(attr)) {
      users[ref.getRootReference()].push_back(user);
      return;
    }
    // Attributes that hold no others need no walk.
    if (isa<IntegerAttr, FloatAttr, StringAttr, TypeAttr, UnitAttr,
            DenseArrayAttr, DenseElementsAttr>(attr))
      return;
    attr.walk<WalkOrder::PreOrder>(
        [&](SymbolRefAttr ref) {
          users[ref.getRootReference()].push_back(user);
        },
        [](Type) { return WalkResult::skip(); });
  };
  WalkResult walked = module.getBody()->walk([&](Operation *op) {
    std::optional<RegisteredOperationName> name = op->getRegisteredInfo();
    if (!name && op->getNumRegions())
      return WalkResult::interrupt();
    if (name)
      for (StringAttr attrName : name->getAttributeNames())
        if (std::optional<Attribute> attr = op->getInherentAttr(attrName))
          if (*attr)
            note(op, *attr);
    for (NamedAttribute attr : op->getDiscardableAttrs())
      note(op, attr.getValue());
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return std::nullopt;
  return users;
}

/// Scalars a value of `type` is made of.
int64_t scalarCount(Type type) {
  if (auto structType = dyn_cast<LLVM::LLVMStructType>(type)) {
    int64_t count = 0;
    for (Type field : structType.getBody())
      count += scalarCount(field);
    return count;
  }
  if (auto array = dyn_cast<LLVM::LLVMArrayType>(type))
    return array.getNumElements() * scalarCount(array.getElementType());
  return isa<LLVM::LLVMVoidType>(type) ? 0 : 1;
}

/// A pointer to field `index` of the struct `type` at `base`.
Value fieldAddress(OpBuilder &b, Location loc, Value base,
                   LLVM::LLVMStructType type, int64_t index) {
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  return LLVM::GEPOp::create(
      b, loc, ptr, type, base,
      ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(index)});
}

/// One `type` on the stack of `function`, allocated on entry.
Value entryAlloca(LLVM::LLVMFuncOp function, Type type) {
  Block &entry = function.getBody().front();
  OpBuilder b(&entry, entry.begin());
  Location loc = function.getLoc();
  Value one = LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                       b.getI64IntegerAttr(1));
  return LLVM::AllocaOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), type, one);
}

/// Stores `value` to `address` right after it is defined, so it is not
/// kept live until a later use; a block argument is stored before
/// `fallback` (the use).
void storeWhereDefined(Value value, Value address, Operation *fallback) {
  OpBuilder b(value.getContext());
  if (Operation *def = value.getDefiningOp())
    b.setInsertionPointAfter(def);
  else
    b.setInsertionPoint(fallback);
  auto store = LLVM::StoreOp::create(b, value.getLoc(), value, address);
  // The address (a GEP of an entry block's alloca or of an argument) goes
  // along.
  address.getDefiningOp()->moveBefore(store);
}

/// Replaces each use of `value` by a load from field `index` of `base` (a
/// `structType`): one load per block, before the block's first use.
void loadWhereUsed(Value value, Value base, LLVM::LLVMStructType structType,
                   int64_t index) {
  llvm::MapVector<Block *, Operation *> firstUser;
  for (Operation *user : value.getUsers()) {
    Operation *&first = firstUser[user->getBlock()];
    if (!first || user->isBeforeInBlock(first))
      first = user;
  }
  llvm::DenseMap<Block *, Value> loads;
  for (auto [block, user] : firstUser) {
    OpBuilder b(user);
    Value address = fieldAddress(b, user->getLoc(), base, structType, index);
    loads[block] =
        LLVM::LoadOp::create(b, user->getLoc(), value.getType(), address);
  }
  for (OpOperand &use : llvm::make_early_inc_range(value.getUses()))
    use.set(loads[use.getOwner()->getBlock()]);
}

/// The top-level fields of the aggregate `value` as (position, value), when
/// it is a chain of `llvm.insertvalue`s on poison or undef writing each top
/// field as a whole; the last write of a field wins.
std::optional<SmallVector<std::pair<int64_t, Value>>>
insertedFields(Value value) {
  SmallVector<std::pair<int64_t, Value>> fields;
  llvm::SmallDenseSet<int64_t> written;
  while (auto insert = value.getDefiningOp<LLVM::InsertValueOp>()) {
    if (insert.getPosition().size() != 1)
      return std::nullopt;
    int64_t position = insert.getPosition()[0];
    if (written.insert(position).second)
      fields.push_back({position, insert.getValue()});
    value = insert.getContainer();
  }
  if (!value.getDefiningOp<LLVM::PoisonOp>() &&
      !value.getDefiningOp<LLVM::UndefOp>())
    return std::nullopt;
  return fields;
}

/// Erases the now unused `llvm.insertvalue` chain ending at `value`.
void eraseDeadChain(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!def->use_empty())
      return;
    Value next = isa<LLVM::InsertValueOp>(def) ? def->getOperand(0) : Value();
    def->erase();
    if (!next)
      return;
    value = next;
  }
}

struct WideInterfacesThroughMemoryPass
    : spmdc::impl::WideInterfacesThroughMemoryBase<
          WideInterfacesThroughMemoryPass> {
  using WideInterfacesThroughMemoryBase::WideInterfacesThroughMemoryBase;

  bool isWide(LLVM::LLVMFuncOp function) const {
    LLVM::LLVMFunctionType type = function.getFunctionType();
    int64_t arguments = 0;
    for (Type param : type.getParams())
      arguments += scalarCount(param);
    return !function.isExternal() && !type.isVarArg() &&
           (arguments > scalars || scalarCount(type.getReturnType()) > scalars);
  }

  /// `function`'s body moved into a function `(ptr arguments, ptr
  /// results)`: a new private `<name>_body`, or `function` itself when it
  /// is the entry (spmd-run calls it that way). A function that stays
  /// keeps its signature as a call of the body, for callers outside the
  /// module.
  LLVM::LLVMFuncOp moveBody(LLVM::LLVMFuncOp function, SymbolTable &symbols) {
    MLIRContext *context = function.getContext();
    LLVM::LLVMFunctionType type = function.getFunctionType();
    auto ptr = LLVM::LLVMPointerType::get(context);
    auto argumentsType = LLVM::LLVMStructType::getLiteral(
        context, SmallVector<Type>(type.getParams()));
    Type resultType = type.getReturnType();
    bool hasResult = !isa<LLVM::LLVMVoidType>(resultType);
    auto memoryType = LLVM::LLVMFunctionType::get(
        LLVM::LLVMVoidType::get(context), {ptr, ptr});

    bool inPlace = isEntry(function);
    LLVM::LLVMFuncOp body = function;
    if (inPlace) {
      function.setFunctionType(memoryType);
      function.removeArgAttrsAttr();
      function.removeResAttrsAttr();
    } else {
      OpBuilder b(function);
      b.setInsertionPointAfter(function);
      body = LLVM::LLVMFuncOp::create(
          b, function.getLoc(), (function.getSymName() + "_body").str(),
          memoryType, LLVM::Linkage::Internal);
      symbols.insert(body);
      body.getBody().takeBody(function.getBody());
    }

    // Arguments: loaded from the arguments block where used.
    Block &entry = body.getBody().front();
    Value argumentsBase = entry.insertArgument(0u, ptr, function.getLoc());
    Value resultsBase = entry.insertArgument(1u, ptr, function.getLoc());
    for (int64_t i = static_cast<int64_t>(type.getNumParams()) - 1; i >= 0;
         --i) {
      BlockArgument old = entry.getArgument(2 + i);
      loadWhereUsed(old, argumentsBase, argumentsType, i);
      entry.eraseArgument(2 + i);
    }

    // Results: each top-level field stored where it is made when the
    // function returns once, else the whole aggregate at each return.
    SmallVector<LLVM::ReturnOp> returns;
    body.walk([&](LLVM::ReturnOp r) { returns.push_back(r); });
    auto resultStruct = dyn_cast<LLVM::LLVMStructType>(resultType);
    for (LLVM::ReturnOp r : returns) {
      OpBuilder rb(r);
      Value value = hasResult ? r.getArg() : Value();
      std::optional<SmallVector<std::pair<int64_t, Value>>> fields;
      if (value && resultStruct && returns.size() == 1)
        fields = insertedFields(value);
      if (fields) {
        for (auto [position, field] : *fields)
          storeWhereDefined(field,
                            fieldAddress(rb, r.getLoc(), resultsBase,
                                         resultStruct, position),
                            r);
      } else if (value) {
        LLVM::StoreOp::create(rb, r.getLoc(), value, resultsBase);
      }
      LLVM::ReturnOp::create(rb, r.getLoc(), ValueRange());
      r.erase();
      if (fields)
        eraseDeadChain(value);
    }

    if (inPlace)
      return body;
    // The old function: a call of the body.
    OpBuilder b(function);
    Block *wrapper = function.addEntryBlock(b);
    b.setInsertionPointToStart(wrapper);
    // With the old signature until rewriteCall turns it into a call of
    // the body through memory.
    auto call = LLVM::CallOp::create(b, function.getLoc(), type, body.getName(),
                                     ValueRange(wrapper->getArguments()));
    if (hasResult)
      LLVM::ReturnOp::create(b, function.getLoc(), call.getResult());
    else
      LLVM::ReturnOp::create(b, function.getLoc(), ValueRange());
    return body;
  }

  /// Rewrites `call` of a function of type `type` into a call of `body`
  /// through two stack blocks: arguments stored where they are made,
  /// results loaded where they are used.
  void rewriteCall(LLVM::CallOp call, LLVM::LLVMFuncOp body,
                   LLVM::LLVMFunctionType type) {
    MLIRContext *context = call.getContext();
    auto caller = call->getParentOfType<LLVM::LLVMFuncOp>();
    auto argumentsType = LLVM::LLVMStructType::getLiteral(
        context, SmallVector<Type>(type.getParams()));
    Type resultType = type.getReturnType();
    bool hasResult = !isa<LLVM::LLVMVoidType>(resultType);
    Value argumentsBase = entryAlloca(caller, argumentsType);
    Value resultsBase =
        hasResult ? entryAlloca(caller, resultType) : argumentsBase;
    OpBuilder b(call);
    for (auto [i, operand] : llvm::enumerate(call.getArgOperands()))
      storeWhereDefined(operand,
                        fieldAddress(b, call.getLoc(), argumentsBase,
                                     argumentsType, static_cast<int64_t>(i)),
                        call);
    LLVM::CallOp::create(b, call.getLoc(), body,
                         ValueRange{argumentsBase, resultsBase});
    if (hasResult) {
      Value result = call.getResult();
      auto resultStruct = dyn_cast<LLVM::LLVMStructType>(resultType);
      bool onlyFields =
          resultStruct && llvm::all_of(result.getUsers(), [](Operation *user) {
            auto extract = dyn_cast<LLVM::ExtractValueOp>(user);
            return extract && !extract.getPosition().empty();
          });
      if (onlyFields) {
        // extractvalue %r[p, q...]: a load of field p (then the rest of the
        // path from it) where it is used.
        for (Operation *user : llvm::make_early_inc_range(result.getUsers())) {
          auto extract = cast<LLVM::ExtractValueOp>(user);
          ArrayRef<int64_t> path = extract.getPosition();
          OpBuilder eb(extract);
          Type fieldType = resultStruct.getBody()[path[0]];
          Value field = LLVM::LoadOp::create(
              eb, extract.getLoc(), fieldType,
              fieldAddress(eb, extract.getLoc(), resultsBase, resultStruct,
                           path[0]));
          if (path.size() > 1)
            field = LLVM::ExtractValueOp::create(eb, extract.getLoc(), field,
                                                 path.drop_front());
          extract.replaceAllUsesWith(field);
          extract.erase();
        }
      } else {
        b.setInsertionPointAfter(call);
        Value whole =
            LLVM::LoadOp::create(b, call.getLoc(), resultType, resultsBase);
        result.replaceAllUsesWith(whole);
      }
    }
    call.erase();
  }

  bool isEntry(LLVM::LLVMFuncOp function) const {
    return llvm::is_contained(entries, function.getSymName());
  }

  /// The entry's arguments and results become structs that spmd-run fills
  /// as arrays of 8-byte words: every scalar must be one.
  bool checkEntry(LLVM::LLVMFuncOp function) const {
    DataLayout layout = DataLayout::closest(function);
    std::function<bool(Type)> wordsOnly = [&](Type type) {
      if (auto structType = dyn_cast<LLVM::LLVMStructType>(type))
        return llvm::all_of(structType.getBody(), wordsOnly);
      if (auto array = dyn_cast<LLVM::LLVMArrayType>(type))
        return wordsOnly(array.getElementType());
      return isa<LLVM::LLVMVoidType>(type) ||
             layout.getTypeSize(type) == 8;
    };
    LLVM::LLVMFunctionType type = function.getFunctionType();
    if (llvm::all_of(type.getParams(), wordsOnly) &&
        wordsOnly(type.getReturnType()))
      return true;
    function.emitError("wide-interfaces-through-memory: the entry '")
        << function.getSymName() << "' has an argument or result scalar that is not 8 bytes";
    return false;
  }

  void runOnOperation() override {
    if (scalars < 1) {
      getOperation().emitError(
          "wide-interfaces-through-memory: scalars must be at least 1");
      return signalPassFailure();
    }
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<LLVM::LLVMFuncOp> wide;
    for (auto function : module.getOps<LLVM::LLVMFuncOp>())
      if (isWide(function) || isEntry(function))
        wide.push_back(function);
    // Every symbol use in the module, in one walk: asking for each wide
    // function's uses walked the module once a function (a tenth of GPT-2
    // small's compile with its hundreds of nests).
    std::optional<SymbolUsers> usersOf = symbolUsers(module);
    if (!usersOf)
      return; // an op that may hide uses: leave the interfaces as they are
    for (LLVM::LLVMFuncOp function : wide) {
      LLVM::LLVMFunctionType type = function.getFunctionType();
      // Direct calls inside the module; anything else that names the
      // function (its address taken) leaves it as it is.
      SmallVector<LLVM::CallOp> calls;
      bool onlyCalls = true;
      for (Operation *user : usersOf->lookup(function.getSymName())) {
        auto call = dyn_cast<LLVM::CallOp>(user);
        if (call && call.getCallee() == function.getSymName())
          calls.push_back(call);
        else
          onlyCalls = false;
      }
      if (!onlyCalls)
        continue;
      if (isEntry(function) && !checkEntry(function))
        return signalPassFailure();
      LLVM::LLVMFuncOp body = moveBody(function, symbols);
      for (LLVM::CallOp call : calls)
        rewriteCall(call, body, type);
      if (body == function)
        continue;
      // The wrapper's own call of the body, too.
      SmallVector<LLVM::CallOp> wrapperCalls;
      function.walk([&](LLVM::CallOp c) { wrapperCalls.push_back(c); });
      for (LLVM::CallOp c : wrapperCalls)
        rewriteCall(c, body, type);
      // A private function has no callers left.
      if (function.isPrivate() ||
          function.getLinkage() == LLVM::Linkage::Internal)
        function.erase();
    }
  }
};

} // namespace
