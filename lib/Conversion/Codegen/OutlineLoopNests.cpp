//===- OutlineLoopNests.cpp - one function per top-level loop nest --------===//
//
// --outline-loop-nests: keeps every function the later conversions and the
// JIT see small, since their cost grows faster than a function's size.
//
//===----------------------------------------------------------------------===//

#include "BufferOrigins.h"
#include "spmdc/Conversion/Passes.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraphBuilders.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"

namespace spmdc {
#define GEN_PASS_DEF_OUTLINELOOPNESTS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

/// A loop nest, or a linalg op on buffers that will become one: outlined
/// before linalg is lowered, GPT-2 small's 12 layers share their functions
/// and the lowering to loops, vectorization and canonicalization see each
/// distinct nest once rather than once a layer. A linalg op without loops
/// (on rank-0 buffers) is a few scalar ops and stays in place.
bool isLoopNest(Operation &op) {
  if (op.getNumResults() != 0)
    return false;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return linalgOp.hasPureBufferSemantics() && linalgOp.getNumLoops() > 0;
  return isa<affine::AffineForOp, scf::ForOp, scf::ParallelOp>(op);
}

/// The functions outlined so far, by a hash of their kind and body: a nest
/// equal to one outlined before (the same loops on the same types, as each
/// layer of a transformer has) calls that function instead of a copy, so
/// the conversions and the JIT see each distinct nest once. Equal means the
/// same kind, type and body, locations aside (as the body's text would
/// compare, without printing each nest: printing them was most of this
/// pass's time on GPT-2 small).
struct Outlined {
  std::string kind;
  func::FuncOp function;
};
using OutlinedByHash = llvm::DenseMap<size_t, SmallVector<Outlined, 1>>;

constexpr llvm::StringLiteral kPlaceholder = "__outlined_nest";

size_t hashOf(StringRef kind, func::FuncOp function) {
  llvm::hash_code hash =
      llvm::hash_combine(kind, function.getFunctionType().getAsOpaquePointer(),
                         function.getArgAttrsAttr().getAsOpaquePointer());
  function.getBody().walk([&](Operation *op) {
    hash =
        llvm::hash_combine(hash, OperationEquivalence::computeHash(
                                     op, OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::IgnoreLocations));
  });
  return hash;
}

/// The function outlined before that `function` (of `kind`) equals, if any.
func::FuncOp findEqual(StringRef kind, func::FuncOp function,
                       ArrayRef<Outlined> candidates) {
  for (Outlined known : candidates)
    if (known.kind == kind &&
        known.function.getFunctionType() == function.getFunctionType() &&
        known.function.getArgAttrsAttr() == function.getArgAttrsAttr() &&
        known.function->getDiscardableAttrDictionary() ==
            function->getDiscardableAttrDictionary() &&
        OperationEquivalence::isRegionEquivalentTo(
            &known.function.getBody(), &function.getBody(),
            OperationEquivalence::IgnoreLocations))
      return known.function;
  return nullptr;
}

/// The kind of work `nest` does where a location in it names one
/// (spmdc::tg::workLoc: attention, the optimizer), for its name.
std::optional<StringRef> workOf(Operation *nest) {
  std::optional<StringRef> work;
  nest->walk([&](Operation *op) {
    op->getLoc()->walk([&](Location loc) {
      auto named = dyn_cast<NameLoc>(loc);
      if (named && llvm::is_contained(
                       {spmdc::tg::kAttentionWork, spmdc::tg::kOptimizerWork},
                       named.getName().getValue()))
        work = named.getName().getValue();
      return work ? WalkResult::interrupt() : WalkResult::advance();
    });
    return work ? WalkResult::interrupt() : WalkResult::advance();
  });
  return work;
}

/// "reduce" when a linalg op has a reduction loop, or some store in `nest`
/// leaves out a loop it is inside (it accumulates over that loop) or a loop
/// carries values, else "map": the kind bench/step_profile.py charges the
/// nest's time to.
StringRef kindOf(Operation *nest) {
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(nest))
    return linalgOp.getNumReductionLoops() > 0 ? "reduce" : "map";
  bool reduces = false;
  nest->walk([&](Operation *op) {
    if (isa<scf::ForOp, affine::AffineForOp>(op) && op->getNumResults() > 0)
      reduces = true;
    auto store = dyn_cast<affine::AffineWriteOpInterface>(op);
    if (!store)
      return;
    SmallVector<Value> ivs;
    for (Operation *loop = op->getParentOp(); loop;
         loop = loop->getParentOp()) {
      if (auto affineFor = dyn_cast<affine::AffineForOp>(loop))
        ivs.push_back(affineFor.getInductionVar());
      if (loop == nest)
        break;
    }
    for (Value iv : ivs)
      if (!llvm::is_contained(store.getMapOperands(), iv))
        reduces = true;
  });
  return reduces ? "reduce" : "map";
}

