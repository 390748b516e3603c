// RUN: spmdc-opt %s --tg-print-costs | FileCheck %s

// A matmul: a multiply-add per (result element, contracted element); bytes:
// each operand and the result once.
// CHECK-LABEL: func.func @main
// CHECK: tg.matmul {{.*}}tg.cost = {bytes = 224 : i64, flops = 128 : i64}
// Batched with a broadcast rhs: 2 x 8 x 2 results, each over k = 4.
// CHECK: tg.matmul {{.*}}tg.cost = {bytes = 416 : i64, flops = 256 : i64}
// Elementwise: one operation per result element (broadcast operands count
// at their own size).
// CHECK: tg.add {{.*}}tg.cost = {bytes = 136 : i64, flops = 16 : i64}
// A reduction: one operation per input element.
// CHECK: tg.sum {{.*}}tg.cost = {bytes = 72 : i64, flops = 16 : i64}
// Moving values costs bytes only.
// CHECK: tg.reshape {{.*}}tg.cost = {bytes = 256 : i64, flops = 0 : i64}
// Linear: the matmul and the bias.
// CHECK: tg.linear {{.*}}tg.cost = {bytes = {{[0-9]+}} : i64, flops = 144 : i64}
// Attention: q k^T (2 x 2 x 4 x 4 = 64 scores over d = 8) and the scores
// times v (128 results over 4 keys), 2 each, and 5 per score for softmax.
// CHECK: tg.sdpa {{.*}}tg.cost = {bytes = {{[0-9]+}} : i64, flops = 2368 : i64}
func.func @main(%x: tensor<8x4xf32>, %w: tensor<4x2xf32>, %b: tensor<2x8x4xf32>,
                %bias: tensor<2xf32>, %lw: tensor<2x4xf32>,
                %q: tensor<2x2x4x8xf32>) -> tensor<2xf32> {
  %0 = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32>
  %1 = tg.matmul %b, %w : tensor<2x8x4xf32>, tensor<4x2xf32>
  %2 = tg.add %0, %bias : tensor<8x2xf32>, tensor<2xf32>
  %3 = tg.sum %2 dims [0] : tensor<8x2xf32>
  %4 = tg.reshape %1 : tensor<2x8x2xf32> to tensor<16x2xf32>
  %5 = tg.linear %x, %lw, %bias : tensor<8x4xf32>, tensor<2x4xf32>, tensor<2xf32>
  %6 = tg.sdpa %q, %q, %q causal : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>
  return %3 : tensor<2xf32>
}
