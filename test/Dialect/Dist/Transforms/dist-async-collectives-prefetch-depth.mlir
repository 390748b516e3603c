// RUN: spmdc-opt %s --dist-async-collectives=prefetch-depth=2 | FileCheck %s --check-prefix=DEPTH2
// RUN: spmdc-opt %s --dist-async-collectives=prefetch-depth=1 | FileCheck %s --check-prefix=DEPTH1
// RUN: spmdc-opt %s --dist-async-collectives=prefetch-depth=0 | FileCheck %s --check-prefix=DEPTH0

// prefetch-depth bounds how many parameter gathers are under way ahead of
// the one waited for, and so how many groups' gathered parameters are
// alive at once. Three layers' weights, each gathered before its matmul.

// Two ahead: w0 has nothing before it to hide behind; w1 and w2 then
// start, in the order they are needed, while layer 0 computes.
// DEPTH2: %[[A0:.*]] = dist.all_gather %arg0 {{.*}}origin = "w0"
// DEPTH2-NEXT: %[[P1:.*]] = dist.start_all_gather %arg1 {{.*}}origin = "w1"
// DEPTH2-NEXT: %[[P2:.*]] = dist.start_all_gather %arg2 {{.*}}origin = "w2"
// DEPTH2-NEXT: %[[H0:.*]] = tg.matmul %arg3, %[[A0]]
// DEPTH2-NEXT: %[[W1:.*]] = dist.wait %[[P1]]
// DEPTH2-NEXT: %[[H1:.*]] = tg.matmul %[[H0]], %[[W1]]
// DEPTH2-NEXT: %[[W2:.*]] = dist.wait %[[P2]]
// DEPTH2-NEXT: tg.matmul %[[H1]], %[[W2]]

// One ahead (the default): each starts after the wait of the one before.
// DEPTH1: %[[A0:.*]] = dist.all_gather %arg0 {{.*}}origin = "w0"
// DEPTH1-NEXT: %[[P1:.*]] = dist.start_all_gather %arg1 {{.*}}origin = "w1"
// DEPTH1-NEXT: %[[H0:.*]] = tg.matmul %arg3, %[[A0]]
// DEPTH1-NEXT: %[[W1:.*]] = dist.wait %[[P1]]
// DEPTH1-NEXT: %[[P2:.*]] = dist.start_all_gather %arg2 {{.*}}origin = "w2"
// DEPTH1-NEXT: %[[H1:.*]] = tg.matmul %[[H0]], %[[W1]]
// DEPTH1-NEXT: %[[W2:.*]] = dist.wait %[[P2]]
// DEPTH1-NEXT: tg.matmul %[[H1]], %[[W2]]

// None: each gather stays where it was, blocking.
// DEPTH0-NOT: dist.start_all_gather
// DEPTH0: dist.all_gather %arg0
// DEPTH0-NEXT: tg.matmul
// DEPTH0-NEXT: dist.all_gather %arg1
// DEPTH0-NEXT: tg.matmul
// DEPTH0-NEXT: dist.all_gather %arg2
// DEPTH0-NEXT: tg.matmul
module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @layers(%w0: tensor<2x4xf32>, %w1: tensor<2x4xf32>, %w2: tensor<2x4xf32>, %in: tensor<4x4xf32>)
      -> tensor<4x4xf32> {
    %a0 = dist.all_gather %w0 axes ["dp"] dim 0 {origin = "w0"} : tensor<2x4xf32> -> tensor<4x4xf32>
    %h0 = tg.matmul %in, %a0 : tensor<4x4xf32>, tensor<4x4xf32>
    %a1 = dist.all_gather %w1 axes ["dp"] dim 0 {origin = "w1"} : tensor<2x4xf32> -> tensor<4x4xf32>
    %h1 = tg.matmul %h0, %a1 : tensor<4x4xf32>, tensor<4x4xf32>
    %a2 = dist.all_gather %w2 axes ["dp"] dim 0 {origin = "w2"} : tensor<2x4xf32> -> tensor<4x4xf32>
    %h2 = tg.matmul %h1, %a2 : tensor<4x4xf32>, tensor<4x4xf32>
    return %h2 : tensor<4x4xf32>
  }
}
