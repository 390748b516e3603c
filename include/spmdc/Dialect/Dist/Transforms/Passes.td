//===- Passes.td - sharding passes -------------------------*- tablegen -*-===//
//
// The shard stage as three passes: the spec's placements as attributes,
// propagation to every value, and partitioning into the per-rank program;
// then two that fuse the parameters' collectives (FSDP's groups, DDP's
// buckets).
// Propagation only writes #dist.sharding attributes, so another one (an
// automatic search) can replace it without touching the partitioner.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define SPMDC_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistApplySpec : Pass<"dist-apply-spec", "::mlir::ModuleOp"> {
  let summary = "Put the shard spec's placements on @main as attributes";
  let description = [{
    Reads the shard spec and records it in the IR, checked against the
    graph: the mesh as the module's `dist.planned_mesh`; each argument of
    @main's sharding (presets per axis, then explicit placements, which win)
    as a `#dist.sharding` whose origin names the spec entry; and the
    sharding @main must return results in (the loss replicated, an updated
    parameter or state as it went in). A preset leaves whole a dim smaller
    than its group; a dim the group does not divide is split padded (see
    --dist-partition).

    ```mlir
    func.func @main(%x: tensor<8x4xf32> {dist.sharding =
        #dist.sharding<[["dp"], []] from "spec /batch_dims">, ...
    ```
  }];
  let options = [
    Option<"specFile", "spec", "std::string", "\"\"",
           "the shard spec JSON file">,
  ];
  let dependentDialects = ["::spmdc::dist::DistDialect"];
}

