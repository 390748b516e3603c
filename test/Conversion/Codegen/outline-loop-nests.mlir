// RUN: spmdc-opt %s --outline-loop-nests | FileCheck %s

// Each top-level loop nest moves into a function of its own; the values it
// uses from outside become arguments, constants are cloned in.

// CHECK-LABEL: func.func @step
// CHECK-SAME:    (%[[A:.*]]: memref<64xf32>, %[[B:.*]]: memref<64xf32>, %[[S:.*]]: f32)
// CHECK:         call @step_nest0(%[[A]], %[[S]], %[[B]]) : (memref<64xf32>, f32, memref<64xf32>) -> ()
// CHECK-NEXT:    %[[V:.*]] = memref.load %[[B]]
// CHECK-NEXT:    call @step_nest1(%[[V]], %[[B]]) : (f32, memref<64xf32>) -> ()
// CHECK-NEXT:    return %[[V]]
// CHECK:       func.func private @step_nest0(%[[X:.*]]: memref<64xf32>, %[[F:.*]]: f32, %[[Y:.*]]: memref<64xf32>)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         affine.for %[[I:.*]] = 0 to 64
// CHECK:           affine.load %[[X]][%[[I]]]
// CHECK:           arith.mulf %{{.*}}, %[[F]]
// CHECK:         return
// CHECK:       func.func private @step_nest1(
// CHECK:         scf.for
func.func @step(%a: memref<64xf32>, %b: memref<64xf32>, %s: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  affine.for %i = 0 to 64 {
    %x = affine.load %a[%i] : memref<64xf32>
    %y = arith.mulf %x, %s : f32
    %z = memref.load %b[%c0] : memref<64xf32>
    %w = arith.addf %y, %z : f32
    affine.store %w, %b[%i] : memref<64xf32>
  }
  %v = memref.load %b[%c0] : memref<64xf32>
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %v, %b[%i] : memref<64xf32>
  }
  return %v : f32
}
