// RUN: split-file %s %t
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.1" --dist-apply-spec=spec=%t/ddp.json --dist-propagate --dist-partition | FileCheck %s --check-prefix=DDP
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.1" --dist-apply-spec=spec=%t/megatron.json --dist-propagate --dist-partition | FileCheck %s --check-prefix=TP
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer="optimizer=adamw" --dist-apply-spec=spec=%t/zero1.json --dist-propagate --dist-partition | FileCheck %s --check-prefix=ZERO
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.1" --dist-apply-spec=spec=%t/uneven.json --dist-propagate --dist-partition | FileCheck %s --check-prefix=UNEVEN
// RUN: spmdc-opt %t/step.mlir --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.1" --dist-apply-spec=spec=%t/zero3-4.json --dist-propagate --dist-partition | FileCheck %s --check-prefix=PADZ3
// RUN: spmdc-opt %t/vocab.mlir --tg-decompose --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.1" --dist-apply-spec=spec=%t/megatron.json --dist-propagate --dist-partition | FileCheck %s --check-prefix=VOCAB
// RUN: spmdc-opt %t/planned.mlir --dist-partition | FileCheck %s --check-prefix=PLAN
// RUN: not spmdc-opt %t/unplanned.mlir --dist-partition 2>&1 | FileCheck %s --check-prefix=UNPLANNED
// RUN: not spmdc-opt %t/step.mlir --dist-partition 2>&1 | FileCheck %s --check-prefix=NOSPEC

// Vocabulary parallel (Megatron-LM's): the table [5, 4] split by rows over
// tp (padded to 6, 3 rows each), each rank looks up the tokens in its rows
// (shifted by its first row, the others zeros) and one all-reduce sums the
// lookups. The tied head's logits stay split by vocabulary through the
// loss: an all-reduce by max of the max (its padding masked with -inf),
// one of the sum of exponentials, and the picked target log-probabilities
// (picked where they are, zeros elsewhere) stay a partial sum until the
// loss. Logits are never gathered.
// VOCAB-LABEL: func.func @main
// VOCAB-SAME: tensor<3x4xf32> {dist.sharding = #dist.sharding<{{\[\["tp"\], \[\]\]}} logical[5, 4]>, tg.name = "wte"
// VOCAB-NOT: dist.all_gather
// VOCAB: %[[PLACE:.*]] = dist.local_slice %{{.*}} axes ["tp"] dim 0 : tensor<2xi64> -> tensor<1xi64>
// VOCAB: %[[SHIFTED:.*]] = tg.sub %arg0, %{{.*}} : tensor<2x3xi64>, tensor<i64>
// VOCAB: %[[MINE:.*]] = tg.and
// VOCAB: %[[LOCAL:.*]] = tg.select %[[MINE]], %[[SHIFTED]]
// VOCAB: %[[ROWS:.*]] = tg.embedding %arg2, %[[LOCAL]] : tensor<3x4xf32>, tensor<2x3xi64>
// VOCAB: tg.select %{{.*}}, %[[ROWS]]
// VOCAB: dist.all_reduce %{{.*}} axes ["tp"] {origin = "activation", phase = #dist.phase<forward>} : tensor<2x3x4xf32>
// VOCAB: %[[LOGITS:.*]] = tg.matmul %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<4x3xf32>
// VOCAB: %[[NEGINF:.*]] = tg.full 0xFFF0000000000000 : tensor<f32>
// VOCAB: tg.select %{{.*}}, %[[LOGITS]], %[[NEGINF]]
// VOCAB: tg.max
// VOCAB: dist.all_reduce %{{.*}} axes ["tp"] by max {{.*}} : tensor<2x3x1xf32>
// VOCAB: tg.sum %{{.*}} dims [2] keepdim : tensor<2x3x3xf32>
// VOCAB: dist.all_reduce %{{.*}} axes ["tp"] {{.*}} : tensor<2x3x1xf32>
// VOCAB: tg.gather %{{.*}}, %{{.*}} dim 2 : tensor<2x3x3xf32>, tensor<2x3x1xi64>
// VOCAB: dist.all_reduce %{{.*}} axes ["tp"] {origin = "loss", phase = #dist.phase<forward>} : tensor<f32>
// The gradient of the pick scatters into the rank's block alone.
// VOCAB: tg.scatter_add %{{.*}}, %{{.*}} dim 2 : tensor<2x3x1xi64>, tensor<2x3x1xf32> to tensor<2x3x3xf32>
// VOCAB-NOT: dist.all_gather

