//===- Utils.h - helpers of the tg-to-linalg patterns -----------*- C++ -*-===//
//
// Private to SPMDCTensorGraphToLinalg: the linalg.generic that elementwise
// ops, broadcasts and factories share, and scalar constants and
// conversions as tg defines them.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_LIB_CONVERSION_TENSORGRAPHTOLINALG_UTILS_H
#define SPMDC_LIB_CONVERSION_TENSORGRAPHTOLINALG_UTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace spmdc::tg_to_linalg {

using BodyFn = mlir::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                              mlir::ValueRange)>;

inline bool isFloat(mlir::Type t) { return mlir::isa<mlir::FloatType>(t); }

/// A linalg.generic computing `resultType` elementwise from `inputs`
/// broadcast NumPy-style with `body`.
mlir::Value elementwise(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType resultType,
                        mlir::ValueRange inputs, BodyFn body);

/// An arith constant of `type` (float or integer) with `value`.
mlir::Value constantLike(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Type type, double value);

/// Scalar conversion between element types, as tg.convert defines it.
mlir::Value convertScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                          mlir::Type to);

} // namespace spmdc::tg_to_linalg

#endif // SPMDC_LIB_CONVERSION_TENSORGRAPHTOLINALG_UTILS_H
