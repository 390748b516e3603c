//===- BufferOrigins.h - what a buffer may be shared with ---*- C++ -*-===//
//
// The questions --overwrite-dead-inputs (on tensors) and
// --overwrite-donated-buffers (on memrefs) ask before an op writes its
// result over an input: is the input read after the op, through any value
// that may share its buffer (views, destination operands, what a call
// returns of its operands), and whose buffer is it.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_LIB_CONVERSION_CODEGEN_BUFFERORIGINS_H
#define SPMDC_LIB_CONVERSION_CODEGEN_BUFFERORIGINS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace spmdc {

class BufferOrigins {
public:
  explicit BufferOrigins(mlir::ModuleOp module);

  /// Whether nothing reads `v`, or a value that may share its buffer, after
  /// `op`, which lies in the block that defines `v` (not in a loop after
  /// it).
  bool diesAt(mlir::Value v, mlir::Operation *op);

  /// Whether `v`'s buffer is fresh and the step's own: a tensor.empty, a
  /// restrict-writable to_tensor of an alloc, through destination operands
  /// and calls, or a donated argument of an entry point.
  bool isFresh(mlir::Value v);

  /// Whether every call of `fn` passes as argument `index` an entry
  /// point's donated argument, at its last use there, that no other
  /// operand of the call may share a buffer with. What the calls' operands
  /// may share is worked out once: ask before changing the IR.
  bool isPassedDonated(mlir::func::FuncOp fn, unsigned index);

private:
  mlir::Value returnedValue(mlir::func::FuncOp callee, unsigned index);
  llvm::SmallVector<mlir::Value> aliasingResults(mlir::OpOperand &use);
  void collectLocalRoots(mlir::Value v,
                         llvm::SmallPtrSetImpl<mlir::Value> &roots);
  llvm::SmallPtrSet<mlir::Value, 4> roots(mlir::Value v);
  /// How many of `call`'s operands each buffer may be under.
  const llvm::DenseMap<mlir::Value, int> &operandRoots(mlir::func::CallOp call);

  llvm::DenseMap<mlir::Operation *, mlir::func::FuncOp> calleeOf;
  llvm::DenseMap<mlir::func::FuncOp, llvm::SmallVector<mlir::func::CallOp>>
      callers;
  llvm::DenseMap<mlir::Operation *, llvm::DenseMap<mlir::Value, int>>
      operandRootCounts;
};

/// Whether `init` is an elementwise result of `generic`: every loop
/// parallel, the init written at each point once (a permutation map) and
/// never read. An input read only at the same map may then hold it.
bool isElementwiseResult(mlir::linalg::GenericOp generic,
                         mlir::OpOperand &init);

/// Whether `generic` reads `v` only as inputs at `map`: each point of a
/// result at `map` then reads the point of `v` it overwrites, before
/// writing it.
bool readsOnlyAt(mlir::linalg::GenericOp generic, mlir::Value v,
                 mlir::AffineMap map);

/// Where the ops of a block that use a buffer, through any value that may
/// share it, lie: the first and the last, as ancestors in the block. Any
/// memref an op returns from the buffer, or that the op of the block
/// holding it returns, may share it. `escapes` when one is returned from
/// the function or used outside the block.
struct BufferSpan {
  mlir::Operation *first = nullptr, *last = nullptr;
  bool escapes = false;
};

/// The span of `buffer`'s uses in `block`, leaving out the ops in
/// `ignored`. Without `viewsAreUses`, an op that only makes another name
/// for the memory (a view or a cast) is followed but not counted: the
/// span is then of the ops that may read or write the memory.
BufferSpan spanOf(mlir::Value buffer, mlir::Block *block,
                  const llvm::DenseSet<mlir::Operation *> &ignored = {},
                  bool viewsAreUses = true);

/// The argument attribute (LLVM::LLVMDialect::getNoAliasAttrName()) saying
/// no other argument of the call shares the argument's memory; the
/// conversion to LLVM makes it LLVM's `noalias`.
constexpr llvm::StringLiteral kNoAliasAttrName = "llvm.noalias";

/// The buffer `memref` is a view of: the result of the memref.alloc or
/// memref.alloca it comes from, or a function argument marked `llvm.noalias`
/// (no other argument shares its memory: --outline-loop-nests marks those
/// it knows apart). Null otherwise: another argument may alias it.
mlir::Value allocatedBuffer(mlir::Value memref);

} // namespace spmdc

#endif // SPMDC_LIB_CONVERSION_CODEGEN_BUFFERORIGINS_H
