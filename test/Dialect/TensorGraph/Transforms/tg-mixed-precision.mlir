// RUN: spmdc-opt %s --tg-mixed-precision | FileCheck %s

// An f32 matmul reads bf16 operands and gives a bf16 product, widened back
// to f32 for its users; the other ops stay f32.

// CHECK-LABEL: func.func @linear
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x16xf32>)
// CHECK:         %[[X16:.*]] = tg.convert %[[X]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK:         %[[W16:.*]] = tg.convert %[[W]] : tensor<8x16xf32> to tensor<8x16xbf16>
// CHECK:         %[[P16:.*]] = tg.matmul %[[X16]], %[[W16]] : tensor<4x8xbf16>, tensor<8x16xbf16>
// CHECK:         %[[P:.*]] = tg.convert %[[P16]] : tensor<4x16xbf16> to tensor<4x16xf32>
// CHECK:         %[[E:.*]] = tg.exp %[[P]] : tensor<4x16xf32>
// CHECK:         return %[[E]]
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %p = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32>
  %e = tg.exp %p : tensor<4x16xf32>
  return %e : tensor<4x16xf32>
}

// f64 matmuls are left alone.
// CHECK-LABEL: func.func @double
// CHECK-NOT:     tg.convert
// CHECK:         tg.matmul %{{.*}}, %{{.*}} : tensor<2x2xf64>, tensor<2x2xf64>
func.func @double(%a: tensor<2x2xf64>) -> tensor<2x2xf64> {
  %p = tg.matmul %a, %a : tensor<2x2xf64>, tensor<2x2xf64>
  return %p : tensor<2x2xf64>
}

// An operand under transposes of its last two dims is converted beneath
// them: the GEMM reads the bf16 weight transposed in place, and no f32
// transpose is copied. Other permutations are converted as they are.
// CHECK-LABEL: func.func @transposed_weight
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<16x8xf32>, %[[Y:.*]]: tensor<2x4x8xf32>)
// CHECK-NOT:     tg.transpose %[[W]]
// CHECK:         %[[W16:.*]] = tg.convert %[[W]] : tensor<16x8xf32> to tensor<16x8xbf16>
// CHECK-NEXT:    %[[WT16:.*]] = tg.transpose %[[W16]] perm [1, 0] : tensor<16x8xbf16>
// CHECK-NEXT:    tg.matmul %{{.*}}, %[[WT16]] : tensor<4x8xbf16>, tensor<8x16xbf16>
// CHECK:         %[[YT:.*]] = tg.transpose %[[Y]] perm [1, 0, 2] : tensor<2x4x8xf32>
// CHECK-NEXT:    tg.convert %[[YT]] : tensor<4x2x8xf32> to tensor<4x2x8xbf16>
func.func @transposed_weight(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %y: tensor<2x4x8xf32>) -> (tensor<4x16xf32>, tensor<4x2x16xf32>) {
  %wt = tg.transpose %w perm [1, 0] : tensor<16x8xf32>
  %p = tg.matmul %x, %wt : tensor<4x8xf32>, tensor<8x16xf32>
  %yt = tg.transpose %y perm [1, 0, 2] : tensor<2x4x8xf32>
  %q = tg.matmul %yt, %wt : tensor<4x2x8xf32>, tensor<8x16xf32>
  return %p, %q : tensor<4x16xf32>, tensor<4x2x16xf32>
}
