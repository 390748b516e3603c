//===- CompileReport.h - the --report JSON of a compiled step ---*- C++ -*-===//
//
// States what one training step costs: parameter, gradient, optimizer-state
// and saved-activation bytes per rank, the peak memory (of the lowered
// step's buffers, or before lowering from the liveness of every value),
// the collectives (none before sharding) and the
// partitioner's figures. Format: GUIDE.md section 1, docs/report.md.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_REPORT_COMPILEREPORT_H
#define SPMDC_REPORT_COMPILEREPORT_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace spmdc {

/// Peak bytes live while @main runs once: its arguments, plus every value
/// from its definition to its last use, through calls.
int64_t estimatePeakMemory(mlir::ModuleOp module);

/// The report of `module` (the output of the pipeline) as JSON text.
std::string buildCompileReport(mlir::ModuleOp module, double compileMs);

/// `report` with each rank's peak_memory_bytes the lowered step's own
/// (--record-buffer-peak), in place of the estimate from the tensor graph,
/// peak_memory_bytes_in the peak while each function of the step runs, and
/// peak_buffers what the step's own buffers at the peak are (by name).
std::string withBufferPeak(const std::string &report, int64_t peakBytes,
                           mlir::DictionaryAttr peakBytesIn,
                           mlir::ArrayAttr peakHeld);

} // namespace spmdc

#endif // SPMDC_REPORT_COMPILEREPORT_H
