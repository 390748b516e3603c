// RUN: spmdc-opt %s | FileCheck %s
// RUN: spmdc-opt %s | spmdc-opt | FileCheck %s

// Every dist op round-trips through its assembly format.
module attributes {dist.mesh = {axes = ["dp", "tp"], shape = array<i64: 2, 2>}} {
  // CHECK-LABEL: func.func @collectives
  func.func @collectives(%x: tensor<4x8xf32>) {
    // CHECK: dist.all_reduce %{{.*}} axes ["dp"] {origin = "w", phase = #dist.phase<backward>} : tensor<4x8xf32>
    %0 = dist.all_reduce %x axes ["dp"] {origin = "w", phase = #dist.phase<backward>} : tensor<4x8xf32>
    // CHECK: dist.all_reduce %{{.*}} axes ["dp"] by max : tensor<4x8xf32>
    %max = dist.all_reduce %x axes ["dp"] by max : tensor<4x8xf32>
    // CHECK: dist.all_gather %{{.*}} axes ["dp", "tp"] dim 0 : tensor<4x8xf32> -> tensor<16x8xf32>
    %1 = dist.all_gather %x axes ["dp", "tp"] dim 0 : tensor<4x8xf32> -> tensor<16x8xf32>
    // CHECK: dist.reduce_scatter %{{.*}} axes ["tp"] dim 1 : tensor<4x8xf32> -> tensor<4x4xf32>
    %2 = dist.reduce_scatter %x axes ["tp"] dim 1 : tensor<4x8xf32> -> tensor<4x4xf32>
    // CHECK: dist.all_to_all %{{.*}} axes ["tp"] split_dim 1 concat_dim 0 : tensor<4x8xf32> -> tensor<8x4xf32>
    %3 = dist.all_to_all %x axes ["tp"] split_dim 1 concat_dim 0 : tensor<4x8xf32> -> tensor<8x4xf32>
    // CHECK: dist.local_slice %{{.*}} axes ["dp"] dim 0 : tensor<4x8xf32> -> tensor<2x8xf32>
    %4 = dist.local_slice %x axes ["dp"] dim 0 : tensor<4x8xf32> -> tensor<2x8xf32>
    return
  }

  // Shardings: dims only, with partial axes, with an origin.
  // CHECK-LABEL: func.func @shardings
  // CHECK-SAME: {dist.sharding = #dist.sharding<{{\[\["dp"\], \[\]\]}}>}
  // CHECK-SAME: {dist.sharding = #dist.sharding<{{\[\[\], \["tp"\]\]}} partial ["dp"]>}
  // CHECK-SAME: {dist.sharding = #dist.sharding<[] from "spec /presets/dp">}
  func.func @shardings(%a: tensor<4x8xf32> {dist.sharding = #dist.sharding<[["dp"], []]>},
                       %b: tensor<4x8xf32> {dist.sharding = #dist.sharding<[[], ["tp"]] partial ["dp"]>},
                       %c: tensor<f32> {dist.sharding = #dist.sharding<[] from "spec /presets/dp">}) {
    return
  }
}
