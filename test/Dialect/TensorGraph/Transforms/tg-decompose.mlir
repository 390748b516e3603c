// RUN: spmdc-opt %s --tg-decompose -split-input-file | FileCheck %s
// Idempotent: a second run changes nothing.
// RUN: spmdc-opt %s --tg-decompose -split-input-file > %t.once
// RUN: spmdc-opt %t.once --tg-decompose -split-input-file > %t.twice
// RUN: diff %t.once %t.twice

// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<8x4xf32>, %[[W:[a-z0-9]+]]: tensor<2x4xf32>, %[[B:[a-z0-9]+]]: tensor<2xf32>)
// CHECK: %[[T:.*]] = tg.transpose %[[W]] perm [1, 0] : tensor<2x4xf32>
// CHECK: %[[M:.*]] = tg.matmul %[[X]], %[[T]] : tensor<8x4xf32>, tensor<4x2xf32>
// CHECK: %[[Y:.*]] = tg.add %[[M]], %[[B]] : tensor<8x2xf32>, tensor<2xf32>
// CHECK: return %[[Y]]
func.func @linear(%x: tensor<8x4xf32>, %w: tensor<2x4xf32>, %b: tensor<2xf32>) -> tensor<8x2xf32> {
  %0 = tg.linear %x, %w, %b : tensor<8x4xf32>, tensor<2x4xf32>, tensor<2xf32>
  return %0 : tensor<8x2xf32>
}

// -----

// CHECK-LABEL: func.func @mean
// CHECK: %[[S:.*]] = tg.sum %{{.*}} dims [1] : tensor<4x8xf32>
// CHECK: %[[N:.*]] = tg.full 1.250000e-01 : tensor<f32>
// CHECK: tg.mul %[[S]], %[[N]] : tensor<4xf32>, tensor<f32>
func.func @mean(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = tg.mean %x dims [1] : tensor<4x8xf32>
  return %0 : tensor<4xf32>
}

// -----

