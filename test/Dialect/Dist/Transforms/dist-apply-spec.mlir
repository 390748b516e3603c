// RUN: split-file %s %t
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.1" --dist-apply-spec=spec=%t/ddp.json | FileCheck %s --check-prefix=DDP
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer="optimizer=adamw" --dist-apply-spec=spec=%t/sequence.json | FileCheck %s --check-prefix=SEQ
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --dist-apply-spec=spec=%t/uneven.json | FileCheck %s --check-prefix=UNEVEN
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer --dist-apply-spec=spec=%t/zero3-8.json | FileCheck %s --check-prefix=SMALL
// RUN: not spmdc-opt %t/step.mlir --tg-autodiff --dist-apply-spec=spec=%t/unknown.json 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not spmdc-opt %t/step.mlir --tg-autodiff --dist-apply-spec=spec=%t/partial.json 2>&1 | FileCheck %s --check-prefix=PARTIAL
// RUN: not spmdc-opt %t/step.mlir --tg-autodiff --dist-apply-spec 2>&1 | FileCheck %s --check-prefix=NOSPEC
// RUN: not spmdc-opt %t/step.mlir --tg-autodiff --dist-apply-spec=spec=%t/ddp.json --dist-apply-spec=spec=%t/ddp.json 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer --dist-apply-spec=spec=%t/lr-glob.json | FileCheck %s --check-prefix=LRGLOB
// RUN: not spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer --dist-apply-spec=spec=%t/lr-exact.json 2>&1 | FileCheck %s --check-prefix=LREXACT

// The spec's placements on @main, each with the entry that made it; the
// results @main must return in a given sharding; nothing else yet.
// DDP: module attributes {dist.planned_mesh = {axes = ["dp"], shape = array<i64: 2>}}
// DDP-LABEL: func.func @main
// DDP-SAME: tensor<8x4xf32> {dist.sharding = #dist.sharding<{{\[\["dp"\], \[\]\]}} from "spec /batch_dims">, tg.name = "x", tg.role = #tg.role<data>}
// DDP-SAME: tensor<6x4xf32> {dist.sharding = #dist.sharding<{{\[\[\], \[\]\]}} from "no spec entry: replicated">, tg.name = "w1", tg.role = #tg.role<param>}
// DDP-SAME: -> (tensor<f32> {dist.sharding = #dist.sharding<[] from "the loss, replicated">, tg.name = "loss", tg.role = #tg.role<loss>}
// DDP-SAME: tensor<6x4xf32> {dist.sharding = #dist.sharding<{{\[\[\], \[\]\]}} from "as argument 'w1' went in">, tg.name = "w1", tg.role = #tg.role<param>}
// DDP-NEXT: tg.transpose
// DDP-NOT: dist.
// DDP: return

// Presets tensor-parallel first (their axes major), an explicit entry
// winning on its axis, optimizer state following its parameter's entry;
// sequence parallelism's axis is where parameters lead.
// SEQ: module attributes {dist.parameters_lead = ["tp"], dist.planned_mesh = {axes = ["dp", "tp"], shape = array<i64: 2, 2>}}
// SEQ-LABEL: func.func @main
// SEQ-SAME: tensor<6x4xf32> {dist.sharding = #dist.sharding<{{\[\["tp"\], \["dp"\]\]}} from "spec /tensors/w1/dp">, tg.name = "w1", tg.role = #tg.role<param>}
// SEQ-SAME: tensor<2x6xf32> {dist.sharding = #dist.sharding<{{\[\[\], \["tp"\]\]}} from "spec /presets/tp">, tg.name = "w2", tg.role = #tg.role<param>}
// SEQ-SAME: tensor<6x4xf32> {dist.sharding = #dist.sharding<{{\[\["tp"\], \["dp"\]\]}} from "spec /tensors/w1/dp">, tg.name = "w1.exp_avg", tg.role = #tg.role<state>}
// SEQ-SAME: tensor<2x6xf32> {dist.sharding = #dist.sharding<{{\[\["dp"\], \["tp"\]\]}} from "spec /presets/dp">, tg.name = "w2.exp_avg", tg.role = #tg.role<state>}

// A batch of 8 splits over 3 ranks (in padded chunks, see dist-partition).
// UNEVEN: tensor<8x4xf32> {dist.sharding = #dist.sharding<{{\[\["dp"\], \[\]\]}} from "spec /batch_dims">, tg.name = "x"
// ZeRO-3 on 8 ranks splits dim 0 where it has 8 positions at least, else
// the first dim that does, else nothing: w2 [2, 6] and its state stay
// whole, without an error; the batch of 8 splits.
// SMALL: tensor<8x4xf32> {dist.sharding = #dist.sharding<{{\[\["dp"\], \[\]\]}} from "spec /batch_dims">, tg.name = "x"
// SMALL-SAME: tensor<2x6xf32> {dist.sharding = #dist.sharding<{{\[\[\], \[\]\]}} from "no spec entry: replicated">, tg.name = "w2"
// UNKNOWN: unknown.json{{.*}}: error: the graph has no tensor 'w3'
// PARTIAL: partial.json{{.*}}: error: 'w1' is an input: it cannot be a partial sum ("P" is for results)
// NOSPEC: error: --dist-apply-spec needs a shard spec (spec=FILE)
// TWICE: error: the module is already sharded
// The learning rate is replicated on every axis, whatever preset or glob
// would place a tensor of its name; an exact entry can only replicate it.
// LRGLOB: tensor<f64> {dist.sharding = #dist.sharding<[] from "no spec entry: replicated">, tg.default = 1.000000e-03 : f64, tg.name = "lr", tg.role = #tg.role<hyper>}
// LREXACT: lr-exact.json{{.*}}: error: 'lr' is a hyperparameter of the step, replicated on every mesh axis: the spec cannot place it

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
//--- sequence.json
{"version": 1, "mesh": {"axes": ["dp", "tp"], "shape": [2, 2]},
 "presets": {"dp": "zero1", "tp": "sequence"},
 "tensors": {"w1": {"dp": "S(1)"}}}
//--- uneven.json
{"version": 1, "mesh": {"axes": ["dp"], "shape": [3]}, "presets": {"dp": "ddp"}}
//--- zero3-8.json
{"version": 1, "mesh": {"axes": ["dp"], "shape": [8]}, "presets": {"dp": "zero3"}}
//--- unknown.json
{"version": 1, "mesh": {"axes": ["dp"], "shape": [2]}, "tensors": {"w3": {"dp": "S(0)"}}}
//--- lr-glob.json
{"version": 1, "mesh": {"axes": ["dp"], "shape": [2]}, "presets": {"dp": "zero3"},
 "tensors": {"l*": {"dp": "P"}}}
//--- lr-exact.json
{"version": 1, "mesh": {"axes": ["dp", "tp"], "shape": [2, 1]}, "tensors": {"lr": {"dp": "R", "tp": "S(0)"}}}
//--- partial.json
{"version": 1, "mesh": {"axes": ["dp"], "shape": [2]}, "tensors": {"w1": {"dp": "P"}}}
