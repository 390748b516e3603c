// RUN: spmdc-opt %s --strip-graph-attributes | FileCheck %s

// The signature's attributes go; others stay.
// CHECK: module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}}
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %{{.*}}: tensor<4xf32> {llvm.noalias}) -> tensor<f32>
// CHECK-NOT: tg.role
// CHECK-NOT: #dist
module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @main(%x: tensor<4xf32> {dist.sharding = #dist.sharding<[["dp"]]>, llvm.noalias,
                                     tg.name = "x", tg.role = #tg.role<data>})
      -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
    %s = tg.sum %x dims [0] : tensor<4xf32>
    %l = dist.all_reduce %s axes ["dp"] : tensor<f32>
    return %l : tensor<f32>
  }
}
