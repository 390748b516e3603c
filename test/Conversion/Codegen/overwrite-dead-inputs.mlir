// RUN: spmdc-opt %s --overwrite-dead-inputs | FileCheck %s

// An elementwise result goes over an input that is fresh and dead after
// the op; every other input keeps its value.

#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> (0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// CHECK-LABEL: func.func @fresh_and_dead
// CHECK: %[[A:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[A]], %[[A]] : tensor<8xf32>, tensor<8xf32>) outs(%[[A]] : tensor<8xf32>)
func.func @fresh_and_dead(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e0 = tensor.empty() : tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %v : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %a : tensor<8xf32>, tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %s = arith.addf %v, %w : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %b : tensor<8xf32>
}

// Read again after the op, directly or through a view: a new buffer.
// CHECK-LABEL: func.func @read_after
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8xf32>
// CHECK: linalg.generic {{.*}} outs(%[[E]] : tensor<8xf32>)
// CHECK: %[[F:.*]] = tensor.empty() : tensor<8xf32>
// CHECK: linalg.generic {{.*}} outs(%[[F]] : tensor<8xf32>)
func.func @read_after(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<2x4xf32>) {
  %e0 = tensor.empty() : tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %v : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %view = tensor.expand_shape %a [[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.negf %v : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.negf %v : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %b, %c, %view : tensor<8xf32>, tensor<8xf32>, tensor<2x4xf32>
}

// Not the step's buffers: an argument the entry point was not donated, a
// private function's argument (--overwrite-donated-buffers' business), a
// constant. A donated argument is.
// CHECK-LABEL: func.func @entry
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<8xf32>) outs(%{{.*}} : tensor<8xf32>)
// CHECK-NOT: outs(%arg0
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<8xf32>) outs(%arg1 : tensor<8xf32>)
// CHECK: linalg.generic {{.*}} ins(%cst : tensor<8xf32>) outs(%{{[0-9]+}} : tensor<8xf32>)
func.func @entry(%kept: tensor<8xf32> {bufferization.writable = false},
                 %given: tensor<8xf32> {bufferization.writable = true, spmdc.donated})
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %e0 = tensor.empty() : tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%kept : tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.negf %v : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%given : tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.negf %v : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %cst = arith.constant dense<1.0> : tensor<8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%cst : tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.negf %v : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %d = call @private(%a) : (tensor<8xf32>) -> tensor<8xf32>
  return %b, %c, %d : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func private @private
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<8xf32>) outs(%{{[0-9]+}} : tensor<8xf32>)
func.func private @private(%a: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.negf %v : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %b : tensor<8xf32>
}

// Read at another point than the one written (a transpose), or defined
// outside the loop the op runs in: a new buffer.
// CHECK-LABEL: func.func @not_pointwise
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[A:[0-9]+]] : tensor<4x4xf32>) outs(%{{[0-9]+}} : tensor<4x4xf32>)
// CHECK-NOT: outs(%[[A]]
// CHECK: %[[U:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<4x4xf32>) outs(%[[T]] : tensor<4x4xf32>)
// CHECK: scf.for
// CHECK: linalg.generic {{.*}} ins(%[[U]] : tensor<4x4xf32>) outs(%{{[0-9]+}} : tensor<4x4xf32>)
func.func @not_pointwise(%x: tensor<4x4xf32>, %n: index) -> tensor<4x4xf32> {
  %e0 = tensor.empty() : tensor<4x4xf32>
  %a = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x4xf32>) outs(%e0 : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.negf %v : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %e1 = tensor.empty() : tensor<4x4xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x4xf32>) outs(%e1 : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %u = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<4x4xf32>) outs(%e2 : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.negf %v : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (tensor<4x4xf32>) {
    %e3 = tensor.empty() : tensor<4x4xf32>
    %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%u : tensor<4x4xf32>) outs(%e3 : tensor<4x4xf32>) {
    ^bb0(%v: f32, %o: f32):
      %s = arith.negf %v : f32
      linalg.yield %s : f32
    } -> tensor<4x4xf32>
    scf.yield %y : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// AdamW's shape: two results, a donated state and a fresh gradient both
// dead after the op. Each result takes a buffer of its own, the donated
// argument first: a result written over the gradient would hold it until
// the step returns while the caller still holds the state's buffer.
// CHECK-LABEL: func.func @donated_first
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<8xf32> {spmdc.donated}
// CHECK: %[[G:.*]] = linalg.generic
// CHECK: linalg.generic {{.*}} ins(%[[G]], %[[M]] : tensor<8xf32>, tensor<8xf32>) outs(%[[M]], %[[G]] : tensor<8xf32>, tensor<8xf32>)
func.func @donated_first(%x: tensor<8xf32>, %m: tensor<8xf32> {spmdc.donated})
    -> (tensor<8xf32>, tensor<8xf32>) {
  %e0 = tensor.empty() : tensor<8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %v : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%g, %m : tensor<8xf32>, tensor<8xf32>) outs(%e1, %e2 : tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32, %p: f32):
    %s = arith.addf %v, %w : f32
    %t = arith.mulf %v, %w : f32
    linalg.yield %s, %t : f32, f32
  } -> (tensor<8xf32>, tensor<8xf32>)
  return %r#0, %r#1 : tensor<8xf32>, tensor<8xf32>
}
