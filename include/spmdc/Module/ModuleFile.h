//===- ModuleFile.h - the executable module spmdc writes --------*- C++ -*-===//
//
// What `spmdc --emit=module` writes and `spmd-run` runs (docs/module.md):
//
//   SPMDC-MODULE 1\n
//   <header byte count>\n
//   <header: JSON, the step's signature and target>
//   <program: MLIR bytecode of the step lowered to the LLVM dialect>
//   <native: the host code compiled ahead of time (spmdc --aot), if any>
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_MODULE_MODULEFILE_H
#define SPMDC_MODULE_MODULEFILE_H

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
};

struct ModuleFile {
  std::string target = "cpu";
  /// The name of the step's entry function in the program.
  std::string entry = "main";
  /// The device mesh; no axes: one rank.
  std::vector<std::string> meshAxes;
  std::vector<int64_t> meshShape;
  std::vector<ModuleValue> arguments, results;
  /// MLIR bytecode of the program (LLVM dialect).
  std::string program;
  /// The program's host code as an ELF object (spmdc --aot; see
  /// spmdc/Pipeline/NativeCode.h for what it defines), for `nativeCpu`
  /// with `nativeFeatures`; empty without --aot.
  std::string native, nativeTriple, nativeCpu, nativeFeatures;

  /// The file's bytes.
  std::string serialize() const;
  /// Parses a module file; empty with `error` set if `bytes` is not one.
  static std::optional<ModuleFile> parse(llvm::StringRef bytes,
                                         std::string &error);
  /// True if `bytes` starts like a module file.
  static bool looksLikeModule(llvm::StringRef bytes);
};

} // namespace spmdc

#endif // SPMDC_MODULE_MODULEFILE_H
