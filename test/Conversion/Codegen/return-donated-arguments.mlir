// RUN: spmdc-opt %s --return-donated-arguments | FileCheck %s

// Ownership-based deallocation returns clones of the arguments an entry
// point returns. A donated argument goes back as itself, off the lists of
// buffers its deallocation may free; another keeps its clone. The
// donation marks go.

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%arg0: memref<4xf32>, %arg1: memref<4xf32>, %arg2: memref<4xf32>)
// CHECK: %[[KEPT:.*]] = bufferization.clone %arg1
// CHECK-NOT: bufferization.clone
// CHECK: bufferization.dealloc (%arg2, %[[KEPT]] : memref<4xf32>, memref<4xf32>) if (%true, %true) retain (%arg0, %[[KEPT]] : memref<4xf32>, memref<4xf32>)
// CHECK: return %arg0, %[[KEPT]]
func.func @main(%p: memref<4xf32> {spmdc.donated}, %data: memref<4xf32>, %tmp: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>) {
  %true = arith.constant true
  %0 = bufferization.clone %p : memref<4xf32> to memref<4xf32>
  %1 = bufferization.clone %data : memref<4xf32> to memref<4xf32>
  %2:2 = bufferization.dealloc (%tmp, %0, %1 : memref<4xf32>, memref<4xf32>, memref<4xf32>) if (%true, %true, %true) retain (%0, %1 : memref<4xf32>, memref<4xf32>)
  return %0, %1 : memref<4xf32>, memref<4xf32>
}
