// RUN: spmdc-opt %s --tg-rearrange-products --convert-tg-matmul-to-blas | FileCheck %s

// f32 and f64 matmuls become calls of the runtime's GEMMs on the operands'
// buffers and a fresh result buffer; batch dims and broadcasting are the
// runtime's to handle.
// CHECK-LABEL: func.func @matmuls
// CHECK: %[[A:.*]] = bufferization.to_buffer %arg0 read_only : tensor<2x4x8xf32> to memref<2x4x8xf32>
// CHECK: %[[AU:.*]] = memref.cast %[[A]] : memref<2x4x8xf32> to memref<*xf32>
// CHECK: %[[B:.*]] = bufferization.to_buffer %arg1 read_only : tensor<8x16xf32> to memref<8x16xf32>
// CHECK: %[[BU:.*]] = memref.cast %[[B]] : memref<8x16xf32> to memref<*xf32>
// CHECK: %[[C:.*]] = memref.alloc() : memref<2x4x16xf32>
// CHECK: %[[CU:.*]] = memref.cast %[[C]] : memref<2x4x16xf32> to memref<*xf32>
// CHECK: call @spmd_matmul_f32(%[[NO:.*]], %[[NO2:.*]], %[[AU]], %[[BU]], %[[CU]]) : (i32, i32, memref<*xf32>, memref<*xf32>, memref<*xf32>) -> ()
// CHECK: bufferization.to_tensor %[[C]] restrict writable : memref<2x4x16xf32> to tensor<2x4x16xf32>
// CHECK: call @spmd_matmul_f64(
// An f16 matmul keeps the linalg lowering.
// CHECK: tg.matmul %arg4, %arg5 : tensor<2x3xf16>, tensor<3x2xf16>

// bf16 (--precision=bf16) has a GEMM too.
// CHECK-LABEL: func.func @bf16
// CHECK: call @spmd_matmul_bf16(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>) -> ()

// A transpose of the last two dims that feeds a GEMM is read in place
// (flag 1) and disappears; other permutations stay copies.
// CHECK-LABEL: func.func @transposed
// CHECK-NOT:     tg.transpose %arg1
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK:         %[[W:.*]] = bufferization.to_buffer %arg1 read_only : tensor<16x8xf32> to memref<16x8xf32>
// CHECK:         call @spmd_matmul_f32(%[[ZERO]], %[[ONE]],
// CHECK:         tg.transpose %arg2 perm [1, 0, 2]
// CHECK:         call @spmd_matmul_f32(%{{.*}}, %{{.*}},

// A transpose of a transpose is no transpose; a transposed product is the
// product of the transposed operands, (A B)^T = B^T A^T, read in place.
// CHECK-LABEL: func.func @tied_embedding
// CHECK-NOT:     tg.transpose
// CHECK:         %[[N1:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[N2:.*]] = arith.constant 0 : i32
// CHECK:         call @spmd_matmul_f32(%[[N1]], %[[N2]],
// CHECK:         %[[T:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[N3:.*]] = arith.constant 0 : i32
// CHECK:         call @spmd_matmul_f32(%[[T]], %[[N3]],
// CHECK-NOT:     tg.transpose

// The same through a reshape that drops a batch of one.
// CHECK-LABEL: func.func @batch_of_one
// CHECK-NOT:     tg.transpose
// CHECK:         %[[T1:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[T2:.*]] = arith.constant 1 : i32
// CHECK:         call @spmd_matmul_f32(%[[T1]], %[[T2]],
// CHECK:         tg.reshape %{{.*}} : tensor<1x16x8xf32> to tensor<16x8xf32>
// CHECK-NOT:     tg.transpose
func.func @matmuls(%a: tensor<2x4x8xf32>, %b: tensor<8x16xf32>, %x: tensor<3x5xf64>, %y: tensor<5x2xf64>, %i: tensor<2x3xf16>, %j: tensor<3x2xf16>) -> (tensor<2x4x16xf32>, tensor<3x2xf64>, tensor<2x2xf16>) {
  %c = tg.matmul %a, %b : tensor<2x4x8xf32>, tensor<8x16xf32>
  %z = tg.matmul %x, %y : tensor<3x5xf64>, tensor<5x2xf64>
  %k = tg.matmul %i, %j : tensor<2x3xf16>, tensor<3x2xf16>
  return %c, %z, %k : tensor<2x4x16xf32>, tensor<3x2xf64>, tensor<2x2xf16>
}

func.func @bf16(%a: tensor<4x8xbf16>, %b: tensor<8x2xbf16>) -> tensor<4x2xbf16> {
  %c = tg.matmul %a, %b : tensor<4x8xbf16>, tensor<8x2xbf16>
  return %c : tensor<4x2xbf16>
}

func.func @transposed(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %y: tensor<2x4x8xf32>, %v: tensor<8x3xf32>) -> (tensor<4x16xf32>, tensor<4x2x3xf32>) {
  %wt = tg.transpose %w perm [1, 0] : tensor<16x8xf32>
  %c = tg.matmul %x, %wt : tensor<4x8xf32>, tensor<8x16xf32>
  %yt = tg.transpose %y perm [1, 0, 2] : tensor<2x4x8xf32>
  %d = tg.matmul %yt, %v : tensor<4x2x8xf32>, tensor<8x3xf32>
  return %c, %d : tensor<4x16xf32>, tensor<4x2x3xf32>
}

