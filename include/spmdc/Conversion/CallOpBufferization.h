//===- CallOpBufferization.h - func.call's analysis in linear time -*- C++
//-*-===//
//
// A BufferizableOpInterface model for func.call that replaces MLIR's own
// (same answers, without copying the callee's summary per question).
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_CONVERSION_CALLOPBUFFERIZATION_H
#define SPMDC_CONVERSION_CALLOPBUFFERIZATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace spmdc {

/// Attaches the model to func.call. The model an op gets first is the one it
/// keeps, so this goes before mlir::registerAllExtensions (which attaches
/// MLIR's).
void registerCallOpBufferization(mlir::DialectRegistry &registry);

} // namespace spmdc

#endif // SPMDC_CONVERSION_CALLOPBUFFERIZATION_H
