// RUN: spmdc-opt %s -split-input-file --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.5 momentum=0.9 weight-decay=0.1" | FileCheck %s --check-prefix=SGD
// RUN: spmdc-opt %s -split-input-file --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.5" | FileCheck %s --check-prefix=PLAIN
// RUN: spmdc-opt %s -split-input-file --tg-autodiff --tg-optimizer="optimizer=adamw lr=0.001 weight-decay=0.01" | FileCheck %s --check-prefix=ADAMW
// RUN: not spmdc-opt %s -split-input-file --tg-optimizer 2>&1 | FileCheck %s --check-prefix=NOGRAD
// RUN: not spmdc-opt %s -split-input-file --tg-autodiff --tg-optimizer="optimizer=lion" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: spmdc-opt %s -split-input-file --tg-autodiff --tg-optimizer="optimizer=sgd lr=0.5 clip-grad-norm=0.25" | FileCheck %s --check-prefix=CLIP
// RUN: not spmdc-opt %s -split-input-file --tg-autodiff --tg-optimizer="clip-grad-norm=-1" 2>&1 | FileCheck %s --check-prefix=CLIPBAD
// RUN: spmdc-opt %s -split-input-file --tg-autodiff --tg-optimizer="optimizer=adamw weight-decay=0" | FileCheck %s --check-prefix=NOWD
// RUN: not spmdc-opt %S/Inputs/has-lr.mlir --tg-autodiff --tg-optimizer 2>&1 | FileCheck %s --check-prefix=HASLR

// Momentum and weight decay as in torch.optim.SGD -
// g' = g + wd w; buf' = momentum buf + g'; w' = w - lr buf'. The learning
// rate is an input (role hyper, f64 as PyTorch's Python float) whose
// default is the pass's lr.
// SGD-LABEL: func.func @main
// SGD-SAME: (%[[W:[a-z0-9]+]]: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>}, %[[LRARG:[a-z0-9]+]]: tensor<f64> {tg.default = 5.000000e-01 : f64, tg.name = "lr", tg.role = #tg.role<hyper>}, %[[BUF:[a-z0-9]+]]: tensor<2xf32> {tg.name = "w.momentum_buffer", tg.role = #tg.role<state>})
// SGD-SAME: -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}, tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>}, tensor<2xf32> {tg.name = "w.momentum_buffer", tg.role = #tg.role<state>})
// The gradient is tagged with its parameter, the update with its phase.
// SGD: %[[G:.*]] = tg.add %{{.*}}, %{{.*}} {tg.grad_of = "w"} : tensor<2xf32>, tensor<2xf32>
// SGD: %[[WD:.*]] = tg.full 1.000000e-01 {{.*}}: tensor<f32>
// SGD: %[[DECAY:.*]] = tg.mul %[[W]], %[[WD]]
// SGD: %[[G2:.*]] = tg.add %[[G]], %[[DECAY]]
// SGD: %[[MOM:.*]] = tg.full 9.000000e-01 {{.*}}: tensor<f32>
// SGD: %[[OLD:.*]] = tg.mul %[[BUF]], %[[MOM]]
// SGD: %[[NEWBUF:.*]] = tg.add %[[OLD]], %[[G2]]
// SGD: %[[LR:.*]] = tg.convert %[[LRARG]] {tg.update} : tensor<f64> to tensor<f32>
// SGD: %[[STEP:.*]] = tg.mul %[[NEWBUF]], %[[LR]]
// SGD: %[[NEWW:.*]] = tg.sub %[[W]], %[[STEP]] {tg.update}
// SGD: return %{{.*}}, %[[NEWW]], %[[NEWBUF]]

// Without momentum there is no state.
// PLAIN-LABEL: func.func @main
// PLAIN-SAME: (%{{[a-z0-9]+}}: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>}, %{{[a-z0-9]+}}: tensor<f64> {tg.default = 5.000000e-01 : f64, tg.name = "lr", tg.role = #tg.role<hyper>})
// PLAIN-SAME: -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}, tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>})

