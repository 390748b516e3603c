//===- Bytes.h - the bytes a tensor or buffer takes -------------*- C++ -*-===//

#ifndef SPMDC_SUPPORT_BYTES_H
#define SPMDC_SUPPORT_BYTES_H

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

namespace spmdc {

/// Bytes of a statically shaped tensor or memref: an element of fewer than
/// 8 bits (i1) takes a byte, an index 8; 0 for any other type.
inline int64_t storageBytes(mlir::Type type) {
  auto shaped = llvm::dyn_cast<mlir::ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  mlir::Type element = shaped.getElementType();
  int64_t bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 64;
  return shaped.getNumElements() * std::max<int64_t>(1, bits / 8);
}

} // namespace spmdc

#endif // SPMDC_SUPPORT_BYTES_H
