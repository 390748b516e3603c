//===- BlockOrder.h - the later of two ops of a block -----------*- C++ -*-===//

#ifndef SPMDC_SUPPORT_BLOCKORDER_H
#define SPMDC_SUPPORT_BLOCKORDER_H

#include "mlir/IR/Operation.h"

namespace spmdc {

/// The later of two ops of one block; either may be null (the block's
/// start), and the other is then the answer.
inline mlir::Operation *laterInBlock(mlir::Operation *a, mlir::Operation *b) {
  if (!a)
    return b;
  if (!b)
    return a;
  return a->isBeforeInBlock(b) ? b : a;
}

} // namespace spmdc

#endif // SPMDC_SUPPORT_BLOCKORDER_H