// AdamW: a shared step count and two moments per parameter.
// ADAMW-LABEL: func.func @main
// ADAMW-SAME: %[[LRARG:[a-z0-9]+]]: tensor<f64> {tg.default = 1.000000e-03 : f64, tg.name = "lr", tg.role = #tg.role<hyper>}
// ADAMW-SAME: %[[T:[a-z0-9]+]]: tensor<f32> {tg.name = "step", tg.role = #tg.role<state>}
// ADAMW-SAME: tensor<2xf32> {tg.name = "w.exp_avg", tg.role = #tg.role<state>}
// ADAMW-SAME: tensor<2xf32> {tg.name = "w.exp_avg_sq", tg.role = #tg.role<state>}
// ADAMW-SAME: -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}, tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>}, tensor<f32> {tg.name = "step", tg.role = #tg.role<state>}, tensor<2xf32> {tg.name = "w.exp_avg", tg.role = #tg.role<state>}, tensor<2xf32> {tg.name = "w.exp_avg_sq", tg.role = #tg.role<state>})
// ADAMW: %[[T1:.*]] = tg.add %[[T]], %{{.*}} {{.*}}: tensor<f32>, tensor<f32>
// ADAMW: %[[T64:.*]] = tg.convert %[[T1]] {{.*}}: tensor<f32> to tensor<f64>
// Decoupled weight decay, p (1 - lr wd): the factor in f64, rounded to the
// parameter's type as PyTorch rounds its Python float.
// ADAMW: %[[ONE:.*]] = tg.full 1.000000e+00 {{.*}}: tensor<f64>
// ADAMW: %[[WD:.*]] = tg.full 1.000000e-02 {{.*}}: tensor<f64>
// ADAMW: %[[LRWD:.*]] = tg.mul %[[LRARG]], %[[WD]] {{.*}}: tensor<f64>, tensor<f64>
// ADAMW: %[[FACTOR64:.*]] = tg.sub %[[ONE]], %[[LRWD]]
// ADAMW: %[[FACTOR:.*]] = tg.convert %[[FACTOR64]] {{.*}}: tensor<f64> to tensor<f32>
// ADAMW: %[[DECAYED:.*]] = tg.mul %{{.*}}, %[[FACTOR]]
// ADAMW: tg.full 9.000000e-01 {{.*}}: tensor<f32>
// ADAMW: tg.full 0.099999999999999978 {{.*}}: tensor<f32>
// ADAMW: tg.full 0.99899999999999999 {{.*}}: tensor<f32>
// Bias corrections in f64, as PyTorch computes them.
// ADAMW: %[[B1:.*]] = tg.full 9.000000e-01 {{.*}}: tensor<f64>
// ADAMW: tg.pow %[[B1]], %[[T64]] {{.*}}: tensor<f64>, tensor<f64>
// ADAMW: %[[B2:.*]] = tg.full 0.99899999999999999 {{.*}}: tensor<f64>
// ADAMW: %[[BC2:.*]] = tg.pow %[[B2]], %[[T64]] {{.*}}: tensor<f64>, tensor<f64>
// The step size lr / (1 - beta1^t), in f64.
// ADAMW: %[[SIZE64:.*]] = tg.div %[[LRARG]], %{{.*}} {{.*}}: tensor<f64>, tensor<f64>
// ADAMW: %[[SIZE:.*]] = tg.convert %[[SIZE64]] {{.*}}: tensor<f64> to tensor<f32>
// ADAMW: tg.sqrt %{{.*}} {{.*}}: tensor<f64>
// ADAMW: tg.full 1.000000e-08 {{.*}}: tensor<f32>
// ADAMW: %[[DIR:.*]] = tg.mul %{{.*}}, %[[SIZE]]
// ADAMW: %[[NEWW:.*]] = tg.sub %[[DECAYED]], %[[DIR]]
// ADAMW: return %{{.*}}, %[[NEWW]],

// AdamW without weight decay: no decay factor; the default lr is 1e-3.
// NOWD-LABEL: func.func @main
// NOWD-SAME: (%[[W:[a-z0-9]+]]: tensor<2xf32> {{.*}}, %{{[a-z0-9]+}}: tensor<f64> {tg.default = 1.000000e-03 : f64, tg.name = "lr", tg.role = #tg.role<hyper>}
// NOWD-NOT: tg.mul %[[W]], %{{.*}} {tg.update}
// NOWD: %[[NEWW:.*]] = tg.sub %[[W]], %{{.*}} {tg.update}
// NOWD: return %{{.*}}, %[[NEWW]],

