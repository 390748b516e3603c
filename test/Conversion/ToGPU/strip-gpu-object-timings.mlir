// RUN: spmdc-opt %s --strip-gpu-object-timings | FileCheck %s

// The compile times go; the PTX, the target and the other properties stay.

// CHECK: gpu.binary @kernel [#gpu.object<#nvvm.target<chip = "sm_90">, properties = {O = 2 : i32}, assembly = "// ptx">]
// CHECK: gpu.binary @plain [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "// ptx">]
module attributes {gpu.container_module} {
  gpu.binary @kernel [#gpu.object<#nvvm.target<chip = "sm_90">, properties = {LLVMIRToISATimeInMs = 3 : i64, O = 2 : i32, ISAToBinaryTimeInMs = 1 : i64}, assembly = "// ptx">]
  gpu.binary @plain [#gpu.object<#nvvm.target<chip = "sm_90">, properties = {LLVMIRToISATimeInMs = 3 : i64}, assembly = "// ptx">]
}
