// RUN: spmdc-opt %s --drop-returned-arguments | FileCheck %s

// A private function's result that is one of its arguments (through a
// cast) goes; its calls use the operand they passed. A public function
// keeps its results: they are the step's signature.

// CHECK-LABEL: func.func @main
// CHECK: %[[R:.*]] = call @update(%arg0, %arg1) : (memref<4xf32>, memref<4xf32>) -> memref<4xf32>
// CHECK: return %arg0, %[[R]], %arg1
func.func @main(%p: memref<4xf32>, %g: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>, memref<4xf32>) {
  %0:3 = call @update(%p, %g) : (memref<4xf32>, memref<4xf32>) -> (memref<4xf32>, memref<4xf32>, memref<4xf32>)
  return %0#0, %0#1, %0#2 : memref<4xf32>, memref<4xf32>, memref<4xf32>
}

// CHECK-LABEL: func.func private @update
// CHECK-SAME: -> memref<4xf32>
// CHECK: return %{{.*}} : memref<4xf32>
func.func private @update(%p: memref<4xf32>, %g: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>, memref<4xf32>) {
  %new = memref.alloc() : memref<4xf32>
  %c = memref.cast %g : memref<4xf32> to memref<4xf32>
  return %p, %new, %c : memref<4xf32>, memref<4xf32>, memref<4xf32>
}

// CHECK-LABEL: func.func @public
// CHECK-SAME: -> memref<4xf32>
// CHECK: return %arg0
func.func @public(%p: memref<4xf32>) -> memref<4xf32> {
  return %p : memref<4xf32>
}
