//===- UniqueKernelNames.cpp - each kernel named after its module ---------===//
//
// --unique-kernel-names: gpu-kernel-outlining names every kernel after the
// function it came from (`forward_kernel`) and makes only the gpu.module
// names unique (`forward_kernel_31`). The driver, profilers and the
// runtime's SPMD_CUDA_PROFILE see the kernel's own name, so all of a
// function's kernels looked alike. Each module's kernel takes the module's
// name.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace spmdc {
#define GEN_PASS_DEF_UNIQUEKERNELNAMES
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

struct UniqueKernelNamesPass
    : spmdc::impl::UniqueKernelNamesBase<UniqueKernelNamesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
      SmallVector<gpu::GPUFuncOp> kernels;
      for (auto function : gpuModule.getOps<gpu::GPUFuncOp>())
        if (function.isKernel())
          kernels.push_back(function);
      // The module's name is unique in the module, so it is a unique name
      // for the module's only kernel; a module of several keeps theirs.
      StringAttr name = gpuModule.getSymNameAttr();
      if (kernels.size() != 1 || kernels.front().getName() == name.strref())
        continue;
      if (failed(
              SymbolTable::replaceAllSymbolUses(kernels.front(), name, module)))
        return signalPassFailure();
      SymbolTable::setSymbolName(kernels.front(), name);
    }
  }
};

} // namespace
