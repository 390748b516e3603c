// RUN: spmdc-opt %s --tg-autodiff -split-input-file -verify-diagnostics | FileCheck %s

// Gradients of broadcast operands are summed back to the operand's shape;
// integer data gets none; a parameter the loss ignores gets zeros.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:[a-z0-9]+]]: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>}, %[[B:[a-z0-9]+]]: tensor<f32> {tg.name = "b", tg.role = #tg.role<param>}, %[[X:[a-z0-9]+]]: tensor<3x2xf32>
// CHECK-SAME: -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}, tensor<2xf32> {tg.name = "w", tg.role = #tg.role<grad>}, tensor<f32> {tg.name = "b", tg.role = #tg.role<grad>}, tensor<4xf32> {tg.name = "unused", tg.role = #tg.role<grad>})
// CHECK: %[[L:.*]] = tg.sum
// CHECK: %[[ONE:.*]] = tg.full 1.000000e+00 : tensor<f32>
// CHECK: %[[G:.*]] = tg.broadcast %{{.*}} : tensor<1x1xf32> to tensor<3x2xf32>
// CHECK: %[[DBSUM:.*]] = tg.sum %[[G]] dims [0, 1] keepdim : tensor<3x2xf32>
// CHECK: %[[DB:.*]] = tg.reshape %[[DBSUM]] : tensor<1x1xf32> to tensor<f32>
// CHECK: %[[GX:.*]] = tg.mul %[[G]], %[[X]]
// CHECK: %[[DWSUM:.*]] = tg.sum %[[GX]] dims [0] keepdim : tensor<3x2xf32>
// CHECK: %[[DW:.*]] = tg.reshape %[[DWSUM]] : tensor<1x2xf32> to tensor<2xf32>
// CHECK: %[[ZERO:.*]] = tg.full 0.000000e+00 : tensor<4xf32>
// CHECK: return %[[L]], %[[DW]], %[[DB]], %[[ZERO]]
func.func @main(%w: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>},
                %b: tensor<f32> {tg.name = "b", tg.role = #tg.role<param>},
                %x: tensor<3x2xf32> {tg.name = "x", tg.role = #tg.role<data>},
                %i: tensor<3xi64> {tg.name = "i", tg.role = #tg.role<data>},
                %unused: tensor<4xf32> {tg.name = "unused", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %xw = tg.mul %x, %w : tensor<3x2xf32>, tensor<2xf32>
  %y = tg.add %xw, %b : tensor<3x2xf32>, tensor<f32>
  %l = tg.sum %y dims [0, 1] : tensor<3x2xf32>
  return %l : tensor<f32>
}

// -----

// Fan-out accumulates: w is used twice.
// CHECK-LABEL: func.func @main
// CHECK: %[[A:.*]] = tg.mul %{{.*}}, %{{.*}} : tensor<2xf32>, tensor<2xf32>
// CHECK: %[[B:.*]] = tg.mul %{{.*}}, %{{.*}} : tensor<2xf32>, tensor<2xf32>
// CHECK: %[[SUM:.*]] = tg.add %{{.*}}, %{{.*}} : tensor<2xf32>, tensor<2xf32>
// CHECK: return %{{.*}}, %[[SUM]]
func.func @main(%w: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %s = tg.mul %w, %w : tensor<2xf32>, tensor<2xf32>
  %l = tg.sum %s dims [0] : tensor<2xf32>
  return %l : tensor<f32>
}

// -----

// No gradient flows through comparisons, iota or integer ops; an embedding's
// table gets embedding_backward, its indices nothing.
// CHECK-LABEL: func.func @main
// CHECK: tg.embedding_backward %{{.*}}, %{{.*}} : tensor<3x4xf32>, tensor<3xi64> to tensor<5x4xf32>
// CHECK-NOT: tg.compare
// CHECK: return
func.func @main(%e: tensor<5x4xf32> {tg.name = "e", tg.role = #tg.role<param>},
                %i: tensor<3xi64> {tg.name = "i", tg.role = #tg.role<data>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %rows = tg.embedding %e, %i : tensor<5x4xf32>, tensor<3xi64>
  %zero = tg.full 0.0 : tensor<f32>
  %pos = tg.compare gt, %rows, %zero : tensor<3x4xf32>, tensor<f32>
  %r = tg.select %pos, %rows, %zero : tensor<3x4xi1>, tensor<3x4xf32>, tensor<f32>
  %l = tg.sum %r dims [0, 1] : tensor<3x4xf32>
  return %l : tensor<f32>
}

// -----

func.func @main(%x: tensor<2x4xf32> {tg.name = "x", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  // expected-error@+1 {{has no derivative rule (it is a composite: run --tg-decompose first)}}
  %p = tg.softmax %x dim 1 : tensor<2x4xf32>
  %l = tg.sum %p dims [0, 1] : tensor<2x4xf32>
  return %l : tensor<f32>
}

// -----

// expected-error@+1 {{--tg-autodiff needs a result of role 'loss'}}
func.func @main(%x: tensor<2xf32> {tg.name = "x", tg.role = #tg.role<param>})
    -> (tensor<2xf32> {tg.name = "y", tg.role = #tg.role<output>}) {
  return %x : tensor<2xf32>
}