/// Marks `llvm.noalias` each memref argument of `function` whose buffer
/// (of `arguments`, at the call) is an allocation no other argument views:
/// the nest's loops may then keep a sum over it in a register
/// (--vectorize-affine-loops), which the buffer's allocation showed while
/// the nest was inline, and LLVM knows its stores touch nothing else.
void markDisjointBuffers(func::FuncOp function, ArrayRef<Value> arguments) {
  SmallVector<Value> buffers;
  for (Value argument : arguments)
    buffers.push_back(isa<MemRefType>(argument.getType())
                          ? spmdc::allocatedBuffer(argument)
                          : Value());
  UnitAttr unit = UnitAttr::get(function.getContext());
  for (auto [index, buffer] : llvm::enumerate(buffers))
    if (buffer && llvm::count(buffers, buffer) == 1)
      function.setArgAttr(index, spmdc::kNoAliasAttrName, unit);
}

/// Replaces `nest` with a call of a private function holding it: one of
/// the same `kind` (the work it does: map, reduce, attention_map, ...)
/// outlined before with the same text, or a new one named `name`.
void outline(Operation *nest, StringRef name, StringRef kind,
             SymbolTable &symbols, OutlinedByHash &outlined) {
  // What the nest uses from outside: its own operands (bounds) and values
  // its regions capture.
  SetVector<Value> used(nest->getOperands().begin(), nest->getOperands().end());
  getUsedValuesDefinedAbove(nest->getRegions(), used);
  SmallVector<Value> arguments;
  SmallVector<Operation *> constants;
  for (Value value : used) {
    Operation *def = value.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>())
      constants.push_back(def);
    else
      arguments.push_back(value);
  }

  auto module = nest->getParentOfType<ModuleOp>();
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto function = func::FuncOp::create(
      b, nest->getLoc(), kPlaceholder,
      b.getFunctionType(ValueRange(arguments).getTypes(), {}));
  function.setPrivate();
  // Static memrefs cross the call as bare pointers (MLIR's `llvm.bareptr`)
  // instead of descriptors of 3 + 2 x rank scalars: the nest knows their
  // shapes, and the glue code that calls it shrinks several-fold.
  if (llvm::all_of(function.getArgumentTypes(), [](Type type) {
        auto memref = dyn_cast<MemRefType>(type);
        return !memref || LLVMTypeConverter::canConvertToBarePtr(memref);
      }))
    function->setAttr("llvm.bareptr", UnitAttr::get(function.getContext()));
  markDisjointBuffers(function, arguments);
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping mapping;
  mapping.map(arguments, entry->getArguments());
  for (Operation *constant : constants)
    b.clone(*constant, mapping);
  b.clone(*nest, mapping);
  func::ReturnOp::create(b, nest->getLoc());
  SmallVector<Outlined, 1> &candidates = outlined[hashOf(kind, function)];
  if (func::FuncOp known = findEqual(kind, function, candidates)) {
    function.erase();
    function = known;
  } else {
    function.setSymName(name);
    symbols.insert(function);
    candidates.push_back({kind.str(), function});
  }

  b.setInsertionPoint(nest);
  func::CallOp::create(b, nest->getLoc(), function, arguments);
  nest->erase();
}

struct OutlineLoopNestsPass
    : spmdc::impl::OutlineLoopNestsBase<OutlineLoopNestsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    OutlinedByHash outlined;
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp function : functions) {
      if (function.isExternal())
        continue;
      SmallVector<Operation *> nests;
      for (Block &block : function.getBody())
        for (Operation &op : block)
          if (isLoopNest(op))
            nests.push_back(&op);
      for (auto [index, nest] : llvm::enumerate(nests)) {
        std::string kind = kindOf(nest).str();
        if (std::optional<StringRef> work = workOf(nest))
          kind = (*work + "_" + kind).str();
        std::string name =
            (function.getSymName() + "_nest" + Twine(index) + "_" + kind).str();
        outline(nest, name, kind, symbols, outlined);
      }
    }
  }
};

} // namespace
