// RUN: spmdc-opt %s --early-optimizer-updates | FileCheck %s

// The backward inlined into the step, then the optimizer's update
// (`tg.update`). Each update op moves up to just after its operands and
// the other readers of the arguments it reads: w1's update after its
// gradient and after %y, w1's last reader in the backward, so that it can
// still overwrite w1 in place; w2's after its gradient. Ops computed from
// arguments alone (beta1 * m) move down to just before their reader
// instead of to the block's start.

// CHECK-LABEL: func.func @main
// CHECK: %[[G1:.*]] = tg.mul %arg0, %arg2
// CHECK-NEXT: tg.full
// CHECK-NEXT: %[[M:.*]] = tg.mul %arg3
// CHECK-NEXT: %[[MN:.*]] = tg.add %[[M]], %[[G1]]
// CHECK-NEXT: %[[Y:.*]] = tg.mul %[[G1]], %arg1
// CHECK-NEXT: tg.sub %arg1, %[[MN]]
// CHECK-NEXT: %[[G2:.*]] = tg.mul %[[Y]], %arg0
// CHECK-NEXT: tg.sub %arg2, %[[G2]]
// CHECK-NEXT: return
func.func @main(%x: tensor<4xf32>, %w1: tensor<4xf32>, %w2: tensor<4xf32>,
                %m1: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %g1 = tg.mul %x, %w2 : tensor<4xf32>, tensor<4xf32>
  %y = tg.mul %g1, %w1 : tensor<4xf32>, tensor<4xf32>
  %g2 = tg.mul %y, %x : tensor<4xf32>, tensor<4xf32>
  %b1 = tg.full 9.000000e-01 {tg.update} : tensor<f32>
  %m = tg.mul %m1, %b1 {tg.update} : tensor<4xf32>, tensor<f32>
  %mn = tg.add %m, %g1 {tg.update} : tensor<4xf32>, tensor<4xf32>
  %n1 = tg.sub %w1, %mn {tg.update} : tensor<4xf32>, tensor<4xf32>
  %n2 = tg.sub %w2, %g2 {tg.update} : tensor<4xf32>, tensor<4xf32>
  return %n1, %n2, %mn, %y : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// What needs every gradient (a norm for clipping) keeps the updates after
// it.
// CHECK-LABEL: func.func @clipped
// CHECK: %[[N:.*]] = tg.add
// CHECK-DAG: tg.mul %arg0, %[[N]] {tg.update}
// CHECK-DAG: tg.mul %arg1, %[[N]] {tg.update}
func.func @clipped(%g1: tensor<4xf32>, %g2: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  %a = tg.sum %g1 dims [0] : tensor<4xf32>
  %b = tg.sum %g2 dims [0] : tensor<4xf32>
  %n = tg.add %a, %b : tensor<f32>, tensor<f32>
  %u1 = tg.mul %g1, %n {tg.update} : tensor<4xf32>, tensor<f32>
  %u2 = tg.mul %g2, %n {tg.update} : tensor<4xf32>, tensor<f32>
  return %u1, %u2 : tensor<4xf32>, tensor<4xf32>
}
