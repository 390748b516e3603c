//===- Passes.td - conversions out of the tg dialect ------*- tablegen -*-===//

#ifndef SPMDC_CONVERSION_PASSES_TD
#define SPMDC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTgToLinalg : Pass<"convert-tg-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower primitive tg ops to linalg, tensor, arith and math on tensors";
  let description = [{
    The first step of the CPU lowering: every primitive tg op becomes ops of
    MLIR's own dialects on tensors. Elementwise ops, broadcasts, reductions
    and matmuls become `linalg.generic` ops whose indexing maps state the
    NumPy broadcast (a stretched size-1 dim reads index 0), so
    `--linalg-fuse-elementwise-ops` fuses producer-consumer chains; reshape,
    slice and concat become tensor ops; embedding and gather read their
    table with `tensor.extract`; scatter_add and embedding_backward, whose
    outputs are not affine in their loops, are `scf.for` nests inserting
    into a zero tensor; rand_uniform computes the interpreter's counter
    generator in integer arithmetic. Composites must have been decomposed.
    Not lowered yet: the dist collectives (the pass fails on them).

    Before:
    ```mlir
    %c = tg.add %a, %b : tensor<4x8xf32>, tensor<8xf32>
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<4x8xf32>
    %c = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                          affine_map<(d0, d1) -> (d1)>,
                                          affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%a, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%x: f32, %y: f32, %out: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    } -> tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // SPMDC_CONVERSION_PASSES_TD
