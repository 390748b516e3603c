// RUN: spmdc-opt %s --dist-async-collectives -split-input-file | FileCheck %s
// RUN: spmdc-opt %s --dist-async-collectives -split-input-file | spmdc-opt -split-input-file | FileCheck %s

// DDP: a gradient bucket's all-reduce starts right after its buffer is
// concatenated, the rest of the backward runs, and the wait sits just
// before the first op that reads the result (the slices that take the
// tensors out are moved down to their own first use, the update). The
// loss's all-reduce, used by the next op, stays blocking.
// CHECK-LABEL: func.func @bucket
// CHECK: %[[BUF:.*]] = tg.concat %arg0, %arg1 dim 0
// CHECK-NEXT: %[[P:.*]] = dist.start_all_reduce %[[BUF]] axes ["dp"] {origin = "gradient bucket 0", phase = #dist.phase<backward>, tensors = ["a", "b"]} : tensor<8xf32> -> !dist.pending<tensor<8xf32>>
// CHECK-NEXT: %[[E:.*]] = tg.exp %arg2
// CHECK-NEXT: %[[L:.*]] = dist.all_reduce %[[E]] axes ["dp"] {origin = "loss"
// CHECK-NEXT: %[[N:.*]] = tg.neg %[[L]]
// CHECK-NEXT: %[[R:.*]] = dist.wait %[[P]] : !dist.pending<tensor<8xf32>>
// CHECK-NEXT: %[[SA:.*]] = tg.slice %[[R]] dim 0 start 0 end 4
// CHECK-NEXT: %[[UA:.*]] = tg.add %arg0, %[[SA]]
// CHECK-NEXT: %[[SB:.*]] = tg.slice %[[R]] dim 0 start 4 end 8
// CHECK-NEXT: %[[UB:.*]] = tg.add %arg1, %[[SB]]
// CHECK-NEXT: return %[[UA]], %[[UB]], %[[N]]
module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @bucket(%a: tensor<4xf32>, %b: tensor<4xf32>, %x: tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %buf = tg.concat %a, %b dim 0 : tensor<4xf32>, tensor<4xf32>
    %e = tg.exp %x : tensor<4xf32>
    %l = dist.all_reduce %e axes ["dp"] {origin = "loss", phase = #dist.phase<forward>} : tensor<4xf32>
    %n = tg.neg %l : tensor<4xf32>
    %r = dist.all_reduce %buf axes ["dp"] {origin = "gradient bucket 0", phase = #dist.phase<backward>, tensors = ["a", "b"]} : tensor<8xf32>
    %sa = tg.slice %r dim 0 start 0 end 4 step 1 : tensor<8xf32>
    %sb = tg.slice %r dim 0 start 4 end 8 step 1 : tensor<8xf32>
    %ua = tg.add %a, %sa : tensor<4xf32>, tensor<4xf32>
    %ub = tg.add %b, %sb : tensor<4xf32>, tensor<4xf32>
    return %ua, %ub, %n : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// ZeRO-3: the parameters' all-gathers read arguments, there from the
// start; the first starts at the block's start, each later one right after
// the wait of the one before (one layer ahead), so the next layer's
// weights arrive while this layer computes, and not all at once. The
// gradient's reduce-scatter starts right after the gradient, above the
// collectives before it.
// CHECK-LABEL: func.func @layers
// CHECK-NEXT: %[[P0:.*]] = dist.start_all_gather %arg0 axes ["dp"] dim 0 {origin = "w0"} : tensor<2x4xf32> -> !dist.pending<tensor<4x4xf32>>
// CHECK-NEXT: %[[G:.*]] = tg.exp %arg2
// CHECK-NEXT: %[[PS:.*]] = dist.start_reduce_scatter %[[G]] axes ["dp"] dim 0 {origin = "g"} : tensor<4x4xf32> -> !dist.pending<tensor<2x4xf32>>
// CHECK-NEXT: %[[W0:.*]] = dist.wait %[[P0]]
// CHECK-NEXT: %[[P1:.*]] = dist.start_all_gather %arg1 axes ["dp"] dim 0 {origin = "w1"} : tensor<2x4xf32> -> !dist.pending<tensor<4x4xf32>>
// CHECK-NEXT: %[[H0:.*]] = tg.matmul %arg3, %[[W0]]
// CHECK-NEXT: %[[W1:.*]] = dist.wait %[[P1]]
// CHECK-NEXT: %[[H1:.*]] = tg.matmul %[[H0]], %[[W1]]
// CHECK-NEXT: %[[S:.*]] = dist.wait %[[PS]]
// CHECK-NEXT: return %[[H1]], %[[S]]
module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @layers(%w0: tensor<2x4xf32>, %w1: tensor<2x4xf32>, %x: tensor<4x4xf32>, %in: tensor<4x4xf32>)
      -> (tensor<4x4xf32>, tensor<2x4xf32>) {
    %g = tg.exp %x : tensor<4x4xf32>
    %a0 = dist.all_gather %w0 axes ["dp"] dim 0 {origin = "w0"} : tensor<2x4xf32> -> tensor<4x4xf32>
    %h0 = tg.matmul %in, %a0 : tensor<4x4xf32>, tensor<4x4xf32>
    %a1 = dist.all_gather %w1 axes ["dp"] dim 0 {origin = "w1"} : tensor<2x4xf32> -> tensor<4x4xf32>
    %s = dist.reduce_scatter %g axes ["dp"] dim 0 {origin = "g"} : tensor<4x4xf32> -> tensor<2x4xf32>
    %h1 = tg.matmul %h0, %a1 : tensor<4x4xf32>, tensor<4x4xf32>
    return %h1, %s : tensor<4x4xf32>, tensor<2x4xf32>
  }
}

// -----

// The backward of ZeRO-3: a layer's gradient is reduce-scattered (waited
// for at the return) before the next layer's parameters are gathered. Only
// prefetches count for the depth, so that reduce-scatter does not hold the
// gather back: w0 starts right after w1's gather, before layer 1 computes.
// A reduce-scatter holds its full-size input until its wait, so at most one
// is under way: g1's is waited for before g0's starts.
// CHECK-LABEL: func.func @backward
// CHECK-NEXT: %[[A1:.*]] = dist.all_gather %arg1 axes ["dp"] dim 0 {origin = "w1"}
// CHECK-NEXT: %[[P0:.*]] = dist.start_all_gather %arg0 axes ["dp"] dim 0 {origin = "w0"}
// CHECK-NEXT: %[[H1:.*]] = tg.matmul %arg2, %[[A1]]
// CHECK-NEXT: %[[PS1:.*]] = dist.start_reduce_scatter %[[H1]] axes ["dp"] dim 0 {origin = "g1"}
// CHECK-NEXT: %[[W0:.*]] = dist.wait %[[P0]]
// CHECK-NEXT: %[[H0:.*]] = tg.matmul %[[H1]], %[[W0]]
// CHECK-NEXT: %[[S1:.*]] = dist.wait %[[PS1]]
// CHECK-NEXT: %[[PS0:.*]] = dist.start_reduce_scatter %[[H0]] axes ["dp"] dim 0 {origin = "g0"}
// CHECK-NEXT: %[[S0:.*]] = dist.wait %[[PS0]]
// CHECK-NEXT: return %[[S1]], %[[S0]]
module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @backward(%w0: tensor<2x4xf32>, %w1: tensor<2x4xf32>, %dy: tensor<4x4xf32>)
      -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    %a1 = dist.all_gather %w1 axes ["dp"] dim 0 {origin = "w1"} : tensor<2x4xf32> -> tensor<4x4xf32>
    %h1 = tg.matmul %dy, %a1 : tensor<4x4xf32>, tensor<4x4xf32>
    %s1 = dist.reduce_scatter %h1 axes ["dp"] dim 0 {origin = "g1"} : tensor<4x4xf32> -> tensor<2x4xf32>
    %a0 = dist.all_gather %w0 axes ["dp"] dim 0 {origin = "w0"} : tensor<2x4xf32> -> tensor<4x4xf32>
    %h0 = tg.matmul %h1, %a0 : tensor<4x4xf32>, tensor<4x4xf32>
    %s0 = dist.reduce_scatter %h0 axes ["dp"] dim 0 {origin = "g0"} : tensor<4x4xf32> -> tensor<2x4xf32>
    return %s1, %s0 : tensor<2x4xf32>, tensor<2x4xf32>
  }
}