// Data parallel: local batch 4 of 8, the loss and each gradient all-reduced
// once, in their phase, named after what they serve.
// DDP: module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}}
// DDP-LABEL: func.func @main
// DDP-SAME: tensor<4x4xf32> {dist.sharding = #dist.sharding<{{\[\["dp"\], \[\]\]}}>, tg.name = "x", tg.role = #tg.role<data>}
// DDP-SAME: tensor<6x4xf32> {dist.sharding = #dist.sharding<{{\[\[\], \[\]\]}}>, tg.name = "w1", tg.role = #tg.role<param>}
// DDP: tg.matmul %{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x6xf32>
// DDP: dist.all_reduce %{{.*}} axes ["dp"] {origin = "loss", phase = #dist.phase<forward>} : tensor<f32>
// DDP: dist.all_reduce %{{.*}} axes ["dp"] {origin = "w2", phase = #dist.phase<backward>} : tensor<2x6xf32>
// DDP: dist.all_reduce %{{.*}} axes ["dp"] {origin = "w1", phase = #dist.phase<backward>} : tensor<6x4xf32>
// DDP-NOT: dist.
// DDP: return

// Megatron: w1 column-parallel (its output features split), w2
// row-parallel (its input features split): one all-reduce of the
// row-parallel output, batch x 2, in the forward; none in the backward
// (x is data: nothing needs its gradient).
// TP-LABEL: func.func @main
// TP-SAME: tensor<3x4xf32> {dist.sharding = #dist.sharding<{{\[\["tp"\], \[\]\]}}>, tg.name = "w1", tg.role = #tg.role<param>}
// TP-SAME: tensor<2x3xf32> {dist.sharding = #dist.sharding<{{\[\[\], \["tp"\]\]}}>, tg.name = "w2", tg.role = #tg.role<param>}
// TP: %[[H:.*]] = tg.matmul %{{.*}}, %{{.*}} : tensor<8x4xf32>, tensor<4x3xf32>
// TP: %[[Y:.*]] = tg.matmul %{{.*}}, %{{.*}} : tensor<8x3xf32>, tensor<3x2xf32>
// TP: dist.all_reduce %[[Y]] axes ["tp"] {origin = "activation", phase = #dist.phase<forward>} : tensor<8x2xf32>
// TP-NOT: dist.
// TP: return

// ZeRO-1: optimizer state split on dim 0; gradients reduce-scattered into
// it, updated parameters all-gathered back whole.
// ZERO-LABEL: func.func @main
// ZERO-SAME: tensor<3x4xf32> {dist.sharding = #dist.sharding<{{\[\["dp"\], \[\]\]}}>, tg.name = "w1.exp_avg", tg.role = #tg.role<state>}
// ZERO-DAG: dist.reduce_scatter %{{.*}} axes ["dp"] dim 0 {origin = "w1", phase = #dist.phase<backward>} : tensor<6x4xf32> -> tensor<3x4xf32>
// ZERO-DAG: dist.reduce_scatter %{{.*}} axes ["dp"] dim 0 {origin = "w2", phase = #dist.phase<backward>} : tensor<2x6xf32> -> tensor<1x6xf32>
// ZERO-DAG: dist.all_gather %{{.*}} axes ["dp"] dim 0 {origin = "w1", phase = #dist.phase<optimizer>} : tensor<3x4xf32> -> tensor<6x4xf32>
// ZERO-DAG: dist.all_gather %{{.*}} axes ["dp"] dim 0 {origin = "w2", phase = #dist.phase<optimizer>} : tensor<1x6xf32> -> tensor<2x6xf32>
// ZERO-NOT: dist.all_reduce %{{.*}} {origin = "w