// Softmax subtracts the max first.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x10xf32>)
// CHECK: %[[MAX:.*]] = tg.max %[[X]] dims [1] keepdim {tg.constant_to_derivative} : tensor<4x10xf32>
// CHECK: %[[SH:.*]] = tg.sub %[[X]], %[[MAX]] : tensor<4x10xf32>, tensor<4x1xf32>
// CHECK: %[[E:.*]] = tg.exp %[[SH]] : tensor<4x10xf32>
// CHECK: %[[S:.*]] = tg.sum %[[E]] dims [1] keepdim : tensor<4x10xf32>
// CHECK: tg.div %[[E]], %[[S]] : tensor<4x10xf32>, tensor<4x1xf32>
func.func @softmax(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = tg.softmax %x dim 1 : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

// log_softmax is (x - max) - log(sum(exp(x - max))).
// CHECK-LABEL: func.func @log_softmax
// CHECK: %[[MAX:.*]] = tg.max %{{.*}} dims [-1] keepdim
// CHECK: %[[SH:.*]] = tg.sub %{{.*}}, %[[MAX]]
// CHECK: %[[E:.*]] = tg.exp %[[SH]]
// CHECK: %[[S:.*]] = tg.sum %[[E]] dims [-1] keepdim
// CHECK: %[[L:.*]] = tg.log %[[S]]
// CHECK: tg.sub %[[SH]], %[[L]]
func.func @log_softmax(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = tg.log_softmax %x dim -1 : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm
// CHECK: tg.sum %{{.*}} dims [2] keepdim : tensor<2x3x16xf32>
// CHECK: %[[C:.*]] = tg.sub
// CHECK: tg.mul %[[C]], %[[C]]
// CHECK: %[[EPS:.*]] = tg.full 1.000000e-05 : tensor<f32>
// CHECK: tg.rsqrt
// CHECK-NOT: tg.layer_norm
func.func @layer_norm(%x: tensor<2x3x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x3x16xf32> {
  %0 = tg.layer_norm %x, %g, %b eps 1.0e-5 : tensor<2x3x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %0 : tensor<2x3x16xf32>
}

// -----

// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<2x16xf32>, %[[G:[a-z0-9]+]]: tensor<16xf32>)
// CHECK: %[[SQ:.*]] = tg.mul %[[X]], %[[X]]
// CHECK: tg.sum %[[SQ]] dims [1] keepdim
// CHECK: %[[R:.*]] = tg.rsqrt
// CHECK: %[[N:.*]] = tg.mul %[[X]], %[[R]]
// CHECK: tg.mul %[[N]], %[[G]]
func.func @rms_norm(%x: tensor<2x16xf32>, %g: tensor<16xf32>) -> tensor<2x16xf32> {
  %0 = tg.rms_norm %x, %g eps 1.0e-6 : tensor<2x16xf32>, tensor<16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

// CHECK-LABEL: func.func @gelu
// CHECK: tg.full 0.70710678118654757 : tensor<f32>
// CHECK: tg.erf
// CHECK: tg.full 4.471500e-02 : tensor<f32>
// CHECK: tg.full 0.79788456080286541 : tensor<f32>
// CHECK: tg.tanh
// CHECK-NOT: tg.gelu
func.func @gelu(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = tg.gelu %x : tensor<4xf32>
  %1 = tg.gelu %x approximate "tanh" : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4xf32>)
// CHECK: %[[S:.*]] = tg.sigmoid %[[X]]
// CHECK: tg.mul %[[X]], %[[S]]
func.func @silu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.silu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Cross-entropy: log-sum-exp, gather of the label, negated mean.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: tg.max %{{.*}} dims [2] keepdim {tg.constant_to_derivative} : tensor<2x3x10xf32>
// CHECK: tg.log
// CHECK: %[[I:.*]] = tg.reshape %{{.*}} : tensor<2x3xi64> to tensor<2x3x1xi64>
// CHECK: %[[P:.*]] = tg.gather %{{.*}}, %[[I]] dim 2 : tensor<2x3x10xf32>, tensor<2x3x1xi64>
// CHECK: tg.sum %[[P]] dims [0, 1, 2] : tensor<2x3x1xf32>
// CHECK: tg.full 0.16666666666666666 : tensor<f32>
// CHECK: tg.neg
func.func @cross_entropy(%x: tensor<2x3x10xf32>, %y: tensor<2x3xi64>) -> tensor<f32> {
  %0 = tg.cross_entropy %x, %y : tensor<2x3x10xf32>, tensor<2x3xi64>
  return %0 : tensor<f32>
}

// -----

// Causal, grouped-query attention: kv heads repeated, scores scaled by
// 1/sqrt(D), masked with -inf above the diagonal, softmax, times v.
// CHECK-LABEL: func.func @sdpa
// CHECK: tg.reshape %{{.*}} : tensor<1x2x3x2xf32> to tensor<1x2x1x3x2xf32>
// CHECK: tg.broadcast %{{.*}} : tensor<1x2x1x3x2xf32> to tensor<1x2x2x3x2xf32>
// CHECK: tg.reshape %{{.*}} : tensor<1x2x2x3x2xf32> to tensor<1x4x3x2xf32>
// CHECK: tg.transpose %{{.*}} perm [0, 1, 3, 2] : tensor<1x4x3x2xf32>
// CHECK: tg.matmul %{{.*}}, %{{.*}} : tensor<1x4x3x2xf32>, tensor<1x4x2x3xf32>
// CHECK: tg.full 0.70710678118654746 : tensor<f32>
// CHECK: %[[ROW:.*]] = tg.iota dim 0 : tensor<3x3xi64>
// CHECK: %[[COL:.*]] = tg.iota dim 1 : tensor<3x3xi64>
// CHECK: %[[VIS:.*]] = tg.compare le, %[[COL]], %[[ROW]]
// CHECK: %[[NEGINF:.*]] = tg.full 0xFFF0000000000000 : tensor<f32>
// CHECK: tg.select %[[VIS]], %{{.*}}, %[[NEGINF]]
// CHECK: tg.exp
// CHECK: tg.matmul %{{.*}}, %{{.*}} : tensor<1x4x3x3xf32>, tensor<1x4x3x2xf32>
func.func @sdpa(%q: tensor<1x4x3x2xf32>, %kv: tensor<1x2x3x2xf32>) -> tensor<1x4x3x2xf32> {
  %0 = tg.sdpa %q, %kv, %kv causal : tensor<1x4x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>
  return %0 : tensor<1x4x3x2xf32>
}

// -----

// CHECK-LABEL: func.func @dropout
// CHECK: %[[U:.*]] = tg.rand_uniform seed 3 : tensor<4x8xf32>
// CHECK: %[[P:.*]] = tg.full 2.500000e-01 : tensor<f32>
// CHECK: %[[KEEP:.*]] = tg.compare ge, %[[U]], %[[P]]
// CHECK: tg.full 1.3333333333333333 : tensor<f32>
// CHECK: tg.select %[[KEEP]]
func.func @dropout(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tg.dropout %x p 0.25 seed 3 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
