//===- Passes.td - passes over the tensor-graph dialect ----*- tablegen -*-===//
//
// The training-step stages: decompose, autodiff (+ optimizer), partition.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_DIALECT_TENSORGRAPH_TRANSFORMS_PASSES_TD
#define SPMDC_DIALECT_TENSORGRAPH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TgDecompose : Pass<"tg-decompose", "::mlir::ModuleOp"> {
  let summary = "Rewrite composite tg ops into primitives, numerically stable";
  let description = [{
    Every composite (linear, mean, softmax, log_softmax, layer_norm,
    rms_norm, gelu, silu, cross_entropy, sdpa, dropout) becomes primitives;
    softmax subtracts the max first and log_softmax uses log-sum-exp, so
    large logits stay finite. Running the pass twice changes nothing.

    Before:
    ```mlir
    %y = tg.linear %x, %w, %b : tensor<8x4xf32>, tensor<2x4xf32>, tensor<2xf32>
    ```
    After:
    ```mlir
    %t = tg.transpose %w perm [1, 0] : tensor<2x4xf32>
    %m = tg.matmul %x, %t : tensor<8x4xf32>, tensor<4x2xf32>
    %y = tg.add %m, %b : tensor<8x2xf32>, tensor<2xf32>
    ```
  }];
  let dependentDialects = ["::spmdc::tg::TensorGraphDialect"];
}

def TgAutodiff : Pass<"tg-autodiff", "::mlir::ModuleOp"> {
  let summary = "Append reverse-mode gradients of every parameter to @main";
  let description = [{
    Differentiates the loss result of `@main` with respect to every float
    argument of role `param` and returns each gradient as a new result of
    role `grad` with the parameter's name. Each primitive states its own
    derivative (VJPOpInterface); gradients of broadcast operands are summed
    back to the operand's shape, fan-out accumulates, integer and boolean
    values get no gradient, and code no gradient needs is removed. The graph
    must have been decomposed.

    Before:
    ```mlir
    func.func @main(%w: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>})
        -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
      %s = tg.mul %w, %w : tensor<2xf32>, tensor<2xf32>
      %l = tg.sum %s dims [0] : tensor<2xf32>
      return %l : tensor<f32>
    }
    ```
    After (up to naming):
    ```mlir
    func.func @main(%w: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>})
        -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>},
            tensor<2xf32> {tg.name = "w", tg.role = #tg.role<grad>}) {
      %s = tg.mul %w, %w : tensor<2xf32>, tensor<2xf32>
      %l = tg.sum %s dims [0] : tensor<2xf32>
      %one = tg.full 1.0 : tensor<f32>
      %r = tg.reshape %one : tensor<f32> to tensor<1xf32>
      %g = tg.broadcast %r : tensor<1xf32> to tensor<2xf32>
      %a = tg.mul %g, %w : tensor<2xf32>, tensor<2xf32>
      %b = tg.mul %g, %w : tensor<2xf32>, tensor<2xf32>
      %dw = tg.add %a, %b : tensor<2xf32>, tensor<2xf32>
      return %l, %dw : tensor<f32>, tensor<2xf32>
    }
    ```
  }];
  let dependentDialects = ["::spmdc::tg::TensorGraphDialect"];
}

