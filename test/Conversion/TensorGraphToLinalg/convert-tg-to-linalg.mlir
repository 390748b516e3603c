// RUN: spmdc-opt %s --convert-tg-to-linalg -split-input-file -verify-diagnostics | FileCheck %s

// Broadcasting is in the indexing maps: the [8] operand reads (d1).
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK: arith.addf
func.func @add_broadcast(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = tg.add %a, %b : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A stretched size-1 dim reads index 0.
// CHECK-DAG: #[[$ONE:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @compare_stretch
// CHECK: linalg.generic {indexing_maps = [#[[$ONE]], {{.*}}]
// CHECK: arith.cmpf olt
func.func @compare_stretch(%a: tensor<4x1xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xi1> {
  %0 = tg.compare lt, %a, %b : tensor<4x1xf32>, tensor<4x8xf32>
  return %0 : tensor<4x8xi1>
}

// -----

// Reductions: the output map pins a kept dim to 0 and drops a removed one.
// CHECK-DAG: #[[$IN:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$KEEP:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[$DROP:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @reductions
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill ins(%[[Z]] : f32)
// CHECK: linalg.generic {indexing_maps = [#[[$IN]], #[[$KEEP]]], iterator_types = ["parallel", "reduction"]}
// CHECK: arith.addf
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NEG]] : f32)
// CHECK: linalg.generic {indexing_maps = [#[[$IN]], #[[$DROP]]], iterator_types = ["parallel", "reduction"]}
// CHECK: arith.maximumf
func.func @reductions(%x: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4xf32>) {
  %0 = tg.sum %x dims [1] keepdim : tensor<4x8xf32>
  %1 = tg.max %x dims [-1] : tensor<4x8xf32>
  return %0, %1 : tensor<4x1xf32>, tensor<4xf32>
}

// -----

// A batched matmul with a broadcast rhs: one contraction over d3.
// CHECK-DAG: #[[$L:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$R:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-DAG: #[[$O:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.generic {indexing_maps = [#[[$L]], #[[$R]], #[[$O]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @matmul(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = tg.matmul %a, %b : tensor<2x3x4xf32>, tensor<4x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// CHECK-LABEL: func.func @shapes
// CHECK: %[[S:.*]] = arith.constant dense<[3, 8]> : tensor<2xindex>
// CHECK: tensor.reshape %{{.*}}(%[[S]]) : (tensor<2x3x4xf32>, tensor<2xindex>) -> tensor<3x8xf32>
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<4x2x3xf32>) permutation = [2, 0, 1]
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 1] [2, 3, 2] [1, 1, 2] : tensor<2x3x4xf32> to tensor<2x3x2xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x3x6xf32>
// CHECK: %[[A:.*]] = tensor.insert_slice %{{.*}} into %[[E]][0, 0, 0] [2, 3, 4] [1, 1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %[[A]][0, 0, 4] [2, 3, 2] [1, 1, 1]
func.func @shapes(%x: tensor<2x3x4xf32>) -> (tensor<3x8xf32>, tensor<4x2x3xf32>, tensor<2x3x6xf32>) {
  %0 = tg.reshape %x : tensor<2x3x4xf32> to tensor<3x8xf32>
  %1 = tg.transpose %x perm [2, 0, 1] : tensor<2x3x4xf32>
  %2 = tg.slice %x dim 2 start 1 end 4 step 2 : tensor<2x3x4xf32>
  %3 = tg.concat %x, %2 dim 2 : tensor<2x3x4xf32>, tensor<2x3x2xf32>
  return %0, %1, %3 : tensor<3x8xf32>, tensor<4x2x3xf32>, tensor<2x3x6xf32>
}

// -----

// Embedding rows read with tensor.extract at the index.
// CHECK-LABEL: func.func @embedding
// CHECK: linalg.generic
// CHECK: %[[ROW:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[COL:.*]] = linalg.index 2 : index
// CHECK: tensor.extract %{{.*}}[%[[ROW]], %[[COL]]] : tensor<10x4xf32>
func.func @embedding(%w: tensor<10x4xf32>, %i: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %0 = tg.embedding %w, %i : tensor<10x4xf32>, tensor<2x3xi64>
  return %0 : tensor<2x3x4xf32>
}

// -----

// scatter_add: a loop nest inserting into zeros.
// CHECK-LABEL: func.func @scatter
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<2x4xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A:.*]] = %[[Z]])
// CHECK: scf.for
// CHECK: tensor.extract
// CHECK: arith.addf
// CHECK: tensor.insert
func.func @scatter(%i: tensor<2x1xi64>, %s: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %0 = tg.scatter_add %i, %s dim 1 : tensor<2x1xi64>, tensor<2x1xf32> to tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// A scatter whose only reader adds it to a tensor of its type accumulates
// into that tensor: no zeros, no add (a tied embedding's two gradients,
// cross-entropy's one-hot and softmax terms). Read twice, it stays.
// CHECK-LABEL: func.func @scatter_into
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4xf32>, %{{.*}}: tensor<2x3x4xf32>, %{{.*}}: tensor<2x3xi64>, %[[Y:[a-z0-9]+]]: tensor<8x4xf32>
// CHECK-NOT: arith.constant dense<0.000000e+00>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[X]])
// CHECK-NOT: arith.constant dense<0.000000e+00>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[Y]])
// CHECK-NOT: linalg.generic
// CHECK: arith.constant dense<0.000000e+00> : tensor<8x4xf32>
// CHECK: linalg.generic
// CHECK: linalg.generic
func.func @scatter_into(%i: tensor<2x1xi64>, %s: tensor<2x1xf32>, %x: tensor<2x4xf32>,
                        %g: tensor<2x3x4xf32>, %tok: tensor<2x3xi64>, %y: tensor<8x4xf32>)
    -> (tensor<2x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %0 = tg.scatter_add %i, %s dim 1 : tensor<2x1xi64>, tensor<2x1xf32> to tensor<2x4xf32>
  %1 = tg.add %x, %0 : tensor<2x4xf32>, tensor<2x4xf32>
  %2 = tg.embedding_backward %g, %tok : tensor<2x3x4xf32>, tensor<2x3xi64> to tensor<8x4xf32>
  %3 = tg.add %2, %y : tensor<8x4xf32>, tensor<8x4xf32>
  %4 = tg.embedding_backward %g, %tok : tensor<2x3x4xf32>, tensor<2x3xi64> to tensor<8x4xf32>
  %5 = tg.add %4, %y : tensor<8x4xf32>, tensor<8x4xf32>
  %6 = tg.mul %4, %y : tensor<8x4xf32>, tensor<8x4xf32>
  return %1, %3, %5, %6 : tensor<2x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Factories.
// CHECK-LABEL: func.func @factories
// CHECK: arith.constant dense<1.500000e+00> : tensor<2x2xf32>
// CHECK: linalg.index 1
// CHECK: arith.index_cast
// CHECK: arith.sitofp
func.func @factories() -> (tensor<2x2xf32>, tensor<2x3xf32>) {
  %0 = tg.full 1.5 : tensor<2x2xf32>
  %1 = tg.iota dim 1 : tensor<2x3xf32>
  return %0, %1 : tensor<2x2xf32>, tensor<2x3xf32>
}

// -----

module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @not_yet(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{failed to legalize operation 'dist.all_reduce' that was explicitly marked illegal}}
    %0 = dist.all_reduce %x axes ["dp"] : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