// A batch of 8 on 3 ranks: each holds 3 rows of the batch padded to 9 (the
// last rank's third row is padding), and @main says the logical shape.
// Before each sum over the batch (the loss, and the weight gradients'
// contractions) the padding is masked with zeros: where this rank's chunk
// of the positions is past 8.
// UNEVEN: func.func @main(%arg0: tensor<3x4xf32> {dist.sharding = #dist.sharding<{{\[\["dp"\], \[\]\]}} logical[8, 4]>, tg.name = "x"
// UNEVEN: %[[POS:.*]] = tg.iota dim 0 : tensor<9xi64>
// UNEVEN: %[[MINE:.*]] = dist.local_slice %[[POS]] axes ["dp"] dim 0 : tensor<9xi64> -> tensor<3xi64>
// UNEVEN: %[[ROWS:.*]] = tg.reshape %[[MINE]] : tensor<3xi64> to tensor<3x1xi64>
// UNEVEN: %[[EIGHT:.*]] = tg.full 8.000000e+00 : tensor<i64>
// UNEVEN: %[[HOLDS:.*]] = tg.compare lt, %[[ROWS]], %[[EIGHT]] : tensor<3x1xi64>, tensor<i64>
// UNEVEN: %[[MASKED:.*]] = tg.select %[[HOLDS]], %{{.*}}, %{{.*}} : tensor<3x1xi1>, tensor<3x2xf32>, tensor<f32>
// UNEVEN: tg.sum %[[MASKED]] dims [0, 1] : tensor<3x2xf32>
// UNEVEN: dist.all_reduce %{{.*}} axes ["dp"] {origin = "loss"
// UNEVEN: tg.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x3xi1>, tensor<6x3xf32>, tensor<f32>
// UNEVEN: dist.all_reduce %{{.*}} axes ["dp"] {origin = "w2"

// ZeRO-3 on 4 ranks: w1's 6 rows padded to 8, 2 a rank. Gathering w1 for
// the forward slices the padding off; its gradient is padded with zero
// rows before the reduce-scatter.
// PADZ3: func.func @main(%arg0: tensor<2x4xf32> {{.*}}, %arg1: tensor<2x4xf32> {dist.sharding = #dist.sharding<{{\[\["dp"\], \[\]\]}} logical[6, 4]>, tg.name = "w1"
// PADZ3: %[[G:.*]] = dist.all_gather %arg1 axes ["dp"] dim 0 {origin = "w1", phase = #dist.phase<forward>} : tensor<2x4xf32> -> tensor<8x4xf32>
// PADZ3: tg.slice %[[G]] dim 0 start 0 end 6 step 1 : tensor<8x4xf32>
// PADZ3: %[[Z:.*]] = tg.full 0.000000e+00 : tensor<2x4xf32>
// PADZ3: %[[P:.*]] = tg.concat %{{.*}}, %[[Z]] dim 0 : tensor<6x4xf32>, tensor<2x4xf32>
// PADZ3: dist.reduce_scatter %[[P]] axes ["dp"] dim 0 {origin = "w1", phase = #dist.phase<backward>} : tensor<8x4xf32> -> tensor<2x4xf32>

// The partitioner follows whatever plan the IR carries, here one written
// by hand where propagation would have left everything whole: y is
// computed on a slice of x (no traffic), and the contraction over a split
// k is reduce-scattered into z's planned row split (an all-reduce where
// the plan wants it whole).
// PLAN: module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}}
// PLAN-LABEL: func.func @main
// PLAN: %[[XS:.*]] = dist.local_slice %arg0 axes ["dp"] dim 0 : tensor<8x4xf32> -> tensor<4x4xf32>
// PLAN: %[[Y:.*]] = tg.matmul %[[XS]], %arg1 : tensor<4x4xf32>, tensor<4x2xf32>
// PLAN: %[[P:.*]] = tg.matmul %{{.*}}, %{{.*}} : tensor<8x2xf32>, tensor<2x2xf32>
// PLAN: %[[Z:.*]] = dist.reduce_scatter %[[P]] axes ["dp"] dim 0 {{.*}} : tensor<8x2xf32> -> tensor<4x2xf32>
// PLAN: %[[W:.*]] = dist.all_reduce %{{.*}} axes ["dp"] {{.*}} : tensor<8x2xf32>
// PLAN: return %[[Y]], %[[Z]], %[[W]] : tensor<4x2xf32>, tensor<4x2xf32>, tensor<8x2xf32>
// PLAN-NOT: from

