//===- TensorGraphInterfaces.td - interfaces of tg ops -----*- tablegen -*-===//
//
// The facts an op states about itself, so that passes ask the op rather
// than keep lists of ops: its derivative (VJP) for --tg-autodiff, its
// sharding rule for the shard stage, and the traits below.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_DIALECT_TENSORGRAPH_IR_TENSORGRAPHINTERFACES_TD
#define SPMDC_DIALECT_TENSORGRAPH_IR_TENSORGRAPHINTERFACES_TD

include "mlir/IR/OpBase.td"

def TG_VJPOpInterface : OpInterface<"VJPOpInterface"> {
  let cppNamespace = "::spmdc::tg";
  let description = [{
    Reverse-mode derivative of a single-result op: given the gradient of the
    loss with respect to the op's result, builds the gradient with respect
    to each operand, already reduced to the operand's shape where the op
    broadcast it. Operands without a derivative (integer indices, masks)
    get a null value.
  }];
  let methods = [
    InterfaceMethod<
      "Builds the operand gradients for `resultGrad` at the builder's "
      "insertion point; fills `operandGrads` with one entry per operand "
      "(null where there is none).",
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Value":$resultGrad,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

def TG_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::spmdc::tg";
  let description = [{
    How an op's dims map to shared factors, einsum-style (as in Shardy):
    sharding a factor shards every dim that spans it; a factor the result
    lacks is a contraction, whose sharding leaves a partial sum. The shard
    pass propagates shardings and plans collectives from these rules alone.
  }];
  let methods = [
    InterfaceMethod<"Returns the op's sharding rule.",
      "::spmdc::tg::ShardingRule", "getShardingRule", (ins)>,
  ];
}

def TG_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::spmdc::tg";
  let description = [{
    What an op costs to run on the shapes it has: its floating-point
    operations (a multiply-add counts 2) and the bytes it reads and writes.
    The compile report sums them over the per-rank program. By default an
    elementwise op does one operation per result element and any other op
    none (it moves or makes values); matmuls, reductions and scatters state
    their own count.
  }];
  let methods = [
    InterfaceMethod<"Returns the op's floating-point operations.",
      "int64_t", "getFlops", (ins), "",
      [{ return ::spmdc::tg::defaultFlops($_op); }]>,
    InterfaceMethod<"Returns the bytes the op reads and writes (each "
      "operand and result once).",
      "int64_t", "getBytesAccessed", (ins), "",
      [{ return ::spmdc::tg::operandAndResultBytes($_op); }]>,
  ];
}

class TG_Trait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::spmdc::tg::OpTrait";
}

/// Each result element is a function of the operands' elements at the same
/// (broadcast) index: --convert-tg-to-linalg lowers it as one
/// linalg.generic of the op's scalar body.
def TG_Elementwise : TG_Trait<"Elementwise">;
/// Cheap to compute again: the min-cut partitioner may recompute it in the
/// backward rather than save it (AOTAutograd's rule: pointwise, view and
/// factory ops; never matmuls, reductions, gathers or random numbers).
def TG_Recomputable : TG_Trait<"Recomputable">;
/// Moves or converts values without computing new ones (reshape,
/// transpose, broadcast, slice, concat, convert): an integer input's range
/// of values passes through it.
def TG_MovesValues : TG_Trait<"MovesValues">;
/// Has no derivative by nature (boolean results, factories): autodiff
/// treats its results as constants.
def TG_NoDerivative : TG_Trait<"NoDerivative">;
/// A composite that --tg-decompose rewrites into primitives: the later
/// stages never see it.
def TG_Composite : TG_Trait<"Composite">;

#endif // SPMDC_DIALECT_TENSORGRAPH_IR_TENSORGRAPHINTERFACES_TD
