// RUN: split-file %s %t
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.1" --dist-apply-spec=spec=%t/megatron.json --dist-propagate | FileCheck %s --check-prefix=TP
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.1" --dist-apply-spec=spec=%t/ddp.json --dist-propagate | FileCheck %s --check-prefix=DDP
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.1" --tg-partition --dist-apply-spec=spec=%t/ddp.json --dist-propagate | FileCheck %s --check-prefix=CALLS
// RUN: not spmdc-opt %t/step.mlir --dist-propagate 2>&1 | FileCheck %s --check-prefix=NOSPEC
// RUN: not spmdc-opt %t/step.mlir --tg-autodiff --dist-apply-spec=spec=%t/ddp.json --dist-propagate --dist-partition --dist-propagate 2>&1 | FileCheck %s --check-prefix=TWICE

// Propagated IR keeps logical shapes, so it still means the single-device
// step: the interpreter gives the same losses on it as on the step itself.
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.1" > %t/logical.mlir
// RUN: spmdc-opt %t/logical.mlir --dist-apply-spec=spec=%t/megatron.json --dist-propagate > %t/propagated.mlir
// RUN: spmd-run --interpret --steps 2 %t/logical.mlir > %t/logical.txt
// RUN: spmd-run --interpret --steps 2 %t/propagated.mlir > %t/propagated.txt
// RUN: diff %t/logical.txt %t/propagated.txt

// Megatron: w1 split on its output features makes h split on its last dim,
// forward through tanh; w2 split on its input features meets h on the
// contracted dim, so y is planned whole (a partial sum, to the partitioner).
// TP: %[[W1T:.*]] = tg.transpose %arg1 perm [1, 0] {dist.sharding = #dist.sharding<{{\[\[\], \["tp"\]\]}} from "tg.transpose, from its operands">}
// TP: %[[H:.*]] = tg.matmul %arg0, %[[W1T]] {dist.sharding = #dist.sharding<{{\[\[\], \["tp"\]\]}} from "tg.matmul, from its operands">}
// TP: %[[A:.*]] = tg.tanh %[[H]] {dist.sharding = #dist.sharding<{{\[\[\], \["tp"\]\]}} from "tg.tanh, from its operands">}
// TP: tg.transpose %arg2 perm [1, 0] {dist.sharding = #dist.sharding<{{\[\["tp"\], \[\]\]}} from "tg.transpose, from its operands">}
// TP: tg.matmul %[[A]], %{{.*}} {dist.sharding = #dist.sharding<{{\[\[\], \[\]\]}} from "tg.matmul, from its operands">}
// TP: tg.full 1.000000e+00 {dist.sharding = #dist.sharding<[] from "tg.full, which makes it whole">}

// Data parallel: the loss's seed gradient, a broadcast of a constant, is
// split on the batch by the backward sweep, from the product it feeds.
// DDP: tg.broadcast %{{.*}} {dist.sharding = #dist.sharding<{{\[\["dp"\], \[\]\]}} from "tg.mul, from its result">}

// A partitioned step: @forward and @backward take their arguments'
// shardings from the calls, @backward's saved activations as @forward
// returns them.
// CALLS-LABEL: func.func private @forward
// CALLS-SAME: tensor<8x4xf32> {dist.sharding = #dist.sharding<{{\[\["dp"\], \[\]\]}} from "the call in @main">}
// CALLS-SAME: -> (tensor<f32> {dist.sharding = #dist.sharding<[] from "the loss, replicated">}
// CALLS-SAME: tensor<8x6xf32> {dist.sharding = #dist.sharding<{{\[\["dp"\], \[\]\]}} from "tg.tanh, from its operands">}
// CALLS-LABEL: func.func private @backward
// CALLS-SAME: tensor<8x6xf32> {dist.sharding = #dist.sharding<{{\[\["dp"\], \[\]\]}} from "the call in @main">}

// NOSPEC: error: --dist-propagate needs the module's 'dist.planned_mesh': run --dist-apply-spec first
// TWICE: error: the module is already partitioned

//--- step.mlir
func.func @main(%x: tensor<8x4xf32> {tg.name = "x", tg.role = #tg.role<data>},
                %w1: tensor<6x4xf32> {tg.name = "w1", tg.role = #tg.role<param>},
                %w2: tensor<2x6xf32> {tg.name = "w2", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %w1t = tg.transpose %w1 perm [1, 0] : tensor<6x4xf32>
  %h = tg.matmul %x, %w1t : tensor<8x4xf32>, tensor<4x6xf32>
  %a = tg.tanh %h : tensor<8x6xf32>
  %w2t = tg.transpose %w2 perm [1, 0] : tensor<2x6xf32>
  %y = tg.matmul %a, %w2t : tensor<8x6xf32>, tensor<6x2xf32>
  %s = tg.mul %y, %y : tensor<8x2xf32>, tensor<8x2xf32>
  %l = tg.sum %s dims [0, 1] : tensor<8x2xf32>
  return %l : tensor<f32>
}
//--- ddp.json
{"version": 1, "mesh": {"axes": ["dp"], "shape": [2]}, "presets": {"dp": "ddp"}}
//--- megatron.json
{"version": 1, "mesh": {"axes": ["tp"], "shape": [2]}, "presets": {"tp": "megatron"}}
