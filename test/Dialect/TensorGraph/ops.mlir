// RUN: spmdc-opt %s -split-input-file | FileCheck %s
// RUN: spmdc-opt %s -split-input-file | spmdc-opt -split-input-file | FileCheck %s

// Every tg op round-trips through its assembly format.

// CHECK-LABEL: func.func @signature
// CHECK-SAME: tg.name = "x", tg.role = #tg.role<data>
// CHECK-SAME: tg.index_bound = 2 : i64
// CHECK-SAME: -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>})
func.func @signature(%x: tensor<8x4xf32> {tg.name = "x", tg.role = #tg.role<data>},
                     %t: tensor<8xi64> {tg.name = "t", tg.role = #tg.role<data>, tg.index_bound = 2 : i64})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %s = tg.sum %x dims [0, 1] : tensor<8x4xf32>
  return %s : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4xf32>, %i: tensor<4xi64>, %b: tensor<4xi1>) {
  // CHECK: tg.neg %{{.*}} : tensor<4xf32>
  %0 = tg.neg %x : tensor<4xf32>
  // CHECK: tg.abs %{{.*}} : tensor<4xi64>
  %1 = tg.abs %i : tensor<4xi64>
  // CHECK: tg.exp
  %2 = tg.exp %x : tensor<4xf32>
  // CHECK: tg.log
  %3 = tg.log %x : tensor<4xf32>
  // CHECK: tg.sqrt
  %4 = tg.sqrt %x : tensor<4xf32>
  // CHECK: tg.rsqrt
  %5 = tg.rsqrt %x : tensor<4xf32>
  // CHECK: tg.reciprocal
  %6 = tg.reciprocal %x : tensor<4xf32>
  // CHECK: tg.tanh
  %7 = tg.tanh %x : tensor<4xf32>
  // CHECK: tg.erf
  %8 = tg.erf %x : tensor<4xf32>
  // CHECK: tg.sigmoid
  %9 = tg.sigmoid %x : tensor<4xf32>
  // CHECK: tg.sin
  %10 = tg.sin %x : tensor<4xf32>
  // CHECK: tg.cos
  %11 = tg.cos %x : tensor<4xf32>
  // CHECK: tg.relu
  %12 = tg.relu %x : tensor<4xf32>
  // CHECK: tg.not %{{.*}} : tensor<4xi1>
  %13 = tg.not %b : tensor<4xi1>
  // CHECK: tg.silu
  %14 = tg.silu %x : tensor<4xf32>
  // CHECK: tg.gelu %{{.*}} : tensor<4xf32>
  %15 = tg.gelu %x : tensor<4xf32>
  // CHECK: tg.gelu %{{.*}} approximate "tanh" : tensor<4xf32>
  %16 = tg.gelu %x approximate "tanh" : tensor<4xf32>
  // CHECK: tg.floor %{{.*}} : tensor<4xf32>
  %17 = tg.floor %x : tensor<4xf32>
  // CHECK: tg.ceil
  %18 = tg.ceil %x : tensor<4xf32>
  // CHECK: tg.trunc
  %19 = tg.trunc %x : tensor<4xf32>
  // CHECK: tg.round
  %20 = tg.round %x : tensor<4xf32>
  return
}

// -----

// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<2x3xbf16>, %b: tensor<3xbf16>, %p: tensor<2x1xi1>, %q: tensor<3xi1>) {
  // CHECK: tg.add %{{.*}}, %{{.*}} : tensor<2x3xbf16>, tensor<3xbf16>
  %0 = tg.add %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.sub
  %1 = tg.sub %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.mul
  %2 = tg.mul %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.div
  %3 = tg.div %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.pow
  %4 = tg.pow %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.rem %{{.*}}, %{{.*}} : tensor<2x3xbf16>, tensor<3xbf16>
  %rem = tg.rem %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.maximum
  %5 = tg.maximum %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.minimum
  %6 = tg.minimum %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.and %{{.*}}, %{{.*}} : tensor<2x1xi1>, tensor<3xi1>
  %7 = tg.and %p, %q : tensor<2x1xi1>, tensor<3xi1>
  // CHECK: tg.or
  %8 = tg.or %p, %q : tensor<2x1xi1>, tensor<3xi1>
  // CHECK: tg.compare ge, %{{.*}}, %{{.*}} : tensor<2x3xbf16>, tensor<3xbf16>
  %9 = tg.compare ge, %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x1xi1>, tensor<2x3xbf16>, tensor<3xbf16>
  %10 = tg.select %p, %a, %b : tensor<2x1xi1>, tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.convert %{{.*}} : tensor<2x3xbf16> to tensor<2x3xf64>
  %11 = tg.convert %a : tensor<2x3xbf16> to tensor<2x3xf64>
  return
}

// -----

// CHECK-LABEL: func.func @reductions_and_shapes
func.func @reductions_and_shapes(%x: tensor<2x3x4xf16>, %i: tensor<2x3xi32>) {
  // CHECK: tg.sum %{{.*}} dims [1] : tensor<2x3x4xf16>
  %0 = tg.sum %x dims [1] : tensor<2x3x4xf16>
  // CHECK: tg.max %{{.*}} dims [-1] keepdim : tensor<2x3x4xf16>
  %1 = tg.max %x dims [-1] keepdim : tensor<2x3x4xf16>
  // CHECK: tg.mean %{{.*}} dims [0, 2] : tensor<2x3x4xf16>
  %2 = tg.mean %x dims [0, 2] : tensor<2x3x4xf16>
  // CHECK: tg.matmul %{{.*}}, %{{.*}} : tensor<2x3x4xf16>, tensor<4x5xf16>
  %w = tg.full 1.0 : tensor<4x5xf16>
  %3 = tg.matmul %x, %w : tensor<2x3x4xf16>, tensor<4x5xf16>
  // CHECK: tg.reshape %{{.*}} : tensor<2x3x4xf16> to tensor<6x4xf16>
  %4 = tg.reshape %x : tensor<2x3x4xf16> to tensor<6x4xf16>
  // CHECK: tg.transpose %{{.*}} perm [2, 0, 1] : tensor<2x3x4xf16>
  %5 = tg.transpose %x perm [2, 0, 1] : tensor<2x3x4xf16>
  // CHECK: tg.broadcast %{{.*}} : tensor<2x3x4xf16> to tensor<5x2x3x4xf16>
  %6 = tg.broadcast %x : tensor<2x3x4xf16> to tensor<5x2x3x4xf16>
  // CHECK: tg.slice %{{.*}} dim 2 start 1 end 4 step 2 : tensor<2x3x4xf16>
  %7 = tg.slice %x dim 2 start 1 end 4 step 2 : tensor<2x3x4xf16>
  // CHECK: tg.concat %{{.*}}, %{{.*}} dim -1 : tensor<2x3x4xf16>, tensor<2x3x2xf16>
  %8 = tg.concat %x, %7 dim -1 : tensor<2x3x4xf16>, tensor<2x3x2xf16>
  // CHECK: tg.gather %{{.*}}, %{{.*}} dim 2 : tensor<2x3x4xf16>, tensor<2x3x1xi64>
  %idx = tg.iota dim 0 : tensor<2x3x1xi64>
  %9 = tg.gather %x, %idx dim 2 : tensor<2x3x4xf16>, tensor<2x3x1xi64>
  // CHECK: tg.scatter_add %{{.*}}, %{{.*}} dim 2 : tensor<2x3x1xi64>, tensor<2x3x1xf16> to tensor<2x3x4xf16>
  %10 = tg.scatter_add %idx, %9 dim 2 : tensor<2x3x1xi64>, tensor<2x3x1xf16> to tensor<2x3x4xf16>
  // CHECK: tg.embedding %{{.*}}, %{{.*}} : tensor<4x5xf16>, tensor<2x3xi32>
  %11 = tg.embedding %w, %i : tensor<4x5xf16>, tensor<2x3xi32>
  // CHECK: tg.embedding_backward %{{.*}}, %{{.*}} : tensor<2x3x5xf16>, tensor<2x3xi32> to tensor<4x5xf16>
  %12 = tg.embedding_backward %11, %i : tensor<2x3x5xf16>, tensor<2x3xi32> to tensor<4x5xf16>
  // CHECK: tg.constant dense<[true, false]> : tensor<2xi1>
  %13 = tg.constant dense<[true, false]> : tensor<2xi1>
  // CHECK: tg.rand_uniform seed 7 : tensor<3x3xf32>
  %14 = tg.rand_uniform seed 7 : tensor<3x3xf32>
  return
}

// -----

// CHECK-LABEL: func.func @composites
func.func @composites(%x: tensor<2x8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>,
                      %g: tensor<16xf32>, %q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>,
                      %labels: tensor<2x8xi64>) {
  // CHECK: tg.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<32xf32>
  %0 = tg.linear %x, %w, %b : tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<32xf32>
  // CHECK: tg.linear %{{.*}}, %{{.*}} : tensor<2x8x16xf32>, tensor<32x16xf32>
  %1 = tg.linear %x, %w : tensor<2x8x16xf32>, tensor<32x16xf32>
  // CHECK: tg.softmax %{{.*}} dim -1 : tensor<2x8x32xf32>
  %2 = tg.softmax %0 dim -1 : tensor<2x8x32xf32>
  // CHECK: tg.log_softmax %{{.*}} dim 2 : tensor<2x8x32xf32>
  %3 = tg.log_softmax %0 dim 2 : tensor<2x8x32xf32>
  // CHECK: tg.layer_norm %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  %4 = tg.layer_norm %x, %g, %g eps 1.0e-5 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK: tg.rms_norm %{{.*}}, %{{.*}} eps 9.9999999999999995E-7 : tensor<2x8x16xf32>, tensor<16xf32>
  %5 = tg.rms_norm %x, %g eps 1.0e-6 : tensor<2x8x16xf32>, tensor<16xf32>
  // CHECK: tg.cross_entropy %{{.*}}, %{{.*}} : tensor<2x8x32xf32>, tensor<2x8xi64>
  %6 = tg.cross_entropy %0, %labels : tensor<2x8x32xf32>, tensor<2x8xi64>
  // CHECK: tg.sdpa %{{.*}}, %{{.*}}, %{{.*}} causal : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  %7 = tg.sdpa %q, %kv, %kv causal : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  // CHECK: tg.sdpa %{{.*}}, %{{.*}}, %{{.*}} scale 2.500000e-01 :
  %8 = tg.sdpa %q, %kv, %kv scale 0.25 : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  // CHECK: tg.dropout %{{.*}} p 1.000000e-01 seed 3 : tensor<2x8x16xf32>
  %9 = tg.dropout %x p 0.1 seed 3 : tensor<2x8x16xf32>
  return
}