// NOGRAD: error: --tg-optimizer needs the 'grad' results of --tg-autodiff
// UNKNOWN: for the --optimizer option: Cannot find option named 'lion'!

func.func @main(%w: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %s = tg.mul %w, %w : tensor<2xf32>, tensor<2xf32>
  %l = tg.sum %s dims [0] : tensor<2xf32>
  return %l : tensor<f32>
}

// clip-grad-norm: torch.nn.utils.clip_grad_norm_ before the update. Each
// gradient's sum of squares becomes one element; one concat and one sum
// add them, so that a sharded step reduces them together.
// CLIP: // {{-----}}
// CLIP: func.func @main
// CLIP-SAME: (%[[W:[a-z0-9]+]]: tensor<2xf32> {tg.name = "w", {{.*}}}, %[[B:[a-z0-9]+]]: tensor<f32> {tg.name = "b", {{.*}}})
// CLIP: %[[GB:.*]] = tg.mul %{{.*}}, %{{.*}} {tg.grad_of = "b"}
// CLIP: %[[GW:.*]] = tg.add %{{.*}}, %{{.*}} {tg.grad_of = "w"}
// CLIP: %[[SQW:.*]] = tg.mul %[[GW]], %[[GW]] {tg.update}
// CLIP: %[[SW:.*]] = tg.sum %[[SQW]] dims [0] {tg.origin = "grad_norm", tg.update} : tensor<2xf32>
// CLIP: %[[RW:.*]] = tg.reshape %[[SW]] {tg.update} : tensor<f32> to tensor<1xf32>
// A rank-0 gradient's square needs no sum.
// CLIP: %[[SB:.*]] = tg.mul %[[GB]], %[[GB]] {tg.update}
// CLIP: %[[RB:.*]] = tg.reshape %[[SB]] {tg.update} : tensor<f32> to tensor<1xf32>
// CLIP: %[[ALL:.*]] = tg.concat %[[RW]], %[[RB]] dim 0 {tg.update}
// CLIP: %[[TOTAL:.*]] = tg.sum %[[ALL]] dims [0] {tg.origin = "grad_norm", tg.update} : tensor<2xf32>
// CLIP: %[[NORM:.*]] = tg.sqrt %[[TOTAL]] {tg.update}
// coef = min(max_norm / (norm + 1e-6), 1), as torch clamps it.
// CLIP: %[[MAX:.*]] = tg.full 2.500000e-01 {tg.update} : tensor<f32>
// CLIP: %[[EPS:.*]] = tg.full 9.9999999999999995E-7 {tg.update} : tensor<f32>
// CLIP: %[[DEN:.*]] = tg.add %[[NORM]], %[[EPS]]
// CLIP: %[[RATIO:.*]] = tg.div %[[MAX]], %[[DEN]]
// CLIP: %[[ONE:.*]] = tg.full 1.000000e+00 {tg.update} : tensor<f32>
// CLIP: %[[COEF:.*]] = tg.minimum %[[RATIO]], %[[ONE]]
// CLIP: %[[CW:.*]] = tg.mul %[[GW]], %[[COEF]] {tg.update}
// CLIP: %[[CB:.*]] = tg.mul %[[GB]], %[[COEF]] {tg.update}
// The update reads the clipped gradients.
// CLIP: tg.mul %[[CW]], %{{.*}} {tg.update}
// CLIP: tg.mul %[[CB]], %{{.*}} {tg.update}
// CLIP: return

// HASLR: error: --tg-optimizer: @main already has a learning-rate argument 'lr'

// CLIPBAD: error: --tg-optimizer's clip-grad-norm must be a positive finite number (0: off), got -1

// -----

func.func @main(%w: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>},
                %b: tensor<f32> {tg.name = "b", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %s = tg.mul %w, %w : tensor<2xf32>, tensor<2xf32>
  %l = tg.sum %s dims [0] : tensor<2xf32>
  %m = tg.mul %l, %b : tensor<f32>, tensor<f32>
  return %m : tensor<f32>
}
