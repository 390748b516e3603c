// RUN: spmdc-opt %s --unique-kernel-names | FileCheck %s

// Each one-kernel gpu.module's kernel takes the module's name, and its
// launches follow; a module with two kernels keeps their names.

// CHECK: gpu.launch_func @forward_kernel::@forward_kernel
// CHECK: gpu.launch_func @forward_kernel_0::@forward_kernel_0
// CHECK: gpu.launch_func @pair::@a
// CHECK: gpu.module @forward_kernel {
// CHECK: gpu.func @forward_kernel() kernel
// CHECK: gpu.module @forward_kernel_0 {
// CHECK: gpu.func @forward_kernel_0() kernel
// CHECK: gpu.module @pair {
// CHECK: gpu.func @a() kernel
// CHECK: gpu.func @b() kernel
module attributes {gpu.container_module} {
  func.func @forward() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @forward_kernel::@forward_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @forward_kernel_0::@forward_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @pair::@a blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
  gpu.module @forward_kernel {
    gpu.func @forward_kernel() kernel {
      gpu.return
    }
  }
  gpu.module @forward_kernel_0 {
    gpu.func @forward_kernel() kernel {
      gpu.return
    }
  }
  gpu.module @pair {
    gpu.func @a() kernel {
      gpu.return
    }
    gpu.func @b() kernel {
      gpu.return
    }
  }
}
