// RUN: spmdc-opt %s --fuse-elementwise | FileCheck %s

#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
#none = affine_map<() -> ()>

// A rank-0 producer that calls pow, broadcast into a 1024-element loop,
// stays a loop of its own (one pow, not 1024).
// CHECK-LABEL: func.func @costly_broadcast
// CHECK:         %[[C:.*]] = linalg.generic {{.*}}iterator_types = []
// CHECK:           math.powf
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel"]{{.*}}ins(%{{.*}}, %[[C]] : tensor<1024xf32>, tensor<f32>)
// CHECK-NOT:       math.powf
func.func @costly_broadcast(%m: tensor<1024xf32>, %beta: tensor<f32>, %step: tensor<f32>) -> tensor<1024xf32> {
  %e0 = tensor.empty() : tensor<f32>
  %c = linalg.generic {indexing_maps = [#none, #none, #none], iterator_types = []}
      ins(%beta, %step : tensor<f32>, tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%b: f32, %s: f32, %o: f32):
    %p = math.powf %b, %s : f32
    linalg.yield %p : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<1024xf32>
  %u = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%m, %c : tensor<1024xf32>, tensor<f32>) outs(%e1 : tensor<1024xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.mulf %x, %y : f32
    linalg.yield %d : f32
  } -> tensor<1024xf32>
  return %u : tensor<1024xf32>
}

// A cheap broadcast (an add) and a same-size costly producer fuse as
// MLIR's fusion does.
// CHECK-LABEL: func.func @fusable
// CHECK:         linalg.generic
// CHECK-DAG:       math.exp
// CHECK-DAG:       arith.addf
// CHECK:           arith.mulf
// CHECK-NOT:     linalg.generic
func.func @fusable(%x: tensor<1024xf32>, %bias: tensor<f32>) -> tensor<1024xf32> {
  %e0 = tensor.empty() : tensor<1024xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<1024xf32>) outs(%e0 : tensor<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<1024xf32>
  %e1 = tensor.empty() : tensor<f32>
  %b = linalg.generic {indexing_maps = [#none, #none], iterator_types = []}
      ins(%bias : tensor<f32>) outs(%e1 : tensor<f32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.addf %v, %v : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e2 = tensor.empty() : tensor<1024xf32>
  %c = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<1024xf32>, tensor<f32>) outs(%e2 : tensor<1024xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %r = arith.mulf %v, %w : f32
    linalg.yield %r : f32
  } -> tensor<1024xf32>
  return %c : tensor<1024xf32>
}
