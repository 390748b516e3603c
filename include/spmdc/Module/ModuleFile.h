//===- ModuleFile.h - the executable module spmdc writes --------*- C++ -*-===//
//
// What `spmdc --emit=module` writes and `spmd-run` runs (docs/module.md):
//
//   SPMDC-MODULE 1\n
//   <header byte count>\n
//   <header: JSON, the step's signature and target>
//   <program: MLIR bytecode of the step lowered to the LLVM dialect>
//   <native: the host code compiled ahead of time (spmdc --aot), if any>
//   <weights: a safetensors file of initial values (a .pt2's), if any>
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_MODULE_MODULEFILE_H
#define SPMDC_MODULE_MODULEFILE_H

#include "spmdc/Runtime/StoredTensor.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace spmdc {

/// One argument or result of the compiled step.
struct ModuleValue {
  std::string name;
  std::string role;
  /// "f32", "f64", "i64", "i32", "i1", "f16", "bf16".
  std::string dtype;
  std::vector<int64_t> shape;
  std::optional<int64_t> indexBound;
  /// Its sharding on the mesh: per dim, the mesh axes (indices) it is split
  /// over, and the axes it is a partial sum over. Empty: replicated.
  std::vector<std::vector<int>> shardDims;
  std::vector<int> partialAxes;
  /// Per dim, the parts a split dim is viewed as (a fused QKV weight's q,
  /// k and v: each rank holds its chunk of every part); empty: every split
  /// dim in contiguous chunks.
  std::vector<int64_t> shardParts;
  /// The logical shape where a split dim is padded (empty: the local shape
  /// times the parts of each dim).
  std::vector<int64_t> logicalShape;
  /// For a parameter: other names of the same tensor (tied weights).
  std::vector<std::string> aliases;
  /// For a state: model state (a buffer the model updates), saved with the
  /// parameters.
  bool buffer = false;
  /// For a hyperparameter (role "hyper": the learning rate "lr"): the value
  /// the runner feeds when told no other.
  std::optional<double> defaultValue;
};

struct ModuleFile {
  std::string target = "cpu";
  /// The name of the step's entry function in the program.
  std::string entry = "main";
  /// The device mesh; no axes: one rank.
  std::vector<std::string> meshAxes;
  std::vector<int64_t> meshShape;
  std::vector<ModuleValue> arguments, results;
  /// The forward-only program (the loss alone) spmd-run --eval-dataset
  /// runs: its entry function in the program (empty: none) and its
  /// arguments, as indices into `arguments`; its one result is the loss.
  std::string evalEntry;
  std::vector<size_t> evalArguments;
  /// Persistent buffers the step only reads (its constants), logical, whose
  /// values are in the weights section: --save-params writes them.
  std::vector<ModuleValue> constantBuffers;
  /// The most bytes the step's buffers hold at once, arguments included
  /// (the report's peak_memory_bytes; 0: not known): spmd-run reserves its
  /// heap for them (HeapPolicy.h).
  uint64_t bufferPeakBytes = 0;
  /// MLIR bytecode of the program (LLVM dialect).
  std::string program;
  /// The program's host code as an ELF object (spmdc --aot; see
  /// spmdc/Target/NativeCode.h for what it defines), for `nativeCpu`
  /// with `nativeFeatures`; empty without --aot.
  std::string native, nativeTriple, nativeCpu, nativeFeatures;
  /// To write: the initial values of arguments, by name (logical tensors,
  /// copied from their files into the weights section as it is written).
  std::vector<std::pair<std::string, rt::StoredTensor>> initialValues;
  /// Read: the weights section, a safetensors file at byte `weightsOffset`
  /// of the module file, `weightsBytes` long (0: none).
  uint64_t weightsOffset = 0, weightsBytes = 0;

  /// Writes the file to `sink`: header, program and native code, then the
  /// weights streamed from their files; false with `error` set on failure.
  bool write(const rt::ByteSink &sink, std::string &error) const;
  /// The file's bytes, for a module without initial values.
  std::string serialize() const;
  /// Parses a module file; empty with `error` set if `bytes` is not one.
  static std::optional<ModuleFile> parse(llvm::StringRef bytes,
                                         std::string &error);
  /// True if `bytes` starts like a module file.
  static bool looksLikeModule(llvm::StringRef bytes);
};

} // namespace spmdc

#endif // SPMDC_MODULE_MODULEFILE_H
