// RUN: spmdc-opt %s | FileCheck %s
// RUN: spmdc-opt %s | spmdc-opt | FileCheck %s
// RUN: spmdc-opt %s --emit-bytecode | spmdc-opt | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: tg.name = "x", tg.role = "data"
func.func @main(%x: tensor<8x4xf32> {tg.name = "x", tg.role = "data"},
                %w: tensor<2x4xf32> {tg.name = "w", tg.role = "param"},
                %b: tensor<2xf32> {tg.name = "b", tg.role = "param"},
                %t: tensor<8xi64> {tg.name = "t", tg.role = "data", tg.index_bound = 2 : i64})
    -> (tensor<f32> {tg.name = "loss", tg.role = "loss"}) {
  // CHECK: %[[Y:.*]] = tg.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x4xf32>, tensor<2x4xf32>, tensor<2xf32>
  %y = tg.linear %x, %w, %b : tensor<8x4xf32>, tensor<2x4xf32>, tensor<2xf32>
  // CHECK: tg.add %[[Y]], %{{.*}} : tensor<8x2xf32>, tensor<2xf32>
  %z = tg.add %y, %b : tensor<8x2xf32>, tensor<2xf32>
  // CHECK: tg.sum %{{.*}} dims [1] keepdim : tensor<8x2xf32>
  %s = tg.sum %z dims [1] keepdim : tensor<8x2xf32>
  // CHECK: tg.compare "lt", %{{.*}}, %{{.*}} : tensor<8x1xf32>, tensor<8x2xf32>
  %m = tg.compare "lt", %s, %z : tensor<8x1xf32>, tensor<8x2xf32>
  %sel = tg.select %m, %z, %s : tensor<8x2xi1>, tensor<8x2xf32>, tensor<8x1xf32>
  %g = tg.gelu %sel approximate "tanh" : tensor<8x2xf32>
  %r = tg.reshape %g : tensor<8x2xf32> to tensor<16xf32>
  %tr = tg.transpose %y perm [1, 0] : tensor<8x2xf32>
  %sl = tg.slice %tr dim 1 start 0 end 8 step 2 : tensor<2x8xf32>
  %c = tg.concat %sl, %sl dim 0 : tensor<2x4xf32>, tensor<2x4xf32>
  %i = tg.iota dim 0 : tensor<4xi64>
  %f = tg.full 0.0 : tensor<4x4xf32>
  %k = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %e = tg.embedding %w, %t : tensor<2x4xf32>, tensor<8xi64>
  %ce = tg.cross_entropy %y, %t : tensor<8x2xf32>, tensor<8xi64>
  return %ce : tensor<f32>
}
