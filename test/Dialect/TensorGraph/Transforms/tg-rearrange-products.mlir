// RUN: spmdc-opt %s --tg-rearrange-products | FileCheck %s

// (A B)^T = B^T A^T: the transposed product of a linear layer's weight
// gradient becomes the product of the transposed operands, whose transposes
// a GEMM reads in place (--convert-tg-matmul-to-blas).
// CHECK-LABEL: func.func @transposed_product
// CHECK-SAME:    (%[[H:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<4x16xf32>)
// CHECK-NEXT:    %[[HT:.*]] = tg.transpose %[[H]] perm [1, 0] : tensor<4x8xf32>
// CHECK-NEXT:    %[[GT:.*]] = tg.transpose %[[G]] perm [1, 0] : tensor<4x16xf32>
// CHECK-NEXT:    %[[HTT:.*]] = tg.transpose %[[HT]] perm [1, 0] : tensor<8x4xf32>
// CHECK-NEXT:    %[[P:.*]] = tg.matmul %[[GT]], %[[HTT]] : tensor<16x4xf32>, tensor<4x8xf32>
// CHECK-NEXT:    return %[[P]] : tensor<16x8xf32>
func.func @transposed_product(%h: tensor<4x8xf32>, %g: tensor<4x16xf32>) -> tensor<16x8xf32> {
  %ht = tg.transpose %h perm [1, 0] : tensor<4x8xf32>
  %p = tg.matmul %ht, %g : tensor<8x4xf32>, tensor<4x16xf32>
  %t = tg.transpose %p perm [1, 0] : tensor<8x16xf32>
  return %t : tensor<16x8xf32>
}

// A weight's gradient summed over the batch is one product contracting
// over (batch, k): [4, 64, 128]^T and [4, 64, 512] grouped as [256, 128]
// and [256, 512], no batch of products and no sum.
// CHECK-LABEL: func.func @summed_over_batch
// CHECK-NOT:     tg.sum
// CHECK:         %[[X:.*]] = tg.reshape %arg0 : tensor<4x64x128xf32> to tensor<256x128xf32>
// CHECK-NEXT:    %[[XT:.*]] = tg.transpose %[[X]] perm [1, 0] : tensor<256x128xf32>
// CHECK-NEXT:    %[[G:.*]] = tg.reshape %arg1 : tensor<4x64x512xf32> to tensor<256x512xf32>
// CHECK-NEXT:    tg.matmul %[[XT]], %[[G]] : tensor<128x256xf32>, tensor<256x512xf32>
// CHECK-NOT:     tg.sum
func.func @summed_over_batch(%x: tensor<4x64x128xf32>, %g: tensor<4x64x512xf32>) -> tensor<128x512xf32> {
  %xt = tg.transpose %x perm [0, 2, 1] : tensor<4x64x128xf32>
  %p = tg.matmul %xt, %g : tensor<4x128x64xf32>, tensor<4x64x512xf32>
  %s = tg.sum %p dims [0] : tensor<4x128x512xf32>
  return %s : tensor<128x512xf32>
}

// A product with another use, or a transpose of other dims, stays.
// CHECK-LABEL: func.func @kept
// CHECK:         %[[P:.*]] = tg.matmul %arg0, %arg1
// CHECK-NEXT:    tg.transpose %[[P]] perm [1, 0]
// CHECK:         tg.matmul %arg2, %arg3
// CHECK-NEXT:    tg.transpose %{{.*}} perm [1, 0, 2]
func.func @kept(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<2x4x8xf32>, %d: tensor<8x3xf32>) -> (tensor<16x4xf32>, tensor<4x16xf32>, tensor<4x2x3xf32>) {
  %p = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32>
  %t = tg.transpose %p perm [1, 0] : tensor<4x16xf32>
  %q = tg.matmul %c, %d : tensor<2x4x8xf32>, tensor<8x3xf32>
  %u = tg.transpose %q perm [1, 0, 2] : tensor<2x4x3xf32>
  return %t, %p, %u : tensor<16x4xf32>, tensor<4x16xf32>, tensor<4x2x3xf32>
}