func.func @tied_embedding(%g: tensor<4x16xf32>, %w: tensor<16x8xf32>, %h: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>) {
  // dh = g @ (w^T)^T
  %wt = tg.transpose %w perm [1, 0] : tensor<16x8xf32>
  %wtt = tg.transpose %wt perm [1, 0] : tensor<8x16xf32>
  %dh = tg.matmul %g, %wtt : tensor<4x16xf32>, tensor<16x8xf32>
  // dw = (h^T g)^T = g^T h
  %ht = tg.transpose %h perm [1, 0] : tensor<4x8xf32>
  %dwt = tg.matmul %ht, %g : tensor<8x4xf32>, tensor<4x16xf32>
  %dw = tg.transpose %dwt perm [1, 0] : tensor<8x16xf32>
  return %dh, %dw : tensor<4x8xf32>, tensor<16x8xf32>
}

func.func @batch_of_one(%a: tensor<1x8x4xf32>, %g: tensor<1x4x16xf32>) -> tensor<16x8xf32> {
  %p = tg.matmul %a, %g : tensor<1x8x4xf32>, tensor<1x4x16xf32>
  %r = tg.reshape %p : tensor<1x8x16xf32> to tensor<8x16xf32>
  %t = tg.transpose %r perm [1, 0] : tensor<8x16xf32>
  return %t : tensor<16x8xf32>
}

// A weight's gradient summed over the batch it is shared by is one GEMM
// contracting over (batch, k): the activation [4, 64, 128] and the output
// gradient [4, 64, 512] are read in place as [256, 128] and [256, 512], and
// the transposed result is the product of the transposed operands.
// CHECK-LABEL: func.func @summed_over_batch
// CHECK-NOT:     tg.sum
// CHECK-DAG:     %[[X:.*]] = tg.reshape %arg0 : tensor<4x64x128xf32> to tensor<256x128xf32>
// CHECK-DAG:     %[[G:.*]] = tg.reshape %arg1 : tensor<4x64x512xf32> to tensor<256x512xf32>
// CHECK:         %[[T:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[N:.*]] = arith.constant 0 : i32
// CHECK:         %[[C:.*]] = memref.alloc() : memref<512x128xf32>
// CHECK:         call @spmd_matmul_f32(%[[T]], %[[N]],
// CHECK-NOT:     tg.transpose
// CHECK-NOT:     tg.sum
func.func @summed_over_batch(%x: tensor<4x64x128xf32>, %g: tensor<4x64x512xf32>) -> tensor<512x128xf32> {
  %xt = tg.transpose %x perm [0, 2, 1] : tensor<4x64x128xf32>
  %p = tg.matmul %xt, %g : tensor<4x128x64xf32>, tensor<4x64x512xf32>
  %s = tg.sum %p dims [0] keepdim : tensor<4x128x512xf32>
  %r = tg.reshape %s : tensor<1x128x512xf32> to tensor<128x512xf32>
  %t = tg.transpose %r perm [1, 0] : tensor<128x512xf32>
  return %t : tensor<512x128xf32>
}

// A kept batch dim stays a batch of the GEMM; the summed one moves next to
// k (a copy of each operand, smaller than the [2, 3, 8, 16] products).
// CHECK-LABEL: func.func @summed_inner_batch
// CHECK:         %[[A:.*]] = tg.transpose %arg0 perm [1, 0, 3, 2] : tensor<2x3x8x5xf32>
// CHECK-NEXT:    tg.reshape %[[A]] : tensor<3x2x5x8xf32> to tensor<3x10x8xf32>
// CHECK-NEXT:    %[[B:.*]] = tg.transpose %arg1 perm [1, 0, 2, 3] : tensor<2x3x5x16xf32>
// CHECK-NEXT:    tg.reshape %[[B]] : tensor<3x2x5x16xf32> to tensor<3x10x16xf32>
// CHECK:         memref.alloc() : memref<3x8x16xf32>
// CHECK:         call @spmd_matmul_f32(
// CHECK-NOT:     tg.sum
func.func @summed_inner_batch(%a: tensor<2x3x8x5xf32>, %b: tensor<2x3x5x16xf32>) -> tensor<3x8x16xf32> {
  %p = tg.matmul %a, %b : tensor<2x3x8x5xf32>, tensor<2x3x5x16xf32>
  %s = tg.sum %p dims [0] : tensor<2x3x8x16xf32>
  return %s : tensor<3x8x16xf32>
}

// A dim that only one operand carries (broadcast) is not a contraction; a
// product whose copies would outweigh it (n = 1) stays batched.
// CHECK-LABEL: func.func @not_contracted
// CHECK-COUNT-2: tg.sum
func.func @not_contracted(%a: tensor<4x8x5xf32>, %b: tensor<1x5x6xf32>, %c: tensor<4x5x8xf32>, %d: tensor<4x8x1xf32>) -> (tensor<8x6xf32>, tensor<5x1xf32>) {
  %p = tg.matmul %a, %b : tensor<4x8x5xf32>, tensor<1x5x6xf32>
  %s = tg.sum %p dims [0] : tensor<4x8x6xf32>
  %q = tg.matmul %c, %d : tensor<4x5x8xf32>, tensor<4x8x1xf32>
  %t = tg.sum %q dims [0] : tensor<4x5x1xf32>
  return %s, %t : tensor<8x6xf32>, tensor<5x1xf32>
}

// The runtime GEMMs, declared once.
// CHECK-DAG: func.func private @spmd_matmul_f32(i32, i32, memref<*xf32>, memref<*xf32>, memref<*xf32>)
// CHECK-DAG: func.func private @spmd_matmul_f64(i32, i32, memref<*xf64>, memref<*xf64>, memref<*xf64>)
// CHECK-DAG: func.func private @spmd_matmul_bf16(i32, i32, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>)
