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

// AdamW's shape: m and v are returned and read by p's update. The three
// loops become one, which yields m, v and p; the returns read its results.
// CHECK-LABEL: func.func @shared_producers
// CHECK:         %[[F:.*]]:3 = linalg.generic
// CHECK-SAME:      ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK:           arith.mulf
// CHECK:           arith.subf
// CHECK:           linalg.yield
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[F]]#{{.}}, %[[F]]#{{.}}, %[[F]]#{{.}}
func.func @shared_producers(%p: tensor<64xf32>, %g: tensor<64xf32>, %m: tensor<64xf32>, %v: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %e0 = tensor.empty() : tensor<64xf32>
  %m1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%m, %g : tensor<64xf32>, tensor<64xf32>) outs(%e0 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %v1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%v, %g : tensor<64xf32>, tensor<64xf32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %b, %b : f32
    %r = arith.addf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64xf32>
  %p1 = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %m1, %v1 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%e2 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %q = arith.mulf %b, %c : f32
    %r = arith.subf %a, %q : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %p1, %m1, %v1 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// A shared producer read before its consumer: the fused loop takes the
// producer's place, as everything the consumer reads exists by then.
// CHECK-LABEL: func.func @earlier_use
// CHECK:         %[[F:.*]]:2 = linalg.generic
// CHECK:           math.exp
// CHECK:           arith.mulf
// CHECK:         %[[T:.*]] = tensor.extract %[[F]]#0
// CHECK:         return %[[F]]#1, %[[T]]
func.func @earlier_use(%x: tensor<64xf32>, %y: tensor<64xf32>, %i: index) -> (tensor<64xf32>, f32) {
  %e0 = tensor.empty() : tensor<64xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%e0 : tensor<64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %t = tensor.extract %a[%i] : tensor<64xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %y : tensor<64xf32>, tensor<64xf32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %r = arith.mulf %v, %w : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %b, %t : tensor<64xf32>, f32
}

// Kept apart: the consumer reads the shared producer broadcast (each of its
// elements 8 times), so a fused loop would compute it 8 times over; and a
// use before the consumer, with the consumer's other operand made after
// the producer, leaves no place for a fused loop.
// CHECK-LABEL: func.func @not_fused
// CHECK-COUNT-4: linalg.generic
func.func @not_fused(%x: tensor<64xf32>, %y: tensor<8x64xf32>, %i: index) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>, f32) {
  %e0 = tensor.empty() : tensor<64xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%e0 : tensor<64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e1 = tensor.empty() : tensor<8x64xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a, %y : tensor<64xf32>, tensor<8x64xf32>) outs(%e1 : tensor<8x64xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %r = arith.mulf %v, %w : f32
    linalg.yield %r : f32
  } -> tensor<8x64xf32>
  %t = tensor.extract %a[%i] : tensor<64xf32>
  %later = tensor.empty() : tensor<64xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<64xf32>) outs(%later : tensor<64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.sqrt %v : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%e0 : tensor<64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.log %v : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %b, %c, %d, %t : tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>, f32
}

// The gradient made by an elementwise op as well, read by both moments:
// the walk from the block's end takes m and v into p's update first, and
// the gradient, which then has one use, follows by MLIR's own pattern.
// CHECK-LABEL: func.func @shared_gradient
// CHECK:         %[[F:.*]]:3 = linalg.generic
// CHECK:           math.exp
// CHECK:           linalg.yield
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[F]]#{{.}}, %[[F]]#{{.}}, %[[F]]#{{.}}
func.func @shared_gradient(%p: tensor<64xf32>, %x: tensor<64xf32>, %m: tensor<64xf32>, %v: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e0 = tensor.empty() : tensor<64xf32>
  %m1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%m, %g : tensor<64xf32>, tensor<64xf32>) outs(%e0 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %v1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%v, %g : tensor<64xf32>, tensor<64xf32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %b, %b : f32
    %r = arith.addf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64xf32>
  %p1 = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %m1, %v1 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%e2 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %q = arith.mulf %b, %c : f32
    %r = arith.subf %a, %q : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %p1, %m1, %v1 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}
