//===- TensorGraphInterfaces.td - interfaces of tg ops -----*- tablegen -*-===//
//
// The rules an op states about itself, so that a new op is one place to
// touch: its derivative (VJP) for --tg-autodiff.
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

#endif // SPMDC_DIALECT_TENSORGRAPH_IR_TENSORGRAPHINTERFACES_TD
