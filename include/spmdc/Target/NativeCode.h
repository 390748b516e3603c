//===- NativeCode.h - a lowered step as a host object file ------*- C++ -*-===//
//
// `spmdc --aot`: the step's host code, lowered to the LLVM dialect,
// compiled ahead of time to a relocatable object for this machine's CPU
// (or a named one), so that spmd-run links it instead of compiling it
// (docs/module.md). The object defines three C functions:
//
//   void spmd_step_init(void);      the module's constructors (a CUDA
//                                   module loads its kernels here)
//   void spmd_step_main(void **);   the entry, packed: args[0] and args[1]
//                                   point at the entry's two pointers,
//                                   to its arguments and its results
//                                   (ExecutionEngine's invokePacked
//                                   convention)
//   void spmd_step_eval(void **);   the loss alone (@eval), packed the
//                                   same way, where the program has one
//   void spmd_step_fini(void);      the module's destructors
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_TARGET_NATIVECODE_H
#define SPMDC_TARGET_NATIVECODE_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace spmdc {

struct NativeObject {
  /// ELF relocatable object.
  std::string bytes;
  std::string triple, cpu;
  /// The CPU features the code may use, "+avx2,+fma,...".
  std::string features;
};

struct NativeCodeOptions {
  /// The entry function of the step, and of its loss alone (empty: none).
  std::string entry = "main";
  std::string evalEntry;
  /// An LLVM CPU name, or "native": this machine's CPU and features.
  std::string cpu = "native";
  /// Codegen level 0-3; 2 and 3 also run LLVM's IR optimizations (as
  /// spmd-run's --opt-level).
  unsigned optLevel = 1;
};

/// Readies a step's LLVM IR for code generation, for the JIT and for
/// --aot alike: each long function without loops (the glue between loop
/// nests: allocations, descriptors, calls) is simplified by InstCombine and
/// then compiled without optimization (`optnone`), which costs a fraction
/// of the optimizing code generator's time on such code and nothing in the
/// step; the loop nests keep the full code generator.
void prepareGlueForCodegen(llvm::Module &module);

/// Compiles `module` (LLVM dialect, possibly with gpu.binary ops) to an
/// object; fails with a diagnostic on the module.
mlir::FailureOr<NativeObject> compileToObject(mlir::ModuleOp module,
                                              const NativeCodeOptions &options);

} // namespace spmdc

#endif // SPMDC_TARGET_NATIVECODE_H
