//===- ShapeString.h - a shape as messages print it -------------*- C++ -*-===//

#ifndef SPMDC_SUPPORT_SHAPESTRING_H
#define SPMDC_SUPPORT_SHAPESTRING_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>

namespace spmdc {

/// "[4, 16]": a shape in an error message or a log line.
inline std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace spmdc

#endif // SPMDC_SUPPORT_SHAPESTRING_H