def TgOptimizer : Pass<"tg-optimizer", "::mlir::ModuleOp"> {
  let summary = "Turn the gradients of @main into an optimizer update";
  let description = [{
    Consumes the `grad` results that --tg-autodiff added and returns, in
    their place, each parameter updated by SGD (momentum, weight decay) or
    AdamW (bias correction, decoupled weight decay), with the optimizer
    state as explicit `state` arguments and results named
    `<param>.momentum_buffer`, `<param>.exp_avg`, `<param>.exp_avg_sq` and
    `step`. The runner feeds `param` and `state` results back into the
    arguments of the same role and name, so the state can be sharded like
    any tensor. The formulas are PyTorch's torch.optim.SGD and AdamW.

    The learning rate is an argument too, `lr` of role `hyper`: a
    `tensor<f64>` (as PyTorch's Python float) whose `tg.default` is the
    pass's `lr`, so that spmd-run's --lr-schedule changes it from step to
    step without a new compile. SGD multiplies by it rounded to the
    parameter's type; AdamW computes its step size `lr / (1 - beta1^t)`
    and its decoupled weight decay factor `1 - lr wd` in f64 and rounds
    them to the parameter's type, as PyTorch rounds its Python floats:
    ```mlir
    %lr32 = tg.convert %lr {tg.update} : tensor<f64> to tensor<f32>
    %step = tg.mul %buf2, %lr32 {tg.update} : tensor<2xf32>, tensor<f32>
    %w2 = tg.sub %w, %step {tg.update} : tensor<2xf32>, tensor<2xf32>
    ```

    With `clip-grad-norm=X` (X > 0), the gradients are first clipped as
    `torch.nn.utils.clip_grad_norm_(params, X)` clips them: each is
    multiplied by `min(X / (total + 1e-6), 1)`, where `total` is the L2
    norm of all gradients together. Each gradient's sum of squares
    (`tg.origin = "grad_norm"`) is reshaped to one element, and one concat
    and one sum add them before the sqrt, so that on a sharded step the
    partial sums meet there and are reduced by one all-reduce:
    ```mlir
    %sq = tg.mul %gw, %gw {tg.update} : tensor<2xf32>, tensor<2xf32>
    %sw = tg.sum %sq dims [0] {tg.origin = "grad_norm", tg.update} : tensor<2xf32>
    %rw = tg.reshape %sw {tg.update} : tensor<f32> to tensor<1xf32>
    ...
    %all = tg.concat %rw, %rb dim 0 {tg.update} : tensor<1xf32>, tensor<1xf32>
    %total = tg.sum %all dims [0] {tg.origin = "grad_norm", tg.update} : tensor<2xf32>
    %norm = tg.sqrt %total {tg.update} : tensor<f32>
    ...
    %coef = tg.minimum %ratio, %one {tg.update} : tensor<f32>, tensor<f32>
    %gw2 = tg.mul %gw, %coef {tg.update} : tensor<2xf32>, tensor<f32>
    ```

    Before: `@main(w) -> (loss, grad w)`. After, for SGD with momentum:
    ```mlir
    func.func @main(%w: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>},
                    %lr: tensor<f64> {tg.default = 1.000000e-02 : f64, tg.name = "lr", tg.role = #tg.role<hyper>},
                    %buf: tensor<2xf32> {tg.name = "w.momentum_buffer", tg.role = #tg.role<state>})
        -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>},
            tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>},
            tensor<2xf32> {tg.name = "w.momentum_buffer", tg.role = #tg.role<state>})
    ```
  }];
  let options = [
    Option<"optimizer", "optimizer", "::spmdc::tg::OptimizerKind",
           "::spmdc::tg::OptimizerKind::AdamW", "sgd or adamw",
           [{::llvm::cl::values(
             clEnumValN(::spmdc::tg::OptimizerKind::SGD, "sgd",
                        "torch.optim.SGD (momentum, weight decay)"),
             clEnumValN(::spmdc::tg::OptimizerKind::AdamW, "adamw",
                        "torch.optim.AdamW"))}]>,
    Option<"lr", "lr", "double", "-1.0",
           "the default of the `lr` argument (default: 0.01 for sgd, 1e-3 "
           "for adamw)">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"weightDecay", "weight-decay", "double", "-1.0",
           "weight decay, added to the gradient by sgd, decoupled by adamw "
           "(default: 0 for sgd, 0.01 for adamw, as in PyTorch)">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW epsilon">,
    Option<"clipGradNorm", "clip-grad-norm", "double", "0.0",
           "clip the gradients by their global L2 norm to at most this, as "
           "torch.nn.utils.clip_grad_norm_ (0: off)">,
  ];
  let dependentDialects = ["::spmdc::tg::TensorGraphDialect"];
}

def TgPartition : Pass<"tg-partition", "::mlir::ModuleOp"> {
  let summary = "Split the joint step into @forward and @backward with saved values";
  let description = [{
    The ops the loss depends on become `@forward`, which returns the loss
    and the values the backward needs; the gradients and the optimizer
    update become `@backward`, which takes those saved values; `@main`
    calls both and keeps its signature, so the step runs as before.

    `policy=save-all` saves every forward value the backward uses, like
    AOTAutograd's default_partition. `policy=min-cut` (the default) is
    AOTAutograd's min_cut_rematerialization_partition: a max-flow/min-cut
    over the forward ops, each weighted by its bytes times 1.1^min(distance
    to the backward, 100), where only cheap ops (elementwise, shape,
    broadcast, factories) may be recomputed in the backward and matmuls,
    reductions, gathers and random ops never are. It never saves more bytes
    than save-all. Each recomputed op goes just before the backward's first
    use of it (AOTAutograd's reordering_to_mimic_autograd_engine), so that
    the backward holds one layer's recomputed values at a time. The module
    gets a `tg.partition` attribute with both figures, which the compile
    report states.

    After (shape):
    ```mlir
    module attributes {tg.partition = {policy = "min-cut", save_all_activation_bytes = 4096 : i64, saved_activation_bytes = 2048 : i64}} {
      func.func @main(...) -> (...) {
        %f:3 = call @forward(%x, %w) : (...) -> (tensor<f32>, tensor<8x4xf32>, ...)
        %b:2 = call @backward(%f#1, %f#2, %w) : (...) -> (...)
        return %f#0, %b#0, %b#1 : ...
      }
      func.func private @forward(...) -> (tensor<f32>, ...)
      func.func private @backward(...) -> (...)
    }
    ```
  }];
  let options = [
    Option<"policy", "policy", "::spmdc::tg::PartitionPolicy",
           "::spmdc::tg::PartitionPolicy::MinCut",
           "save-all or min-cut",
           [{::llvm::cl::values(
             clEnumValN(::spmdc::tg::PartitionPolicy::SaveAll, "save-all",
                        "every forward value the backward uses"),
             clEnumValN(::spmdc::tg::PartitionPolicy::MinCut, "min-cut",
                        "a min-cut that recomputes cheap ops"))}]>,
  ];
  let dependentDialects = ["::spmdc::tg::TensorGraphDialect"];
}

def TgAccumulateGradients : Pass<"tg-accumulate-gradients", "::mlir::ModuleOp"> {
  let summary = "One optimizer step over K micro-batches (spmdc --grad-accum K)";
  let description = [{
    Runs after `--tg-partition`, on the step of one micro-batch. Each data
    input grows K times along dim 0 (its batch: every data input must
    have the same one), and the step runs the forward and the backward
    once a micro-batch, one after the other, so only one micro-batch's
    activations are alive at a time. Micro-batch k is the rows `b K + k`
    of the K-times batch (a reshape to `[B, K, ...]` and a slice of dim 1),
    so a data input split over its batch stays split: each rank runs its
    own rows of every micro-batch. The gradients (and the loss) are the
    mean over the micro-batches, as nanoGPT's `loss / K` makes them, and
    the optimizer update runs once on them: for a loss that is a mean over
    the batch this is one step on the K-times batch. The calls of
    `@forward` and `@backward` are inlined into `@main`, so that the shard
    stage keeps each micro-batch's gradient a partial sum and reduces the
    mean once a step, not once a micro-batch.

    Refused: data inputs of different batch sizes or of rank 0, and a
    result other than the loss, a gradient, a parameter or optimizer state
    computed from the data (model state such as batch-norm statistics).
    The module gets `micro_batches = K` in its `tg.partition` attribute.
  }];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "micro-batches a step (1: the step as it is)">,
  ];
  let dependentDialects = ["::spmdc::tg::TensorGraphDialect"];
}

def TgEvalEntry : Pass<"tg-eval-entry", "::mlir::ModuleOp"> {
  let summary = "Add @eval: the step's loss alone, without backward or update";
  let description = [{
    `spmd-run --eval-dataset` measures the loss on held-out batches without
    training on them. The module carries that program as a public `@eval`:
    a copy of `@main` that returns only the `loss` result, with everything
    the loss does not need removed (the call of `@backward`, the update)
    and the arguments it does not read dropped. What `@main` computes for
    the forward stays: the call of `@forward` itself, and on a sharded step
    the gathers and reductions around it, so `@eval` runs on the same
    shards as the step. A graph without a loss gets no `@eval`.

    After (shape):
    ```mlir
    func.func @eval(%x: tensor<8x4xf32> {tg.name = "x", tg.role = #tg.role<data>},
                    %w: tensor<4x2xf32> {tg.name = "w", tg.role = #tg.role<param>})
        -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
      %f:3 = call @forward(%x, %w) : (...) -> (tensor<f32>, ...)
      return %f#0 : tensor<f32>
    }
    ```
  }];
  let dependentDialects = ["::spmdc::tg::TensorGraphDialect"];
}

def TgRearrangeProducts : Pass<"tg-rearrange-products", "::mlir::ModuleOp"> {
  let summary = "Rearrange matmuls so that the GEMMs read their operands in place";
  let description = [{
    Algebra on the per-rank program that lets fewer bytes move: a
    transposed product is the product of the transposed operands,
    `(A B)^T = B^T A^T`, whose transposes the GEMM reads in place; a sum
    over batch dims of a batched product (the gradient of a weight shared
    by the batch, as the matmul VJP writes it) is one product contracting
    over the batch and `k` together, where grouping them costs less than
    the batch of products. Runs first in the lower stage, on each rank's
    local shapes (merging a sharded batch dim into a contraction before the
    shard stage would change what the collectives move), before
    `--tg-mixed-precision` converts operands and
    `--convert-tg-matmul-to-blas` reads a transpose of the last two dims as
    a flag.

    Before:
    ```mlir
    %p = tg.matmul %h, %g : tensor<4x8xf32>, tensor<8x16xf32>
    %t = tg.transpose %p perm [1, 0] : tensor<4x16xf32>
    ```
    After:
    ```mlir
    %gt = tg.transpose %g perm [1, 0] : tensor<8x16xf32>
    %ht = tg.transpose %h perm [1, 0] : tensor<4x8xf32>
    %t = tg.matmul %gt, %ht : tensor<16x8xf32>, tensor<8x4xf32>
    ```
  }];
  let dependentDialects = ["::spmdc::tg::TensorGraphDialect"];
}

def TgMixedPrecision : Pass<"tg-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Run f32 matmuls in bf16, keeping f32 weights, reductions and updates";
  let description = [{
    Mixed precision as `torch.autocast` does it for bf16: every f32
    `tg.matmul` (forward and backward) reads its operands rounded to bf16
    and its product (accumulated in f32 by the GEMM) is rounded to bf16,
    then widened back to f32. Everything else stays f32: the master
    weights, the optimizer's update and state, softmax, layer_norm and
    every other reduction, and the collectives (gradients are reduced in
    f32). `spmdc --precision=bf16` runs it first in the lower stage, on the
    per-rank program.

    Before:
    ```mlir
    %c = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32>
    ```
    After:
    ```mlir
    %a16 = tg.convert %a : tensor<4x8xf32> to tensor<4x8xbf16>
    %b16 = tg.convert %b : tensor<8x16xf32> to tensor<8x16xbf16>
    %c16 = tg.matmul %a16, %b16 : tensor<4x8xbf16>, tensor<8x16xbf16>
    %c = tg.convert %c16 : tensor<4x16xbf16> to tensor<4x16xf32>
    ```
  }];
  let dependentDialects = ["::spmdc::tg::TensorGraphDialect"];
}

