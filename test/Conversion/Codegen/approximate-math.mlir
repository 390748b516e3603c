// RUN: spmdc-opt %s --approximate-math | FileCheck %s

// f32 tanh and exp become inline arithmetic; f64 keeps the math op (libm).
// CHECK-LABEL: func.func @gelu_parts
// CHECK-NOT:     math.tanh %{{.*}} : f32
// CHECK-NOT:     math.exp %{{.*}} : f32
// CHECK:         arith.mulf
// CHECK:         math.tanh %{{.*}} : f64
func.func @gelu_parts(%x: f32, %y: f64) -> (f32, f32, f64) {
  %t = math.tanh %x : f32
  %e = math.exp %x : f32
  %d = math.tanh %y : f64
  return %t, %e, %d : f32, f32, f64
}
