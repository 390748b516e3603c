// RUN: spmdc-opt %s --tg-autodiff --tg-partition="policy=save-all" -split-input-file | FileCheck %s --check-prefix=SAVE
// RUN: spmdc-opt %s --tg-autodiff --tg-partition -split-input-file | FileCheck %s --check-prefix=MINCUT
// RUN: not spmdc-opt %s --tg-partition="policy=greedy" -split-input-file 2>&1 | FileCheck %s --check-prefix=POLICY

// tanh(x @ w) squared: the backward needs tanh's output (for both the
// square and tanh's own derivative). save-all saves every forward value the
// backward reads: h (for nothing but the chain) is not read, a = tanh(h) is,
// and so is the square's input. min-cut saves a and recomputes nothing it
// cannot.
// SAVE: module attributes {tg.partition = {policy = "save-all", save_all_activation_bytes = 128 : i64, saved_activation_bytes = 128 : i64}}
// SAVE-LABEL: func.func @main
// SAVE: %[[F:.*]]:2 = call @forward(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<f32>, tensor<4x8xf32>)
// SAVE: %[[B:.*]] = call @backward(%[[F]]#1, %{{.*}}) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
// SAVE: return %[[F]]#0, %[[B]]
// SAVE-LABEL: func.func private @forward
// SAVE: %[[H:.*]] = tg.matmul
// SAVE: %[[A:.*]] = tg.tanh %[[H]]
// SAVE: %[[L:.*]] = tg.sum
// SAVE: return %[[L]], %[[A]]
// SAVE-LABEL: func.func private @backward
// SAVE-NOT: tg.tanh
// SAVE: tg.matmul
// SAVE: return
func.func @main(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<data>},
                %w: tensor<8x8xf32> {tg.name = "w", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %h = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %a = tg.tanh %h : tensor<4x8xf32>
  %b = tg.mul %a, %a : tensor<4x8xf32>, tensor<4x8xf32>
  %l = tg.sum %b dims [0, 1] : tensor<4x8xf32>
  return %l : tensor<f32>
}

// -----

// A chain of cheap ops: save-all keeps the three intermediates the backward
// reads (sigmoid, exp and tanh outputs); min-cut keeps one of them and
// recomputes exp and tanh from it in the backward.
// SAVE: module attributes {tg.partition = {policy = "save-all", save_all_activation_bytes = 384 : i64, saved_activation_bytes = 384 : i64}}
// MINCUT: module attributes {tg.partition = {policy = "min-cut", save_all_activation_bytes = 384 : i64, saved_activation_bytes = 128 : i64}}
// MINCUT: func.func private @forward
// MINCUT: %[[S:.*]] = tg.sigmoid
// MINCUT: return %{{.*}}, %[[S]] : tensor<f32>, tensor<4x8xf32>
// MINCUT: func.func private @backward
// MINCUT-SAME: (%[[SAVED:[a-z0-9]+]]: tensor<4x8xf32>
// MINCUT: %[[E:.*]] = tg.exp %[[SAVED]]
// MINCUT: tg.tanh %[[E]]
// MINCUT-NOT: tg.sigmoid
// MINCUT: return
func.func @main(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<data>},
                %w: tensor<8x8xf32> {tg.name = "w", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %h = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %s = tg.sigmoid %h : tensor<4x8xf32>
  %e = tg.exp %s : tensor<4x8xf32>
  %t = tg.tanh %e : tensor<4x8xf32>
  %q = tg.mul %t, %t : tensor<4x8xf32>, tensor<4x8xf32>
  %l = tg.sum %q dims [0, 1] : tensor<4x8xf32>
  return %l : tensor<f32>
}

// -----

// Two such layers: the backward recomputes each layer's exp and tanh from
// its saved sigmoid just before it first needs them, the second layer's
// first (as AOTAutograd's backward), not every layer's at its start, which
// would hold them all at once.
// MINCUT: func.func private @backward
// MINCUT-SAME: (%[[S1:[a-z0-9]+]]: tensor<4x8xf32>, %[[S2:[a-z0-9]+]]: tensor<4x8xf32>
// MINCUT: %[[E2:.*]] = tg.exp %[[S2]]
// MINCUT: tg.tanh %[[E2]]
// MINCUT: tg.matmul
// MINCUT: %[[E1:.*]] = tg.exp %[[S1]]
// MINCUT: tg.tanh %[[E1]]
// MINCUT: return
func.func @main(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<data>},
                %w1: tensor<8x8xf32> {tg.name = "w1", tg.role = #tg.role<param>},
                %w2: tensor<8x8xf32> {tg.name = "w2", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %h1 = tg.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32>
  %s1 = tg.sigmoid %h1 : tensor<4x8xf32>
  %e1 = tg.exp %s1 : tensor<4x8xf32>
  %t1 = tg.tanh %e1 : tensor<4x8xf32>
  %h2 = tg.matmul %t1, %w2 : tensor<4x8xf32>, tensor<8x8xf32>
  %s2 = tg.sigmoid %h2 : tensor<4x8xf32>
  %e2 = tg.exp %s2 : tensor<4x8xf32>
  %t2 = tg.tanh %e2 : tensor<4x8xf32>
  %q = tg.mul %t2, %t2 : tensor<4x8xf32>, tensor<4x8xf32>
  %l = tg.sum %q dims [0, 1] : tensor<4x8xf32>
  return %l : tensor<f32>
}

// The policy is a checked option: the option parser names the bad value.
// POLICY: for the --policy option: Cannot find option named 'greedy'!
