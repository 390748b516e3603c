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
