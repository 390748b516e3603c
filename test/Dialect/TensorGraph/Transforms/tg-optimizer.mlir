// RUN: spmdc-opt %s --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.5 momentum=0.9 weight-decay=0.1" | FileCheck %s --check-prefix=SGD
// RUN: spmdc-opt %s --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.5" | FileCheck %s --check-prefix=PLAIN
// RUN: spmdc-opt %s --tg-autodiff --tg-optimizer="optimizer=adamw lr=0.001 weight-decay=0.01" | FileCheck %s --check-prefix=ADAMW
// RUN: not spmdc-opt %s --tg-optimizer 2>&1 | FileCheck %s --check-prefix=NOGRAD
// RUN: not spmdc-opt %s --tg-autodiff --tg-optimizer="optimizer=lion" 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// Momentum and weight decay as in torch.optim.SGD -
// g' = g + wd w; buf' = momentum buf + g'; w' = w - lr buf'.
// SGD-LABEL: func.func @main
// SGD-SAME: (%[[W:[a-z0-9]+]]: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>}, %[[BUF:[a-z0-9]+]]: tensor<2xf32> {tg.name = "w.momentum_buffer", tg.role = #tg.role<state>})
// SGD-SAME: -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}, tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>}, tensor<2xf32> {tg.name = "w.momentum_buffer", tg.role = #tg.role<state>})
// The gradient is tagged with its parameter, the update with its phase.
// SGD: %[[G:.*]] = tg.add %{{.*}}, %{{.*}} {tg.grad_of = "w"} : tensor<2xf32>, tensor<2xf32>
// SGD: %[[WD:.*]] = tg.full 1.000000e-01 {{.*}}: tensor<f32>
// SGD: %[[DECAY:.*]] = tg.mul %[[W]], %[[WD]]
// SGD: %[[G2:.*]] = tg.add %[[G]], %[[DECAY]]
// SGD: %[[MOM:.*]] = tg.full 9.000000e-01 {{.*}}: tensor<f32>
// SGD: %[[OLD:.*]] = tg.mul %[[BUF]], %[[MOM]]
// SGD: %[[NEWBUF:.*]] = tg.add %[[OLD]], %[[G2]]
// SGD: %[[LR:.*]] = tg.full 5.000000e-01 {{.*}}: tensor<f32>
// SGD: %[[STEP:.*]] = tg.mul %[[NEWBUF]], %[[LR]]
// SGD: %[[NEWW:.*]] = tg.sub %[[W]], %[[STEP]] {tg.update}
// SGD: return %{{.*}}, %[[NEWW]], %[[NEWBUF]]

// Without momentum there is no state.
// PLAIN-LABEL: func.func @main
// PLAIN-SAME: (%{{[a-z0-9]+}}: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>})
// PLAIN-SAME: -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}, tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>})

// AdamW: a shared step count and two moments per parameter.
// ADAMW-LABEL: func.func @main
// ADAMW-SAME: %[[T:[a-z0-9]+]]: tensor<f32> {tg.name = "step", tg.role = #tg.role<state>}
// ADAMW-SAME: tensor<2xf32> {tg.name = "w.exp_avg", tg.role = #tg.role<state>}
// ADAMW-SAME: tensor<2xf32> {tg.name = "w.exp_avg_sq", tg.role = #tg.role<state>}
// ADAMW-SAME: -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}, tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>}, tensor<f32> {tg.name = "step", tg.role = #tg.role<state>}, tensor<2xf32> {tg.name = "w.exp_avg", tg.role = #tg.role<state>}, tensor<2xf32> {tg.name = "w.exp_avg_sq", tg.role = #tg.role<state>})
// ADAMW: %[[T1:.*]] = tg.add %[[T]], %{{.*}} {{.*}}: tensor<f32>, tensor<f32>
// ADAMW: %[[T64:.*]] = tg.convert %[[T1]] {{.*}}: tensor<f32> to tensor<f64>
// ADAMW: tg.full 9.999900e-01 {{.*}}: tensor<f32>
// ADAMW: tg.full 9.000000e-01 {{.*}}: tensor<f32>
// ADAMW: tg.full 0.099999999999999978 {{.*}}: tensor<f32>
// ADAMW: tg.full 0.99899999999999999 {{.*}}: tensor<f32>
// Bias corrections in f64, as PyTorch computes them.
// ADAMW: %[[B1:.*]] = tg.full 9.000000e-01 {{.*}}: tensor<f64>
// ADAMW: tg.pow %[[B1]], %[[T64]] {{.*}}: tensor<f64>, tensor<f64>
// ADAMW: %[[B2:.*]] = tg.full 0.99899999999999999 {{.*}}: tensor<f64>
// ADAMW: tg.pow %[[B2]], %[[T64]] {{.*}}: tensor<f64>, tensor<f64>
// ADAMW: tg.convert %{{.*}} {{.*}}: tensor<f64> to tensor<f32>
// ADAMW: tg.sqrt %{{.*}} {{.*}}: tensor<f64>
// ADAMW: tg.full 1.000000e-08 {{.*}}: tensor<f32>
// ADAMW: return

// NOGRAD: error: --tg-optimizer needs the 'grad' results of --tg-autodiff
// UNKNOWN: for the --optimizer option: Cannot find option named 'lion'!

func.func @main(%w: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %s = tg.mul %w, %w : tensor<2xf32>, tensor<2xf32>
  %l = tg.sum %s dims [0] : tensor<2xf32>
  return %l : tensor<f32>
}