// UNPLANNED: error: has no valid 'dist.sharding' for a value of type 'tensor<8x2xf32>': run --dist-propagate first
// NOSPEC: error: --dist-partition needs the module's 'dist.planned_mesh': run --dist-apply-spec and --dist-propagate first

//--- planned.mlir
module attributes {dist.planned_mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @main(%x: tensor<8x4xf32> {dist.sharding = #dist.sharding<[[], []]>, tg.name = "x", tg.role = #tg.role<data>},
                  %w: tensor<4x2xf32> {dist.sharding = #dist.sharding<[[], []]>, tg.name = "w", tg.role = #tg.role<param>},
                  %a: tensor<8x4xf32> {dist.sharding = #dist.sharding<[[], ["dp"]]>, tg.name = "a", tg.role = #tg.role<data>},
                  %b: tensor<4x2xf32> {dist.sharding = #dist.sharding<[["dp"], []]>, tg.name = "b", tg.role = #tg.role<param>})
      -> (tensor<8x2xf32> {dist.sharding = #dist.sharding<[["dp"], []] from "by hand">, tg.name = "y", tg.role = #tg.role<output>},
          tensor<8x2xf32> {dist.sharding = #dist.sharding<[["dp"], []]>, tg.name = "z", tg.role = #tg.role<output>},
          tensor<8x2xf32> {dist.sharding = #dist.sharding<[[], []]>, tg.name = "v", tg.role = #tg.role<output>}) {
    %y = tg.matmul %x, %w {dist.sharding = #dist.sharding<[["dp"], []] from "by hand">} : tensor<8x4xf32>, tensor<4x2xf32>
    %z = tg.matmul %a, %b {dist.sharding = #dist.sharding<[["dp"], []]>} : tensor<8x4xf32>, tensor<4x2xf32>
    %v = tg.matmul %a, %b {dist.sharding = #dist.sharding<[[], []]>} : tensor<8x4xf32>, tensor<4x2xf32>
    return %y, %z, %v : tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>
  }
}
//--- unplanned.mlir
module attributes {dist.planned_mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @main(%x: tensor<8x4xf32> {dist.sharding = #dist.sharding<[["dp"], []]>, tg.name = "x", tg.role = #tg.role<data>},
                  %w: tensor<4x2xf32> {dist.sharding = #dist.sharding<[[], []]>, tg.name = "w", tg.role = #tg.role<param>})
      -> (tensor<8x2xf32> {dist.sharding = #dist.sharding<[["dp"], []]>, tg.name = "y", tg.role = #tg.role<output>}) {
    %y = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32>
    return %y : tensor<8x2xf32>
  }
}
//--- vocab.mlir
func.func @main(%tokens: tensor<2x3xi64> {tg.name = "tokens", tg.role = #tg.role<data>},
                %targets: tensor<2x3xi64> {tg.name = "targets", tg.role = #tg.role<data>},
                %wte: tensor<5x4xf32> {tg.name = "wte", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %e = tg.embedding %wte, %tokens : tensor<5x4xf32>, tensor<2x3xi64>
  %h = tg.tanh %e : tensor<2x3x4xf32>
  %wt = tg.transpose %wte perm [1, 0] : tensor<5x4xf32>
  %logits = tg.matmul %h, %wt : tensor<2x3x4xf32>, tensor<4x5xf32>
  %l = tg.cross_entropy %logits, %targets : tensor<2x3x5xf32>, tensor<2x3xi64>
  return %l : tensor<f32>
}
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
//--- zero1.json
{"version": 1, "mesh": {"axes": ["dp"], "shape": [2]}, "presets": {"dp": "zero1"}}
//--- uneven.json
{"version": 1, "mesh": {"axes": ["dp"], "shape": [3]}, "presets": {"dp": "ddp"}}
//--- zero3-4.json
{"version": 1, "mesh": {"axes": ["dp"], "shape": [4]}, "presets": {"dp": "zero3"}}
//--- unknown.json
{"version": 1, "mesh": {"axes": ["dp"], "shape": [2]}, "tensors": {"w3": {"dp": "S(0)"}}}
//--- partial.json
{"version": 1, "mesh": {"axes": ["dp"], "shape": [2]}, "tensors": {"w1": {"dp": "P"}}}