def DistPropagate : Pass<"dist-propagate", "::mlir::ModuleOp"> {
  let summary = "Give every value a sharding from the ops' sharding rules";
  let description = [{
    Starting from @main's argument shardings, forward and backward sweeps
    over each op's sharding rule (ShardingRuleOpInterface) run to a
    fixpoint; a sharding is only ever made more specific; where operands
    disagree, the activation's sharding wins over a parameter's and a
    larger tensor's over a smaller one's, so the cheaper tensor moves (on
    the axes of `dist.parameters_lead` parameters win). Functions @main
    calls get their arguments' shardings from the call. Every op gets a
    `dist.sharding` (its result's), every function argument and result
    one too, each with its origin: the spec entry, or the op whose rule
    gave it (`tg.matmul, from its operands`; `tg.add, from its result`).
    Shapes stay logical: the IR still means the single-device step.
  }];
  let dependentDialects = ["::spmdc::dist::DistDialect"];
}

def DistPartition : Pass<"dist-partition", "::mlir::ModuleOp"> {
  let summary = "The per-rank program: local shapes and explicit collectives";
  let description = [{
    Computes each op on local shards, from the shardings propagation put on
    the IR. Each op's factors take their axes from its operands as they are
    (activations before parameters, larger before smaller), then from its
    result's planned sharding; operands that disagree are resharded. A
    contraction over a sharded factor leaves a partial sum, which flows
    through linear ops and is reduced only where something needs it whole:
    a reduce-scatter when it is wanted sharded, an all-reduce otherwise.
    Other reshards are local slices, all-gathers or all-to-alls. Values are
    returned in the shardings their function's results carry.
    `dist.planned_mesh` becomes `dist.mesh`, and only @main's arguments and
    results keep a `dist.sharding`.

    A dim its group does not divide is padded at its end to the next
    multiple of the group (GSPMD's pad and mask): the pass pads a whole
    dim with zeros before splitting it, slices the padding off after
    gathering it, and masks the padding with zeros before any op sums over
    it. @main's padded arguments and results give their logical shape
    (`#dist.sharding<[["dp"], []] logical[97, 40]>`).

    Before: `%y = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32>` with
    x sharded on dim 0 over "dp". After (per rank):
    ```mlir
    %y = tg.matmul %x, %w : tensor<4x4xf32>, tensor<4x2xf32>
    ```
  }];
  let dependentDialects = ["::spmdc::dist::DistDialect",
                           "::spmdc::tg::TensorGraphDialect"];
}

def DistFsdpGroup : Pass<"dist-fsdp-group", "::mlir::ModuleOp"> {
  let summary = "One all-gather and one reduce-scatter per block or bucket of parameters";
  let description = [{
    Groups a partitioned program's parameter collectives as FSDP does:
    the all-gathers over dim 0 of a function's parameter arguments, per
    group, become one all-gather of a flat buffer of the group's shards
    (where the first of them was), and the reduce-scatters over dim 0 of
    their gradients become one (where the last was), when every member's
    result is used after it. Collectives of different phases, axes or
    element types stay apart. The fused collective's `origin` names the
    group and its `tensors` the members.

    The groups (`by`):
    - `layer` (the default, FSDP2's wrapping of each block): a block is
      the tensors whose names share the path up to its first numeric part
      (`h.0.attn.q_proj.weight` is in `h.0`); the others form the model's
      own group.
    - a size in MiB (`by=25`, `by=0.5`; FSDP1's size-based wrapping, DDP's
      `bucket_cap_mb`): buckets of consecutive tensors, in the order the
      forward first gathers them (then any others in program order), each
      closed once its tensors' full (unsharded) bytes reach the size; a
      tensor of the size or more is a bucket of its own. A bucket's
      gathers in each phase and its gradients' reduce-scatter have the
      same members. The group is named `bucket 0`, `bucket 1`, ...
    - `tensor`: nothing is grouped.

    Whatever the groups, a tensor whose full bytes reach `alone-mb` MiB (1)
    keeps its own all-gathers and reduce-scatter: a group's buffer is
    copied into (each member's rank chunks apart) and out of, and a MiB's
    copy costs more than a message's latency (GPT-2 small's ZeRO-3 step
    copied 1.7 GB a rank through its per-block groups). Split on dim 0, a
    tensor's shard and whole are its own collectives' buffers as they are.
    0 groups every size, as spmdc does for `--target=cuda`.

    Before, per rank on 2 ranks:
    ```mlir
    %a = dist.all_gather %w1 axes ["dp"] dim 0 {origin = "h.0.w1", ...} : tensor<3x4xf32> -> tensor<6x4xf32>
    %b = dist.all_gather %w2 axes ["dp"] dim 0 {origin = "h.0.w2", ...} : tensor<1x6xf32> -> tensor<2x6xf32>
    ```
    After: `tensor<18xf32> -> tensor<36xf32>` once, and each weight sliced
    out of rank 0's and rank 1's halves.
  }];
  let options = [
    Option<"by", "by", "::spmdc::dist::FsdpGroup",
           "::spmdc::dist::FsdpGroup::layer()",
           "layer (one collective per transformer block), tensor (one per "
           "tensor), or a bucket size in MiB (one per bucket of consecutive "
           "tensors of that many bytes)">,
    Option<"aloneMiB", "alone-mb", "double", "1",
           "a tensor of at least this many MiB keeps its own collectives "
           "(0: none does)">,
  ];
  let dependentDialects = ["::spmdc::dist::DistDialect",
                           "::spmdc::tg::TensorGraphDialect"];
}

def DistBucketCollectives : Pass<"dist-bucket-collectives", "::mlir::ModuleOp"> {
  let summary = "Gradient collectives in buckets: flatten, concat, one collective, split";
  let description = [{
    Fuses a partitioned program's data-parallel gradient collectives into
    buckets, as DDP's buckets and PyTorch _spmd's comm_fusion_with_concat
    do: the gradient all-reduces (backward), the gradient reduce-scatters
    of the parameters @main takes whole (ZeRO-1, ZeRO-2) and those
    parameters' all-gathers after the update (optimizer). ZeRO-3's
    parameters (those @main takes split) are --dist-fsdp-group's.

    Per function, the collectives of one kind, mesh axes, phase, element
    type and reduction are taken in program order (the backward's order of
    the gradients, the reverse of their use) and cut into buckets: the
    first closed once its full bytes (the report's payload_bytes) reach
    `first-mb` MiB (1, at most `mb`), each later one once they reach `mb`
    MiB (25, DDP's default; 0 turns the pass off). A bucket flattens its
    tensors, concatenates them, runs one collective over the same axes and
    reduction, and slices and reshapes each tensor back out; a
    reduce-scatter's or all-gather's buffer holds rank 0's chunk of every
    member, then rank 1's. The fused collective goes after the last
    member's input (and not before the first member); a member used
    before that point stays alone. Its
    `origin` is `gradient bucket N` (backward) or `parameter bucket N`
    (optimizer), numbered in program order, and `tensors` names its
    members. A bucket of one tensor is that tensor's own collective.

    A reduce-scatter or all-gather whose full bytes reach `alone-mb` MiB
    (1) stays out of the buckets, its own collective: in a rank-major
    buffer each member is copied in and out, its rank chunks apart, and a
    copy of a MiB costs more than a message's latency (GPT-2 small's
    ZeRO-1 step copied 0.8 GB a rank through its buckets). Its input and
    result are then the tensor and its shard as they are. The smaller
    ones go in buckets as above, past the large ones between them. 0
    keeps every size in buckets; spmdc does for `--target=cuda`, where a
    GPU copies a MiB in far less than a message's latency.

    Before, per rank (DDP, the backward produces fc2's gradients first):
    ```mlir
    %a = dist.all_reduce %gw2 axes ["dp"] {origin = "fc2.weight", phase = #dist.phase<backward>} : tensor<8x32xf32>
    %b = dist.all_reduce %gb2 axes ["dp"] {origin = "fc2.bias", phase = #dist.phase<backward>} : tensor<8xf32>
    ```
    After:
    ```mlir
    %f1 = tg.reshape %gw2 : tensor<8x32xf32> to tensor<256xf32>
    %buf = tg.concat %f1, %gb2 dim 0 : tensor<256xf32>, tensor<8xf32>
    %r = dist.all_reduce %buf axes ["dp"] {origin = "gradient bucket 0", phase = #dist.phase<backward>, tensors = ["fc2.weight", "fc2.bias"]} : tensor<264xf32>
    %s = tg.slice %r dim 0 start 0 end 256 step 1 : tensor<264xf32>
    %a = tg.reshape %s : tensor<256xf32> to tensor<8x32xf32>
    %b = tg.slice %r dim 0 start 256 end 264 step 1 : tensor<264xf32>
    ```
  }];
  let options = [
    Option<"bucketMiB", "mb", "double", "25",
           "the bucket size in MiB of full (unsharded) bytes; 0: no buckets">,
    Option<"firstBucketMiB", "first-mb", "double", "1",
           "the first bucket's size in MiB (at most mb)">,
    Option<"aloneMiB", "alone-mb", "double", "1",
           "a reduce-scatter or all-gather of at least this many MiB stays "
           "its own collective (0: none does)">,
  ];
  let dependentDialects = ["::spmdc::dist::DistDialect",
                           "::spmdc::tg::TensorGraphDialect"];
}

def DistAsyncCollectives : Pass<"dist-async-collectives", "::mlir::ModuleOp"> {
  let summary = "Overlap collectives with compute: start early, wait at first use";
  let description = [{
    Splits each blocking collective (all-reduce, all-gather,
    reduce-scatter, all-to-all) whose result is not used at once into a
    `dist.start_*` and a `dist.wait`: the start as soon as its input exists
    (a gradient bucket's all-reduce right after its concatenation), the
    wait just before the first op that uses the result (the optimizer's
    update), so the ops between run while the collective is under way.

    Ops that only move values (`tg.slice`, `tg.reshape`, `tg.concat`,
    ...) move with the collective: those that take tensors out of its
    result go down to their own first use, and a buffer assembled of
    values the block has from its start (a ZeRO-3 group's parameters) is
    assembled as early as they exist. Such a collective starts no earlier
    than the wait of the prefetch `prefetch-depth` before it (a prefetch:
    a collective of a value there from the start): with the default 1, one
    group ahead (FSDP's prefetch of the next layer), so the gathered
    parameters are not all alive at once; each step of depth holds one
    more group's gathered parameters; 0 starts each where it was. A
    gradient's reduce-scatter does not count, so the backward prefetches
    too. Every rank runs the same program, so every
    rank issues the collectives in the same order, as MPI and NCCL
    require. A collective with nothing to overlap (its result used by the
    next op, its input made by the op before) stays blocking. The
    collectives of one block are rewritten; a use in a nested region
    waits before the op holding it. An input and a result stay alive from
    the start to the wait: the gradients a bucket holds, once more.

    Before, per rank (DDP, one bucket):
    ```mlir
    %buf = tg.concat %f1, %gb2 dim 0 : tensor<256xf32>, tensor<8xf32>
    %x = tg.matmul %dy, %w1 : ...        // the rest of the backward
    %r = dist.all_reduce %buf axes ["dp"] : tensor<264xf32>
    %s = tg.slice %r dim 0 start 0 end 256 step 1 : tensor<264xf32>
    ```
    After:
    ```mlir
    %buf = tg.concat %f1, %gb2 dim 0 : tensor<256xf32>, tensor<8xf32>
    %p = dist.start_all_reduce %buf axes ["dp"] : tensor<264xf32> -> !dist.pending<tensor<264xf32>>
    %x = tg.matmul %dy, %w1 : ...
    %r = dist.wait %p : !dist.pending<tensor<264xf32>>
    %s = tg.slice %r dim 0 start 0 end 256 step 1 : tensor<264xf32>
    ```
  }];
  let options = [
    Option<"prefetchDepth", "prefetch-depth", "unsigned", "1",
           "how many prefetches ahead of the one waited for may be under "
           "way; 0: none">,
  ];
  let dependentDialects = ["::spmdc::dist::DistDialect"];
}

#endif // SPMDC_DIALECT_DIST_TRANSFORMS_PASSES_TD