def TgPrintShardingRules : Pass<"tg-print-sharding-rules", "::mlir::ModuleOp"> {
  let summary = "Test pass: attach each op's sharding rule as an attribute";
  let description = [{
    Puts `tg.sharding_rule = #tg.sharding_rule<...>` on every op that states
    one (ShardingRuleOpInterface), so that the rules the shard stage
    propagates and partitions by can be read and checked:

    ```mlir
    %y = tg.matmul %x, %w {tg.sharding_rule = #tg.sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=2, k=4} reduction={k} linear={0, 1}>} : tensor<8x4xf32>, tensor<4x2xf32>
    ```
  }];
  let dependentDialects = ["::spmdc::tg::TensorGraphDialect"];
}

def TgPrintCosts : Pass<"tg-print-costs", "::mlir::ModuleOp"> {
  let summary = "Test pass: attach each op's flops and bytes as an attribute";
  let description = [{
    Puts `tg.cost = {bytes = .., flops = ..}` on every op that states its
    cost (CostOpInterface), the figures the compile report sums:

    ```mlir
    %y = tg.matmul %x, %w {tg.cost = {bytes = 224 : i64, flops = 128 : i64}} : tensor<8x4xf32>, tensor<4x2xf32>
    ```
  }];
  let dependentDialects = ["::spmdc::tg::TensorGraphDialect"];
}

#endif // SPMDC_DIALECT_TENSORGRAPH_TRANSFORMS_PASSES_TD
