// RUN: spmdc-opt %s --dist-bucket-collectives -split-input-file | FileCheck %s
// RUN: spmdc-opt %s --dist-bucket-collectives=mb=0.0001220703125 -split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: spmdc-opt %s "--dist-bucket-collectives=mb=0.0001220703125 first-mb=0.00006103515625" -split-input-file | FileCheck %s --check-prefix=FIRST
// RUN: spmdc-opt %s --dist-bucket-collectives=mb=0 -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: spmdc-opt %s --dist-bucket-collectives=alone-mb=0.000030517578125 -split-input-file | FileCheck %s --check-prefix=ALONE

// DDP: the gradients' all-reduces, in the order the backward produces them,
// become one all-reduce of their flattened, concatenated buffer (272 f32,
// under the 1 MiB first bucket), after the last gradient; each gradient is
// sliced and reshaped back out. An activation's all-reduce, an all-reduce
// by max, one of the forward and one of another element type stay apart.
// CHECK-LABEL: func.func @all_reduces
// CHECK: %[[GW2:.*]] = tg.exp %arg0
// CHECK: %[[F1:.*]] = tg.reshape %[[GW2]] : tensor<8x32xf32> to tensor<256xf32>
// CHECK: %[[F3:.*]] = tg.reshape %arg2 : tensor<4x2xf32> to tensor<8xf32>
// CHECK: %[[BUF:.*]] = tg.concat %[[F1]], %arg1, %[[F3]] dim 0 : tensor<256xf32>, tensor<8xf32>, tensor<8xf32>
// CHECK: %[[R:.*]] = dist.all_reduce %[[BUF]] axes ["dp"] {origin = "gradient bucket 0", phase = #dist.phase<backward>, tensors = ["fc2.weight", "fc2.bias", "fc1.weight"]} : tensor<272xf32>
// CHECK: %[[S1:.*]] = tg.slice %[[R]] dim 0 start 0 end 256 step 1
// CHECK: %[[A:.*]] = tg.reshape %[[S1]] : tensor<256xf32> to tensor<8x32xf32>
// CHECK: %[[B:.*]] = tg.slice %[[R]] dim 0 start 256 end 264 step 1
// CHECK: %[[S3:.*]] = tg.slice %[[R]] dim 0 start 264 end 272 step 1
// CHECK: %[[C:.*]] = tg.reshape %[[S3]] : tensor<8xf32> to tensor<4x2xf32>
// CHECK: %[[ACT:.*]] = dist.all_reduce %arg1 axes ["dp"] {origin = "activation"
// CHECK: %[[MAX:.*]] = dist.all_reduce %arg1 axes ["dp"] by max {origin = "fc2.bias"
// CHECK: %[[FWD:.*]] = dist.all_reduce %arg1 axes ["dp"] {origin = "fc1.bias", phase = #dist.phase<forward>}
// CHECK: %[[E:.*]] = dist.all_reduce %{{.*}} axes ["dp"] {origin = "fc0.bias", phase = #dist.phase<backward>} : tensor<f64>
// CHECK: return %[[A]], %[[B]], %[[C]], %[[ACT]], %[[MAX]], %[[FWD]], %[[E]]
// OFF-LABEL: func.func @all_reduces
// OFF-NOT: tensors =
module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @all_reduces(%x: tensor<8x32xf32>, %y: tensor<8xf32>, %z: tensor<4x2xf32>)
      -> (tensor<8x32xf32>, tensor<8xf32>, tensor<4x2xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f64>) {
    %gw2 = tg.exp %x : tensor<8x32xf32>
    %a = dist.all_reduce %gw2 axes ["dp"] {origin = "fc2.weight", phase = #dist.phase<backward>} : tensor<8x32xf32>
    %act = dist.all_reduce %y axes ["dp"] {origin = "activation", phase = #dist.phase<backward>} : tensor<8xf32>
    %max = dist.all_reduce %y axes ["dp"] by max {origin = "fc2.bias", phase = #dist.phase<backward>} : tensor<8xf32>
    %b = dist.all_reduce %y axes ["dp"] {origin = "fc2.bias", phase = #dist.phase<backward>} : tensor<8xf32>
    %c = dist.all_reduce %z axes ["dp"] {origin = "fc1.weight", phase = #dist.phase<backward>} : tensor<4x2xf32>
    %fwd = dist.all_reduce %y axes ["dp"] {origin = "fc1.bias", phase = #dist.phase<forward>} : tensor<8xf32>
    %d = tg.convert %y : tensor<8xf32> to tensor<8xf64>
    %s = tg.sum %d dims [0] : tensor<8xf64>
    %e = dist.all_reduce %s axes ["dp"] {origin = "fc0.bias", phase = #dist.phase<backward>} : tensor<f64>
    return %a, %b, %c, %act, %max, %fwd, %e : tensor<8x32xf32>, tensor<8xf32>, tensor<4x2xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f64>
  }
}

// -----

// Bucket boundaries: four gradients of 64 bytes each. With mb=2^-13 (128
// bytes) the first bucket is at most that too: [g0, g1] and [g2, g3].
// With first-mb=2^-14 (64 bytes) g0 fills the first bucket alone (and
// stays its own collective), then [g1, g2], and g3 is left alone.
// SMALL-LABEL: func.func @sizes
// SMALL: dist.all_reduce %{{.*}} {origin = "gradient bucket 0", phase = #dist.phase<backward>, tensors = ["g0", "g1"]} : tensor<32xf32>
// SMALL: dist.all_reduce %{{.*}} {origin = "gradient bucket 1", phase = #dist.phase<backward>, tensors = ["g2", "g3"]} : tensor<32xf32>
// SMALL-NOT: dist.all_reduce
// SMALL: return
// FIRST-LABEL: func.func @sizes
// FIRST: dist.all_reduce %arg0 axes ["dp"] {origin = "g0"
// FIRST: dist.all_reduce %{{.*}} {origin = "gradient bucket 0", phase = #dist.phase<backward>, tensors = ["g1", "g2"]} : tensor<32xf32>
// FIRST: dist.all_reduce %arg3 axes ["dp"] {origin = "g3"
// FIRST-NOT: dist.all_reduce
// FIRST: return
// CHECK-LABEL: func.func @sizes
// CHECK: dist.all_reduce %{{.*}} {origin = "gradient bucket 0", phase = #dist.phase<backward>, tensors = ["g0", "g1", "g2", "g3"]} : tensor<64xf32>
module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @sizes(%g0: tensor<16xf32>, %g1: tensor<16xf32>, %g2: tensor<4x4xf32>, %g3: tensor<16xf32>)
      -> (tensor<16xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>) {
    %0 = dist.all_reduce %g0 axes ["dp"] {origin = "g0", phase = #dist.phase<backward>} : tensor<16xf32>
    %1 = dist.all_reduce %g1 axes ["dp"] {origin = "g1", phase = #dist.phase<backward>} : tensor<16xf32>
    %2 = dist.all_reduce %g2 axes ["dp"] {origin = "g2", phase = #dist.phase<backward>} : tensor<4x4xf32>
    %3 = dist.all_reduce %g3 axes ["dp"] {origin = "g3", phase = #dist.phase<backward>} : tensor<16xf32>
    return %0, %1, %2, %3 : tensor<16xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>
  }
}

// -----

// ZeRO-2: @main takes w and b whole, so their gradients' reduce-scatters
// (over dim 0 and dim 1) become one, of rank 0's chunk of each then rank
// 1's, and their all-gathers after the update one too. v is split (ZeRO-3,
// --dist-fsdp-group's): its reduce-scatter stays, but its all-reduce over
// tp is a gradient's like any other. Buckets are numbered per phase in
// program order.
// CHECK-LABEL: func.func @zero2
// CHECK: %[[GW:.*]] = tg.exp %arg0
// CHECK: %[[GB:.*]] = tg.exp %arg1
// CHECK: %[[W0:.*]] = tg.slice %[[GW]] dim 0 start 0 end 2 step 1 : tensor<4x3xf32>
// CHECK: tg.reshape %[[W0]] : tensor<2x3xf32> to tensor<6xf32>
// CHECK: %[[B0:.*]] = tg.slice %[[GB]] dim 1 start 0 end 1 step 1 : tensor<2x2xf32>
// CHECK: tg.reshape %[[B0]] : tensor<2x1xf32> to tensor<2xf32>
// CHECK: %[[W1:.*]] = tg.slice %[[GW]] dim 0 start 2 end 4 step 1
// CHECK: %[[B1:.*]] = tg.slice %[[GB]] dim 1 start 1 end 2 step 1
// CHECK: %[[RS:.*]] = dist.reduce_scatter %{{.*}} axes ["dp"] dim 0 {origin = "gradient bucket 0", phase = #dist.phase<backward>, tensors = ["w", "b"]} : tensor<16xf32> -> tensor<8xf32>
// CHECK: %[[RW:.*]] = tg.slice %[[RS]] dim 0 start 0 end 6 step 1
// CHECK: tg.reshape %[[RW]] : tensor<6xf32> to tensor<2x3xf32>
// CHECK: %[[RB:.*]] = tg.slice %[[RS]] dim 0 start 6 end 8 step 1
// CHECK: tg.reshape %[[RB]] : tensor<2xf32> to tensor<2x1xf32>
// CHECK: dist.reduce_scatter %{{.*}} axes ["dp"] dim 0 {origin = "v", phase = #dist.phase<backward>}
// CHECK: dist.all_reduce %{{.*}} axes ["tp"] {origin = "gradient bucket 1", phase = #dist.phase<backward>, tensors = ["v", "w"]} : tensor<28xf32>
// CHECK: %[[AG:.*]] = dist.all_gather %{{.*}} axes ["dp"] dim 0 {origin = "parameter bucket 0", phase = #dist.phase<optimizer>, tensors = ["w", "b"]} : tensor<8xf32> -> tensor<16xf32>
// CHECK: tg.slice %[[AG]] dim 0 start 0 end 6 step 1
// CHECK: tg.slice %[[AG]] dim 0 start 8 end 14 step 1
// CHECK: %[[NW:.*]] = tg.concat %{{.*}}, %{{.*}} dim 0 : tensor<2x3xf32>, tensor<2x3xf32>
// CHECK: tg.slice %[[AG]] dim 0 start 6 end 8 step 1
// CHECK: tg.slice %[[AG]] dim 0 start 14 end 16 step 1
// CHECK: %[[NB:.*]] = tg.concat %{{.*}}, %{{.*}} dim 1 : tensor<2x1xf32>, tensor<2x1xf32>
// CHECK: return %[[NW]], %[[NB]]
module attributes {dist.mesh = {axes = ["dp", "tp"], shape = array<i64: 2, 1>}} {
  func.func @main(%w: tensor<4x3xf32> {dist.sharding = #dist.sharding<[[], []]>, tg.name = "w", tg.role = #tg.role<param>},
                  %b: tensor<2x2xf32> {dist.sharding = #dist.sharding<[[], []]>, tg.name = "b", tg.role = #tg.role<param>},
                  %v: tensor<2x4xf32> {dist.sharding = #dist.sharding<[["dp"], []]>, tg.name = "v", tg.role = #tg.role<param>})
      -> (tensor<4x3xf32> {dist.sharding = #dist.sharding<[[], []]>, tg.name = "w", tg.role = #tg.role<param>}) {
    return %w : tensor<4x3xf32>
  }
  func.func @zero2(%w: tensor<4x3xf32>, %b: tensor<2x2xf32>, %v: tensor<4x4xf32>)
      -> (tensor<4x3xf32>, tensor<2x2xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<4x3xf32>) {
    %gw = tg.exp %w : tensor<4x3xf32>
    %rw = dist.reduce_scatter %gw axes ["dp"] dim 0 {origin = "w", phase = #dist.phase<backward>} : tensor<4x3xf32> -> tensor<2x3xf32>
    %gb = tg.exp %b : tensor<2x2xf32>
    %rb = dist.reduce_scatter %gb axes ["dp"] dim 1 {origin = "b", phase = #dist.phase<backward>} : tensor<2x2xf32> -> tensor<2x1xf32>
    %rv = dist.reduce_scatter %v axes ["dp"] dim 0 {origin = "v", phase = #dist.phase<backward>} : tensor<4x4xf32> -> tensor<2x4xf32>
    %av = dist.all_reduce %v axes ["tp"] {origin = "v", phase = #dist.phase<backward>} : tensor<4x4xf32>
    %aw = dist.all_reduce %w axes ["tp"] {origin = "w", phase = #dist.phase<backward>} : tensor<4x3xf32>
    %uw = tg.neg %rw : tensor<2x3xf32>
    %ub = tg.neg %rb : tensor<2x1xf32>
    %nw = dist.all_gather %uw axes ["dp"] dim 0 {origin = "w", phase = #dist.phase<optimizer>} : tensor<2x3xf32> -> tensor<4x3xf32>
    %nb = dist.all_gather %ub axes ["dp"] dim 1 {origin = "b", phase = #dist.phase<optimizer>} : tensor<2x1xf32> -> tensor<2x2xf32>
    return %nw, %nb, %rv, %av, %aw : tensor<4x3xf32>, tensor<2x2xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<4x3xf32>
  }
}

// -----

// A gradient used before the bucket's last gradient exists (here by the
// next gradient's computation) stays alone; the rest still share one.
// CHECK-LABEL: func.func @early_use
// CHECK: %[[A:.*]] = dist.all_reduce %arg0 axes ["dp"] {origin = "a"
// CHECK: tg.exp %[[A]]
// CHECK: dist.all_reduce %{{.*}} {origin = "gradient bucket 0", phase = #dist.phase<backward>, tensors = ["b", "c"]} : tensor<8xf32>
module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @early_use(%ga: tensor<4xf32>, %gb: tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %a = dist.all_reduce %ga axes ["dp"] {origin = "a", phase = #dist.phase<backward>} : tensor<4xf32>
    %b = dist.all_reduce %gb axes ["dp"] {origin = "b", phase = #dist.phase<backward>} : tensor<4xf32>
    %gc = tg.exp %a : tensor<4xf32>
    %c = dist.all_reduce %gc axes ["dp"] {origin = "c", phase = #dist.phase<backward>} : tensor<4xf32>
    return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// With alone-mb at 32 bytes, the 48-byte gradients a and c keep their own
// reduce-scatters and all-gathers, reading the gradient and writing the
// shard as they are; b and d (8 bytes) still share a bucket (placed, as
// every bucket, after its inputs exist and not before its first member). The
// all-reduces are DDP's, packed without copies: all three share a bucket
// whatever their size. At the default (1 MiB) all four share buckets.
// ALONE-LABEL: func.func @alone
// ALONE: dist.reduce_scatter %arg0 axes ["dp"] dim 0 {origin = "a", phase = #dist.phase<backward>} : tensor<4x3xf32> -> tensor<2x3xf32>
// ALONE: dist.reduce_scatter %{{.*}} axes ["dp"] dim 0 {origin = "gradient bucket 0", phase = #dist.phase<backward>, tensors = ["b", "d"]} : tensor<4xf32> -> tensor<2xf32>
// ALONE: dist.reduce_scatter %arg2 axes ["dp"] dim 0 {origin = "c", phase = #dist.phase<backward>} : tensor<4x3xf32> -> tensor<2x3xf32>
// ALONE: dist.all_reduce %{{.*}} axes ["tp"] {origin = "gradient bucket 1", phase = #dist.phase<backward>, tensors = ["a", "b", "c"]} : tensor<26xf32>
// ALONE: dist.all_gather %{{.*}} axes ["dp"] dim 0 {origin = "a", phase = #dist.phase<optimizer>} : tensor<2x3xf32> -> tensor<4x3xf32>
// ALONE: dist.all_gather %{{.*}} axes ["dp"] dim 0 {origin = "parameter bucket 0", phase = #dist.phase<optimizer>, tensors = ["b", "d"]} : tensor<2xf32> -> tensor<4xf32>
// ALONE: dist.all_gather %{{.*}} axes ["dp"] dim 0 {origin = "c", phase = #dist.phase<optimizer>} : tensor<2x3xf32> -> tensor<4x3xf32>
// CHECK-LABEL: func.func @alone
// CHECK: dist.reduce_scatter %{{.*}} {origin = "gradient bucket 0", phase = #dist.phase<backward>, tensors = ["a", "b", "c", "d"]} : tensor<28xf32> -> tensor<14xf32>
// CHECK: dist.all_gather %{{.*}} {origin = "parameter bucket 0", phase = #dist.phase<optimizer>, tensors = ["a", "b", "c", "d"]} : tensor<14xf32> -> tensor<28xf32>
module attributes {dist.mesh = {axes = ["dp", "tp"], shape = array<i64: 2, 1>}} {
  func.func @main(%a: tensor<4x3xf32> {dist.sharding = #dist.sharding<[[], []]>, tg.name = "a", tg.role = #tg.role<param>},
                  %b: tensor<2xf32> {dist.sharding = #dist.sharding<[[]]>, tg.name = "b", tg.role = #tg.role<param>},
                  %c: tensor<4x3xf32> {dist.sharding = #dist.sharding<[[], []]>, tg.name = "c", tg.role = #tg.role<param>},
                  %d: tensor<2xf32> {dist.sharding = #dist.sharding<[[]]>, tg.name = "d", tg.role = #tg.role<param>})
      -> (tensor<4x3xf32> {dist.sharding = #dist.sharding<[[], []]>, tg.name = "a", tg.role = #tg.role<param>}) {
    return %a : tensor<4x3xf32>
  }
  func.func @alone(%ga: tensor<4x3xf32>, %gb: tensor<2xf32>, %gc: tensor<4x3xf32>, %gd: tensor<2xf32>)
      -> (tensor<4x3xf32>, tensor<2xf32>, tensor<4x3xf32>, tensor<2xf32>, tensor<4x3xf32>, tensor<2xf32>, tensor<4x3xf32>) {
    %ra = dist.reduce_scatter %ga axes ["dp"] dim 0 {origin = "a", phase = #dist.phase<backward>} : tensor<4x3xf32> -> tensor<2x3xf32>
    %rb = dist.reduce_scatter %gb axes ["dp"] dim 0 {origin = "b", phase = #dist.phase<backward>} : tensor<2xf32> -> tensor<1xf32>
    %rc = dist.reduce_scatter %gc axes ["dp"] dim 0 {origin = "c", phase = #dist.phase<backward>} : tensor<4x3xf32> -> tensor<2x3xf32>
    %rd = dist.reduce_scatter %gd axes ["dp"] dim 0 {origin = "d", phase = #dist.phase<backward>} : tensor<2xf32> -> tensor<1xf32>
    %ta = dist.all_reduce %ga axes ["tp"] {origin = "a", phase = #dist.phase<backward>} : tensor<4x3xf32>
    %tb = dist.all_reduce %gb axes ["tp"] {origin = "b", phase = #dist.phase<backward>} : tensor<2xf32>
    %tc = dist.all_reduce %gc axes ["tp"] {origin = "c", phase = #dist.phase<backward>} : tensor<4x3xf32>
    %ua = tg.neg %ra : tensor<2x3xf32>
    %ub = tg.neg %rb : tensor<1xf32>
    %uc = tg.neg %rc : tensor<2x3xf32>
    %ud = tg.neg %rd : tensor<1xf32>
    %na = dist.all_gather %ua axes ["dp"] dim 0 {origin = "a", phase = #dist.phase<optimizer>} : tensor<2x3xf32> -> tensor<4x3xf32>
    %nb = dist.all_gather %ub axes ["dp"] dim 0 {origin = "b", phase = #dist.phase<optimizer>} : tensor<1xf32> -> tensor<2xf32>
    %nc = dist.all_gather %uc axes ["dp"] dim 0 {origin = "c", phase = #dist.phase<optimizer>} : tensor<2x3xf32> -> tensor<4x3xf32>
    %nd = dist.all_gather %ud axes ["dp"] dim 0 {origin = "d", phase = #dist.phase<optimizer>} : tensor<1xf32> -> tensor<2xf32>
    return %na, %nb, %nc, %nd, %ta, %tb, %tc : tensor<4x3xf32>, tensor<2xf32>, tensor<4x3xf32>, tensor<2xf32>, tensor<4x3xf32>, tensor<2xf32>, tensor<4x3xf32>
  }
}
