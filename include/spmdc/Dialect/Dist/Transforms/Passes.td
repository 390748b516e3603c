//===- Passes.td - sharding passes -------------------------*- tablegen -*-===//

#ifndef SPMDC_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define SPMDC_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistShard : Pass<"dist-shard", "::mlir::ModuleOp"> {
  let summary = "Shard the whole training step over the spec's mesh";
  let description = [{
    Turns the logical training step into the program one rank runs: local
    shapes and explicit collectives over named mesh axes.

    1. The shard spec gives @main's arguments their shardings (presets per
       axis, then explicit placements, which win).
    2. Propagation gives every value a sharding: forward and backward
       sweeps over each op's sharding rule (ShardingRuleOpInterface) to a
       fixpoint; a sharding is only ever made more specific; where
       operands disagree, the activation's sharding wins over a parameter's
       and a larger tensor's over a smaller one's, so the cheaper tensor
       moves.
    3. Rewriting computes each op on local shards. A contraction over a
       sharded factor leaves a partial sum, which flows through linear ops
       and is reduced only where something needs it whole: a reduce-scatter
       when it is wanted sharded, an all-reduce otherwise. Other reshards
       are local slices, all-gathers or all-to-alls.

    Results of @main come back as the arguments they update went in (so
    sharded parameters and optimizer state stay sharded across steps); the
    loss comes back replicated. Dims that do not divide evenly over their
    axes are an error naming the tensor.

    Before: `%y = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32>` with
    x sharded on dim 0 over "dp". After (per rank):
    ```mlir
    %y = tg.matmul %x, %w : tensor<4x4xf32>, tensor<4x2xf32>
    ```
  }];
  let options = [
    Option<"specFile", "spec", "std::string", "\"\"",
           "the shard spec JSON file">,
  ];
  let dependentDialects = ["::spmdc::dist::DistDialect",
                           "::spmdc::tg::TensorGraphDialect"];
}

#endif // SPMDC_DIALECT_DIST_TRANSFORMS_PASSES_TD
