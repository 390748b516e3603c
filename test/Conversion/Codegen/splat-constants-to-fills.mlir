// RUN: spmdc-opt %s --splat-constants-to-fills | FileCheck %s
// RUN: spmdc-opt %s --splat-constants-to-fills=min-bytes=8 | FileCheck %s --check-prefix=LOW

// A splat of 32 x 32 f32 (4 KiB, the default threshold) becomes a fill of
// an empty tensor; a shape constant and a constant that is not a splat stay.

// CHECK-LABEL: func.func @constants
// CHECK-DAG:  %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:  %[[EMPTY:.*]] = tensor.empty() : tensor<32x32xf32>
// CHECK:      %[[FILL:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<32x32xf32>) -> tensor<32x32xf32>
// CHECK-DAG:  arith.constant dense<[4, 8]> : tensor<2xindex>
// CHECK-DAG:  arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG:  arith.constant dense<7> : tensor<4xi32>
// CHECK:      return %[[FILL]]

// With min-bytes=8 the small integer splat (16 bytes) is a fill too.
// LOW-LABEL: func.func @constants
// LOW:       linalg.fill ins(%{{.*}} : i32) outs(%{{.*}} : tensor<4xi32>)
func.func @constants() -> (tensor<32x32xf32>, tensor<2xindex>, tensor<2xf32>, tensor<4xi32>) {
  %zeros = arith.constant dense<0.0> : tensor<32x32xf32>
  %shape = arith.constant dense<[4, 8]> : tensor<2xindex>
  %values = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %sevens = arith.constant dense<7> : tensor<4xi32>
  return %zeros, %shape, %values, %sevens : tensor<32x32xf32>, tensor<2xindex>, tensor<2xf32>, tensor<4xi32>
}
