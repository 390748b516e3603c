// RUN: spmdc-opt %s --dist-fsdp-group -split-input-file | FileCheck %s
// RUN: spmdc-opt %s --dist-fsdp-group=by=tensor -split-input-file | FileCheck %s --check-prefix=TENSOR
// RUN: spmdc-opt %s --dist-fsdp-group=by=0.0001220703125 -split-input-file | FileCheck %s --check-prefix=BUCKET
// RUN: spmdc-opt %s --dist-fsdp-group=alone-mb=0.00006103515625 -split-input-file | FileCheck %s --check-prefix=ALONE
// RUN: not spmdc-opt %s --dist-fsdp-group=by=12x 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not spmdc-opt %s --dist-fsdp-group=by=0 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: takes layer, tensor or a bucket size in MiB (a positive number such as 25 or 0.5), got '{{12x|0}}'

// A block's two weights (h.0) move in one all-gather of a flat buffer of
// both shards: rank 0's 12 + 6 elements, then rank 1's. Each weight is its
// two rank chunks sliced out and concatenated. The model's own tensor
// (wte, no block) and a collective of another phase stay apart, and so do
// activations.
// CHECK-LABEL: func.func @gathers
// CHECK: %[[F1:.*]] = tg.reshape %arg0 : tensor<3x4xf32> to tensor<12xf32>
// CHECK: %[[F2:.*]] = tg.reshape %arg1 : tensor<1x6xf32> to tensor<6xf32>
// CHECK: %[[BUF:.*]] = tg.concat %[[F1]], %[[F2]] dim 0 : tensor<12xf32>, tensor<6xf32>
// CHECK: %[[G:.*]] = dist.all_gather %[[BUF]] axes ["dp"] dim 0 {origin = "h.0", phase = #dist.phase<forward>, tensors = ["h.0.w1", "h.0.w2"]} : tensor<18xf32> -> tensor<36xf32>
// CHECK: tg.slice %[[G]] dim 0 start 0 end 12 step 1
// CHECK: tg.slice %[[G]] dim 0 start 18 end 30 step 1
// CHECK: %[[W1:.*]] = tg.concat %{{.*}}, %{{.*}} dim 0 : tensor<3x4xf32>, tensor<3x4xf32>
// CHECK: tg.slice %[[G]] dim 0 start 12 end 18 step 1
// CHECK: tg.slice %[[G]] dim 0 start 30 end 36 step 1
// CHECK: %[[W2:.*]] = tg.concat %{{.*}}, %{{.*}} dim 0 : tensor<1x6xf32>, tensor<1x6xf32>
// CHECK: dist.all_gather %arg2 axes ["dp"] dim 0 {origin = "wte.weight"
// CHECK: dist.all_gather %arg0 axes ["dp"] dim 0 {origin = "h.0.w1", phase = #dist.phase<backward>}
// CHECK: dist.all_gather %arg3 axes ["dp"] dim 0 {origin = "activation"
// CHECK: dist.all_gather %arg4 axes ["dp"] dim 0 {origin = "activation"
// CHECK: return %[[W1]], %[[W2]]
// TENSOR-LABEL: func.func @gathers
// TENSOR-NOT: tensors =
module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @gathers(%w1: tensor<3x4xf32>, %w2: tensor<1x6xf32>, %wte: tensor<5x2xf32>,
                     %x: tensor<2x2xf32>, %y: tensor<2x2xf32>)
      -> (tensor<6x4xf32>, tensor<2x6xf32>, tensor<10x2xf32>, tensor<6x4xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
    %a = dist.all_gather %w1 axes ["dp"] dim 0 {origin = "h.0.w1", phase = #dist.phase<forward>} : tensor<3x4xf32> -> tensor<6x4xf32>
    %b = dist.all_gather %w2 axes ["dp"] dim 0 {origin = "h.0.w2", phase = #dist.phase<forward>} : tensor<1x6xf32> -> tensor<2x6xf32>
    %c = dist.all_gather %wte axes ["dp"] dim 0 {origin = "wte.weight", phase = #dist.phase<forward>} : tensor<5x2xf32> -> tensor<10x2xf32>
    %d = dist.all_gather %w1 axes ["dp"] dim 0 {origin = "h.0.w1", phase = #dist.phase<backward>} : tensor<3x4xf32> -> tensor<6x4xf32>
    %e = dist.all_gather %x axes ["dp"] dim 0 {origin = "activation", phase = #dist.phase<forward>} : tensor<2x2xf32> -> tensor<4x2xf32>
    %f = dist.all_gather %y axes ["dp"] dim 0 {origin = "activation", phase = #dist.phase<forward>} : tensor<2x2xf32> -> tensor<4x2xf32>
    return %a, %b, %c, %d, %e, %f : tensor<6x4xf32>, tensor<2x6xf32>, tensor<10x2xf32>, tensor<6x4xf32>, tensor<4x2xf32>, tensor<4x2xf32>
  }

  // The gradients' reduce-scatters: one, after the last gradient, of rank
  // 0's chunks of both then rank 1's; each rank's shards sliced back out.
  // CHECK-LABEL: func.func @scatters
  // CHECK: %[[G2:.*]] = tg.exp %arg1
  // CHECK: tg.slice %arg0 dim 0 start 0 end 3 step 1
  // CHECK: tg.slice %[[G2]] dim 0 start 0 end 1 step 1
  // CHECK: tg.slice %arg0 dim 0 start 3 end 6 step 1
  // CHECK: tg.slice %[[G2]] dim 0 start 1 end 2 step 1
  // CHECK: %[[RS:.*]] = dist.reduce_scatter %{{.*}} axes ["dp"] dim 0 {origin = "h.3", phase = #dist.phase<backward>, tensors = ["h.3.w1", "h.3.w2"]} : tensor<36xf32> -> tensor<18xf32>
  // CHECK: tg.slice %[[RS]] dim 0 start 0 end 12 step 1
  // CHECK: tg.slice %[[RS]] dim 0 start 12 end 18 step 1
  func.func @scatters(%g1: tensor<6x4xf32>, %x: tensor<2x6xf32>) -> (tensor<3x4xf32>, tensor<1x6xf32>) {
    %a = dist.reduce_scatter %g1 axes ["dp"] dim 0 {origin = "h.3.w1", phase = #dist.phase<backward>} : tensor<6x4xf32> -> tensor<3x4xf32>
    %g2 = tg.exp %x : tensor<2x6xf32>
    %b = dist.reduce_scatter %g2 axes ["dp"] dim 0 {origin = "h.3.w2", phase = #dist.phase<backward>} : tensor<2x6xf32> -> tensor<1x6xf32>
    return %a, %b : tensor<3x4xf32>, tensor<1x6xf32>
  }
}

// -----

// Buckets of 128 bytes (by=0.0001220703125, 2^-13 MiB) of full tensors, in
// the order the forward gathers them, whatever their blocks: h.0.a, h.0.b
// and h.1.c reach 128 bytes together (64 + 32 + 32); wte (256 bytes) is
// over the size, a bucket of its own; h.1.e (16 bytes) is left alone at
// the end. The backward's gathers and the gradients' reduce-scatters, in
// another function, keep those members.
// BUCKET-LABEL: func.func @forward_and_backward
// BUCKET: dist.all_gather %{{.*}} axes ["dp"] dim 0 {origin = "bucket 0", phase = #dist.phase<forward>, tensors = ["h.0.a", "h.0.b", "h.1.c"]} : tensor<16xf32> -> tensor<32xf32>
// BUCKET: dist.all_gather %arg3 axes ["dp"] dim 0 {origin = "wte.weight", phase = #dist.phase<forward>} : tensor<8x4xf32> -> tensor<16x4xf32>
// BUCKET: dist.all_gather %arg4 axes ["dp"] dim 0 {origin = "h.1.e", phase = #dist.phase<forward>} : tensor<1x2xf32> -> tensor<2x2xf32>
// BUCKET: dist.all_gather %{{.*}} axes ["dp"] dim 0 {origin = "bucket 0", phase = #dist.phase<backward>, tensors = ["h.0.a", "h.0.b"]} : tensor<12xf32> -> tensor<24xf32>
// BUCKET: dist.all_gather %arg3 axes ["dp"] dim 0 {origin = "wte.weight", phase = #dist.phase<backward>}
// BUCKET-LABEL: func.func @gradients
// BUCKET: dist.reduce_scatter %{{.*}} axes ["dp"] dim 0 {origin = "bucket 0", phase = #dist.phase<backward>, tensors = ["h.1.c", "h.0.b", "h.0.a"]} : tensor<32xf32> -> tensor<16xf32>
// BUCKET: dist.reduce_scatter %arg0 axes ["dp"] dim 0 {origin = "h.1.e", phase = #dist.phase<backward>}
// BUCKET: dist.reduce_scatter %arg1 axes ["dp"] dim 0 {origin = "wte.weight", phase = #dist.phase<backward>}
// BUCKET-NOT: dist.reduce_scatter
// Grouped by layer instead: h.0 (a, b) apart from h.1 (c, e).
// CHECK-LABEL: func.func @forward_and_backward
// CHECK: dist.all_gather %{{.*}} {origin = "h.0", phase = #dist.phase<forward>, tensors = ["h.0.a", "h.0.b"]}
// CHECK: dist.all_gather %{{.*}} {origin = "h.1", phase = #dist.phase<forward>, tensors = ["h.1.c", "h.1.e"]}
module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @forward_and_backward(%a: tensor<2x4xf32>, %b: tensor<1x4xf32>, %c: tensor<1x4xf32>,
                                  %wte: tensor<8x4xf32>, %e: tensor<1x2xf32>)
      -> (tensor<4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<16x4xf32>, tensor<2x2xf32>,
          tensor<4x4xf32>, tensor<2x4xf32>, tensor<16x4xf32>) {
    %0 = dist.all_gather %a axes ["dp"] dim 0 {origin = "h.0.a", phase = #dist.phase<forward>} : tensor<2x4xf32> -> tensor<4x4xf32>
    %1 = dist.all_gather %b axes ["dp"] dim 0 {origin = "h.0.b", phase = #dist.phase<forward>} : tensor<1x4xf32> -> tensor<2x4xf32>
    %2 = dist.all_gather %c axes ["dp"] dim 0 {origin = "h.1.c", phase = #dist.phase<forward>} : tensor<1x4xf32> -> tensor<2x4xf32>
    %3 = dist.all_gather %wte axes ["dp"] dim 0 {origin = "wte.weight", phase = #dist.phase<forward>} : tensor<8x4xf32> -> tensor<16x4xf32>
    %4 = dist.all_gather %e axes ["dp"] dim 0 {origin = "h.1.e", phase = #dist.phase<forward>} : tensor<1x2xf32> -> tensor<2x2xf32>
    %5 = dist.all_gather %a axes ["dp"] dim 0 {origin = "h.0.a", phase = #dist.phase<backward>} : tensor<2x4xf32> -> tensor<4x4xf32>
    %6 = dist.all_gather %b axes ["dp"] dim 0 {origin = "h.0.b", phase = #dist.phase<backward>} : tensor<1x4xf32> -> tensor<2x4xf32>
    %7 = dist.all_gather %wte axes ["dp"] dim 0 {origin = "wte.weight", phase = #dist.phase<backward>} : tensor<8x4xf32> -> tensor<16x4xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7
        : tensor<4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<16x4xf32>, tensor<2x2xf32>,
          tensor<4x4xf32>, tensor<2x4xf32>, tensor<16x4xf32>
  }

  func.func @gradients(%ge: tensor<2x2xf32>, %gwte: tensor<16x4xf32>, %gc: tensor<2x4xf32>,
                       %gb: tensor<2x4xf32>, %ga: tensor<4x4xf32>)
      -> (tensor<1x2xf32>, tensor<8x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<2x4xf32>) {
    %0 = dist.reduce_scatter %ge axes ["dp"] dim 0 {origin = "h.1.e", phase = #dist.phase<backward>} : tensor<2x2xf32> -> tensor<1x2xf32>
    %1 = dist.reduce_scatter %gwte axes ["dp"] dim 0 {origin = "wte.weight", phase = #dist.phase<backward>} : tensor<16x4xf32> -> tensor<8x4xf32>
    %2 = dist.reduce_scatter %gc axes ["dp"] dim 0 {origin = "h.1.c", phase = #dist.phase<backward>} : tensor<2x4xf32> -> tensor<1x4xf32>
    %3 = dist.reduce_scatter %gb axes ["dp"] dim 0 {origin = "h.0.b", phase = #dist.phase<backward>} : tensor<2x4xf32> -> tensor<1x4xf32>
    %4 = dist.reduce_scatter %ga axes ["dp"] dim 0 {origin = "h.0.a", phase = #dist.phase<backward>} : tensor<4x4xf32> -> tensor<2x4xf32>
    return %0, %1, %2, %3, %4 : tensor<1x2xf32>, tensor<8x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<2x4xf32>
  }
}

// -----

// With alone-mb at 64 bytes, h.1.a (6 x 4 f32, 96 bytes in full) keeps its
// own all-gather and reduce-scatter, the block's shard and whole as they
// are; h.1.b and h.1.c (48 bytes) still share the block's. At the default
// (1 MiB) all three share them.
// ALONE-LABEL: func.func @alone
// ALONE-DAG: dist.all_gather %arg0 axes ["dp"] dim 0 {origin = "h.1.a", phase = #dist.phase<forward>} : tensor<3x4xf32> -> tensor<6x4xf32>
// ALONE-DAG: dist.all_gather %{{.*}} axes ["dp"] dim 0 {origin = "h.1", phase = #dist.phase<forward>, tensors = ["h.1.b", "h.1.c"]} : tensor<12xf32> -> tensor<24xf32>
// ALONE-DAG: dist.reduce_scatter %arg3 axes ["dp"] dim 0 {origin = "h.1.a", phase = #dist.phase<backward>} : tensor<6x4xf32> -> tensor<3x4xf32>
// ALONE-DAG: dist.reduce_scatter %{{.*}} axes ["dp"] dim 0 {origin = "h.1", phase = #dist.phase<backward>, tensors = ["h.1.b", "h.1.c"]} : tensor<24xf32> -> tensor<12xf32>
// CHECK-LABEL: func.func @alone
// BUCKET-LABEL: func.func @alone
// CHECK-DAG: dist.all_gather %{{.*}} {origin = "h.1", phase = #dist.phase<forward>, tensors = ["h.1.a", "h.1.b", "h.1.c"]} : tensor<24xf32> -> tensor<48xf32>
// CHECK-DAG: dist.reduce_scatter %{{.*}} {origin = "h.1", phase = #dist.phase<backward>, tensors = ["h.1.a", "h.1.b", "h.1.c"]} : tensor<48xf32> -> tensor<24xf32>
module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @alone(%a: tensor<3x4xf32>, %b: tensor<1x6xf32>, %c: tensor<1x6xf32>,
                   %ga: tensor<6x4xf32>, %gb: tensor<2x6xf32>, %gc: tensor<2x6xf32>)
      -> (tensor<6x4xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<3x4xf32>, tensor<1x6xf32>, tensor<1x6xf32>) {
    %fa = dist.all_gather %a axes ["dp"] dim 0 {origin = "h.1.a", phase = #dist.phase<forward>} : tensor<3x4xf32> -> tensor<6x4xf32>
    %fb = dist.all_gather %b axes ["dp"] dim 0 {origin = "h.1.b", phase = #dist.phase<forward>} : tensor<1x6xf32> -> tensor<2x6xf32>
    %fc = dist.all_gather %c axes ["dp"] dim 0 {origin = "h.1.c", phase = #dist.phase<forward>} : tensor<1x6xf32> -> tensor<2x6xf32>
    %ra = dist.reduce_scatter %ga axes ["dp"] dim 0 {origin = "h.1.a", phase = #dist.phase<backward>} : tensor<6x4xf32> -> tensor<3x4xf32>
    %rb = dist.reduce_scatter %gb axes ["dp"] dim 0 {origin = "h.1.b", phase = #dist.phase<backward>} : tensor<2x6xf32> -> tensor<1x6xf32>
    %rc = dist.reduce_scatter %gc axes ["dp"] dim 0 {origin = "h.1.c", phase = #dist.phase<backward>} : tensor<2x6xf32> -> tensor<1x6xf32>
    return %fa, %fb, %fc, %ra, %rb, %rc : tensor<6x4xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<3x4xf32>, tensor<1x6xf32>, tensor<1x6xf32>
  }
}
