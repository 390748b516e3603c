//===- TensorGraphOps.td - the tensor-graph dialect --------*- tablegen -*-===//
//
// The tensor-graph (`tg`) dialect holds a training graph at the level of
// PyTorch's core ATen IR: value semantics on ranked tensors, logical
// (full-size) shapes, NumPy broadcasting for elementwise ops. Composite ops
// (linear, softmax, layer_norm, ...) are decomposed into the primitives by
// `--tg-decompose`; everything after that works on primitives only.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_DIALECT_TENSORGRAPH_IR_TENSORGRAPHOPS_TD
#define SPMDC_DIALECT_TENSORGRAPH_IR_TENSORGRAPHOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "spmdc/Dialect/TensorGraph/IR/TensorGraphInterfaces.td"

//===----------------------------------------------------------------------===//
// Dialect
//===----------------------------------------------------------------------===//

def TensorGraph_Dialect : Dialect {
  let name = "tg";
  let cppNamespace = "::spmdc::tg";
  let summary = "Tensor graph of a training step, at the level of core ATen IR";
  let description = [{
    A graph is a `func.func @main` whose arguments and results carry two
    attributes: `tg.name` (the user's name for the tensor, e.g.
    `"layers.0.mlp.fc1.weight"`) and `tg.role` (`#tg.role<param>`).
    Argument roles are `param`
    (trainable), `data` (a batch input) and `state` (optimizer state);
    result roles are `loss` (a scalar), `param` and `state` (the updated
    values, fed back by name into the next step), `grad` and `output`.
    Integer data inputs may carry `tg.index_bound = N`: the values the
    runner draws for them lie in [0, N).

    ```mlir
    func.func @main(%x: tensor<8x4xf32> {tg.name = "x", tg.role = #tg.role<data>},
                    %w: tensor<2x4xf32> {tg.name = "w", tg.role = #tg.role<param>})
        -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
      %y = tg.linear %x, %w : tensor<8x4xf32>, tensor<2x4xf32>
      %l = tg.mean %y dims [0, 1] : tensor<8x2xf32>
      return %l : tensor<f32>
    }
    ```
  }];
  let usePropertiesForAttributes = 0;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let useDefaultAttributePrinterParser = 1;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def TG_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "an elementwise comparison", [
  I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
  I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
  I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::spmdc::tg";
  let genSpecializedAttr = 0;
}
def TG_ComparePredicateAttr
    : EnumAttr<TensorGraph_Dialect, TG_ComparePredicate, "predicate">;

def TG_Role : I32EnumAttr<"Role", "what a tensor of the step is", [
  I32EnumAttrCase<"param", 0>, I32EnumAttrCase<"data", 1>,
  I32EnumAttrCase<"state", 2>, I32EnumAttrCase<"loss", 3>,
  I32EnumAttrCase<"output", 4>, I32EnumAttrCase<"grad", 5>,
  I32EnumAttrCase<"hyper", 6>]> {
  let cppNamespace = "::spmdc::tg";
  let genSpecializedAttr = 0;
}
def TG_RoleAttr : EnumAttr<TensorGraph_Dialect, TG_Role, "role"> {
  let summary = "the role of a graph's argument or result (`tg.role`)";
  let assemblyFormat = "`<` $value `>`";
}

def TG_ShardingRuleAttr : AttrDef<TensorGraph_Dialect, "ShardingRule"> {
  let mnemonic = "sharding_rule";
  let summary = "an op's dims as shared factors (ShardingRuleOpInterface)";
  let description = [{
    The printed form of a sharding rule, in the notation of Shardy's
    `#sdy.op_sharding_rule`: each operand's and result's dims as the
    factors they span (`ij`: factors i and j, major first; `1`: a dim of
    size 1 that spans none), the factor sizes, then the factors no result
    has (`reduction`: sharding one leaves a partial sum), those that must
    stay whole (`need_replication`), and how partial sums pass through the
    op: `partial=all` (every operand partial alike, as in add) or
    `linear={...}` (the operands the result is linear in, one at a time).
    `combine=max` says a sharded reduction factor is combined by an
    all-reduce of the max, not left as a partial sum; `indexed={j=1}` says
    the values of operand 1 address the positions of factor j (a gather's
    table), so that a rank holding a block of j serves the indices in it.

    ```mlir
    #tg.sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=2, k=4} reduction={k} linear={0, 1}>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$factorSizes,
    "::mlir::ArrayAttr":$operands,
    "::mlir::ArrayAttr":$results,
    ArrayRefParameter<"int32_t">:$needReplication,
    "::spmdc::tg::ShardingRule::Partial":$partial,
    ArrayRefParameter<"int32_t">:$linearIn,
    "::spmdc::tg::ShardingRule::Combine":$combine,
    ArrayRefParameter<"int32_t">:$indexed);
  let hasCustomAssemblyFormat = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def TG_FloatElement : AnyTypeOf<[F16, BF16, F32, F64]>;
def TG_Element : AnyTypeOf<[F16, BF16, F32, F64, I64, I32, I1]>;
// Shapes are static: a graph is traced with logical, full-size shapes.
def TG_Tensor : StaticShapeTensorOf<[F16, BF16, F32, F64, I64, I32, I1]>;
def TG_FloatTensor : StaticShapeTensorOf<[F16, BF16, F32, F64]>;
def TG_NumericTensor : StaticShapeTensorOf<[F16, BF16, F32, F64, I64, I32]>;
def TG_IndexTensor : StaticShapeTensorOf<[I64, I32]>;
def TG_BoolTensor : StaticShapeTensorOf<[I1]>;

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

/// Every op states its sharding rule (ShardingRules.cpp, or the base
/// classes below for the elementwise, binary and reduction families) and
/// its cost (the interface's default, or `Costs.cpp` for the ops that name
/// `getFlops` in `costs`).
class TG_Op<string mnemonic, list<Trait> traits = [],
            list<string> costs = []>
    : Op<TensorGraph_Dialect, mnemonic, !listconcat(traits,
          [DeclareOpInterfaceMethods<TG_ShardingRuleOpInterface>,
           DeclareOpInterfaceMethods<TG_CostOpInterface, costs>])>;

/// Ops whose result type follows from operands and attributes; the C++
/// `inferReturnTypes` is the single statement of the op's shape rule and the
/// verifier checks a written result type against it.
class TG_InferredOp<string mnemonic, list<Trait> traits = [],
                    list<string> costs = []>
    : TG_Op<mnemonic, !listconcat(traits, [Pure,
          DeclareOpInterfaceMethods<InferTypeOpInterface>, InferTypeOpAdaptor]),
            costs>;

/// Ops with a derivative implement `buildVJP` in VJPRules.cpp.
def VJPOpInterface : DeclareOpInterfaceMethods<TG_VJPOpInterface>;

/// Elementwise ops state how partial sums pass through them: `linearIn`
/// lists the operands the result is linear in, one at a time (mul: both;
/// div: the numerator), and `linearInAll` marks a result linear in all
/// operands together (add, sub).
class TG_UnaryOp<string mnemonic, Type operandType, string desc,
                 list<Trait> traits = [], list<int> linearIn = []>
    : TG_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
                                           TG_Elementwise, TG_Recomputable])> {
  let summary = "elementwise " # mnemonic;
  let description = desc # [{

Example:
```mlir
%y = tg.}] # mnemonic # [{ %x : tensor<4x8xf32>
```
}];
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let extraClassDefinition = [{
    ::spmdc::tg::ShardingRule $cppClass::getShardingRule() {
      return elementwiseShardingRule(getOperation(), false, {}] #
      !interleave(linearIn, ", ") # [{});
    }
  }];
}

class TG_BinaryOp<string mnemonic, Type operandType, string desc,
                  list<Trait> traits = [], list<int> linearIn = [],
                  bit linearInAll = 0>
    : TG_InferredOp<mnemonic, !listconcat(traits, [TG_Elementwise,
                                                   TG_Recomputable])> {
  let summary = "elementwise " # mnemonic # " with NumPy broadcasting";
  let description = desc # [{ Both operands have the same element type;
their shapes broadcast NumPy-style (right-aligned, a dim of 1 stretches).

Example:
```mlir
%c = tg.}] # mnemonic # [{ %a, %b : tensor<4x8xf32>, tensor<8xf32>
```
}];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return inferBroadcastResult(loc, {adaptor.getLhs(), adaptor.getRhs()},
                                  /*elementType=*/nullptr, types);
    }
    ::spmdc::tg::ShardingRule $cppClass::getShardingRule() {
      return elementwiseShardingRule(getOperation(), }] #
      !if(linearInAll, "true", "false") # [{, {}] #
      !interleave(linearIn, ", ") # [{});
    }
  }];
}

class TG_ReductionOp<string mnemonic, Type operandType, string desc,
                     list<Trait> traits = []>
    : TG_InferredOp<mnemonic, traits, ["getFlops"]> {
  let summary = mnemonic # " over dims, with optional keepdim";
  let description = desc # [{ `dims` lists distinct dims to reduce (negative
counts from the back); with `keepdim` they stay as size 1.

Example:
```mlir
%r = tg.}] # mnemonic # [{ %x dims [1] keepdim : tensor<4x8xf32>
```
}];
  let arguments = (ins operandType:$input, DenseI64ArrayAttr:$dims,
                   UnitAttr:$keepdim);
  let results = (outs operandType:$result);
  let assemblyFormat =
      "$input `dims` $dims (`keepdim` $keepdim^)? attr-dict `:` type($input)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      if (!adaptor.getDimsAttr())
        return ::mlir::emitOptionalError(loc, "requires attribute 'dims'");
      return inferReductionResult(loc, adaptor.getInput(), adaptor.getDims(),
                                  adaptor.getKeepdim(), types);
    }
    ::spmdc::tg::ShardingRule $cppClass::getShardingRule() {
      return reductionShardingRule(getOperation(), getDims(), getKeepdim());
    }
    int64_t $cppClass::getFlops() {
      return elementsOfInput(getOperation());
    }
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise unary primitives
//===----------------------------------------------------------------------===//

def TG_NegOp : TG_UnaryOp<"neg", TG_NumericTensor, "Negation: `-x`.", [VJPOpInterface], [0]>;
def TG_AbsOp : TG_UnaryOp<"abs", TG_NumericTensor, "Absolute value.", [VJPOpInterface]>;
def TG_ExpOp : TG_UnaryOp<"exp", TG_FloatTensor, "Exponential `e^x`.", [VJPOpInterface]>;
def TG_LogOp : TG_UnaryOp<"log", TG_FloatTensor, "Natural logarithm.", [VJPOpInterface]>;
def TG_SqrtOp : TG_UnaryOp<"sqrt", TG_FloatTensor, "Square root.", [VJPOpInterface]>;
def TG_RsqrtOp : TG_UnaryOp<"rsqrt", TG_FloatTensor,
                            "Reciprocal square root `1/sqrt(x)`.", [VJPOpInterface]>;
def TG_ReciprocalOp : TG_UnaryOp<"reciprocal", TG_FloatTensor,
                                 "Reciprocal `1/x`.", [VJPOpInterface]>;
def TG_TanhOp : TG_UnaryOp<"tanh", TG_FloatTensor, "Hyperbolic tangent.", [VJPOpInterface]>;
def TG_ErfOp : TG_UnaryOp<"erf", TG_FloatTensor, "Gauss error function.", [VJPOpInterface]>;
def TG_SigmoidOp : TG_UnaryOp<"sigmoid", TG_FloatTensor,
                              "Logistic sigmoid `1/(1+e^-x)`.", [VJPOpInterface]>;
def TG_SinOp : TG_UnaryOp<"sin", TG_FloatTensor, "Sine.", [VJPOpInterface]>;
def TG_CosOp : TG_UnaryOp<"cos", TG_FloatTensor, "Cosine.", [VJPOpInterface]>;
def TG_ReluOp : TG_UnaryOp<"relu", TG_NumericTensor, "Rectifier `max(x, 0)`.", [VJPOpInterface]>;
def TG_NotOp : TG_UnaryOp<"not", TG_BoolTensor, "Logical negation of i1.", [TG_NoDerivative]>;
// Rounding: piecewise constant, so their derivative is zero where it
// exists (PyTorch's too).
def TG_FloorOp : TG_UnaryOp<"floor", TG_FloatTensor,
                            "The largest integer not above `x`.", [TG_NoDerivative]>;
def TG_CeilOp : TG_UnaryOp<"ceil", TG_FloatTensor,
                           "The smallest integer not below `x`.", [TG_NoDerivative]>;
def TG_TruncOp : TG_UnaryOp<"trunc", TG_FloatTensor,
                            "`x` rounded toward zero.", [TG_NoDerivative]>;
def TG_RoundOp : TG_UnaryOp<"round", TG_FloatTensor,
                            "`x` rounded to the nearest integer, halves to even (torch.round).",
                            [TG_NoDerivative]>;

//===----------------------------------------------------------------------===//
// Elementwise binary primitives
//===----------------------------------------------------------------------===//

def TG_AddOp : TG_BinaryOp<"add", TG_NumericTensor, "Sum `a + b`.", [VJPOpInterface], [], 1>;
def TG_SubOp : TG_BinaryOp<"sub", TG_NumericTensor, "Difference `a - b`.", [VJPOpInterface], [], 1>;
def TG_MulOp : TG_BinaryOp<"mul", TG_NumericTensor, "Product `a * b`.", [VJPOpInterface], [0, 1]>;
def TG_DivOp : TG_BinaryOp<"div", TG_NumericTensor,
    "Quotient `a / b` (integer division truncates toward zero).", [VJPOpInterface],
    [0]>;
def TG_RemOp : TG_BinaryOp<"rem", TG_NumericTensor,
    "Remainder of `a / b` truncated toward zero, with `a`'s sign (C's fmod, torch.fmod).",
    [VJPOpInterface]>;
def TG_PowOp : TG_BinaryOp<"pow", TG_FloatTensor, "Power `a ^ b`.", [VJPOpInterface]>;
def TG_MaximumOp : TG_BinaryOp<"maximum", TG_NumericTensor,
                               "Elementwise maximum.", [VJPOpInterface]>;
def TG_MinimumOp : TG_BinaryOp<"minimum", TG_NumericTensor,
                               "Elementwise minimum.", [VJPOpInterface]>;
def TG_AndOp : TG_BinaryOp<"and", TG_BoolTensor, "Logical and of i1.", [TG_NoDerivative]>;
def TG_OrOp : TG_BinaryOp<"or", TG_BoolTensor, "Logical or of i1.", [TG_NoDerivative]>;

def TG_CompareOp : TG_InferredOp<"compare", [TG_Elementwise, TG_Recomputable,
                                               TG_NoDerivative]> {
  let summary = "elementwise comparison with broadcasting, giving i1";
  let description = [{
    `predicate` is one of eq, ne, lt, le, gt, ge (on floats ordered, but
    ne is true for NaN, as IEEE `!=` is). Operands have the same element
    type and broadcast; the result has i1 elements.

    ```mlir
    %m = tg.compare lt, %a, %b : tensor<4x4xi64>, tensor<4x4xi64>
    ```
  }];
  let arguments = (ins TG_ComparePredicateAttr:$predicate, TG_Tensor:$lhs,
                       TG_Tensor:$rhs);
  let results = (outs TG_BoolTensor:$result);
  let assemblyFormat =
      "$predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def TG_SelectOp : TG_InferredOp<"select", [VJPOpInterface, TG_Elementwise,
                                            TG_Recomputable]> {
  let summary = "elementwise `cond ? a : b` with broadcasting (torch.where)";
  let description = [{
    ```mlir
    %r = tg.select %mask, %a, %b : tensor<4x4xi1>, tensor<4x4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins TG_BoolTensor:$condition, TG_Tensor:$on_true,
                   TG_Tensor:$on_false);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$condition `,` $on_true `,` $on_false attr-dict `:` "
                       "type($condition) `,` type($on_true) `,` type($on_false)";
}

def TG_ConvertOp : TG_Op<"convert", [Pure, VJPOpInterface, TG_Elementwise,
                                     TG_Recomputable, TG_MovesValues]> {
  let summary = "element type conversion (torch _to_copy with a dtype)";
  let description = [{
    Same shape, new element type. Float to integer truncates toward zero;
    anything to i1 is `x != 0`.

    ```mlir
    %h = tg.convert %x : tensor<4xf32> to tensor<4xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def TG_SumOp : TG_ReductionOp<"sum", TG_NumericTensor, "Sum.", [VJPOpInterface]>;
def TG_MaxOp : TG_ReductionOp<"max", TG_NumericTensor, "Maximum (amax).", [VJPOpInterface]>;
def TG_MeanOp : TG_ReductionOp<"mean", TG_FloatTensor,
    "Arithmetic mean; a composite: decomposes to `sum` times `1/n`.",
    [TG_Composite]>;

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def TG_MatmulOp : TG_InferredOp<"matmul", [VJPOpInterface], ["getFlops"]> {
  let summary = "batched matrix product with broadcast batch dims";
  let description = [{
    `lhs` is `[..., m, k]`, `rhs` is `[..., k, n]`, both of rank 2 or more;
    the leading batch dims broadcast; the result is `[..., m, n]`. Covers
    aten.mm, aten.bmm and aten.matmul.

    ```mlir
    %c = tg.matmul %a, %b : tensor<2x8x16xf32>, tensor<16x4xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def TG_ReshapeOp : TG_Op<"reshape", [Pure, VJPOpInterface, TG_Recomputable, TG_MovesValues]> {
  let summary = "reshape to a new static shape with the same element count";
  let description = [{
    Row-major reinterpretation (aten.view / aten.reshape).

    ```mlir
    %r = tg.reshape %x : tensor<2x3x4xf32> to tensor<6x4xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def TG_TransposeOp : TG_InferredOp<"transpose", [VJPOpInterface, TG_Recomputable,
                                             TG_MovesValues]> {
  let summary = "permute dims (aten.permute / aten.transpose / aten.t)";
  let description = [{
    Result dim `i` is input dim `permutation[i]`.

    ```mlir
    %t = tg.transpose %x perm [1, 0] : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input `perm` $permutation attr-dict `:` type($input)";
}

def TG_BroadcastOp : TG_Op<"broadcast", [Pure, VJPOpInterface, TG_Recomputable, TG_MovesValues]> {
  let summary = "broadcast to a larger shape (aten.expand)";
  let description = [{
    NumPy rule: the input's dims align with the trailing result dims and
    each is either equal or 1.

    ```mlir
    %b = tg.broadcast %x : tensor<1x8xf32> to tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def TG_SliceOp : TG_InferredOp<"slice", [VJPOpInterface, TG_Recomputable,
                                             TG_MovesValues]> {
  let summary = "strided slice of one dim (aten.slice.Tensor)";
  let description = [{
    Keeps indices `start, start+step, ...` below `end` of dim `dim`;
    `0 <= start <= end <= size`, `step >= 1`.

    ```mlir
    %s = tg.slice %x dim 1 start 0 end 4 step 1 : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, I64Attr:$dim, I64Attr:$start,
                   I64Attr:$end, I64Attr:$step);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input `dim` $dim `start` $start `end` $end `step` "
                       "$step attr-dict `:` type($input)";
}

def TG_ConcatOp : TG_InferredOp<"concat", [VJPOpInterface, TG_Recomputable,
                                             TG_MovesValues]> {
  let summary = "concatenate along a dim (aten.cat)";
  let description = [{
    ```mlir
    %c = tg.concat %a, %b dim 1 : tensor<2x3xf32>, tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Variadic<TG_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$inputs `dim` $dim attr-dict `:` type($inputs)";
}

def TG_EmbeddingOp : TG_InferredOp<"embedding", [VJPOpInterface]> {
  let summary = "row lookup `weight[indices]` (aten.embedding)";
  let description = [{
    `weight` is `[V, D]`, `indices` any shape of integers in [0, V); the
    result is `indices.shape + [D]`. With `padding_idx` (PyTorch's), row
    `padding_idx` of the weight gets no gradient: positions holding it
    contribute nothing to the weight's gradient.

    ```mlir
    %e = tg.embedding %wte, %tokens : tensor<64x16xf32>, tensor<2x8xi64>
    %p = tg.embedding %wte, %tokens padding_idx 0 : tensor<64x16xf32>, tensor<2x8xi64>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$weight, TG_IndexTensor:$indices,
                   OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$weight `,` $indices (`padding_idx` $padding_idx^)? "
                       "attr-dict `:` type($weight) `,` type($indices)";
}

def TG_GatherOp : TG_InferredOp<"gather", [VJPOpInterface]> {
  let summary = "gather along a dim (aten.gather / take_along_dim)";
  let description = [{
    `result[i..., j, k...] = input[i..., index[i..., j, k...], k...]` for
    dim `dim`; `index` has the rank of `input` and sizes no larger than it
    off `dim`; the result has the shape of `index`.

    ```mlir
    %g = tg.gather %logp, %idx dim 1 : tensor<8x10xf32>, tensor<8x1xi64>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, TG_IndexTensor:$index, I64Attr:$dim);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input `,` $index `dim` $dim attr-dict `:` "
                       "type($input) `,` type($index)";
}

def TG_ScatterAddOp : TG_Op<"scatter_add", [Pure, VJPOpInterface],
                            ["getFlops"]> {
  let summary = "scatter-add into zeros along a dim (gather's adjoint)";
  let description = [{
    Result has the written type; `result[i..., index[i..., j, k...], k...]
    += source[i..., j, k...]` along `dim`. `index` and `source` have the
    same shape and the rank of the result. Used by the VJP of `gather`.

    ```mlir
    %s = tg.scatter_add %idx, %src dim 1 : tensor<8x1xi64>, tensor<8x1xf32> to tensor<8x10xf32>
    ```
  }];
  let arguments = (ins TG_IndexTensor:$index, TG_FloatTensor:$source,
                   I64Attr:$dim);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$index `,` $source `dim` $dim attr-dict `:` "
                       "type($index) `,` type($source) `to` type($result)";
  let hasVerifier = 1;
}

def TG_EmbeddingBackwardOp : TG_Op<"embedding_backward",
                                   [Pure, VJPOpInterface], ["getFlops"]> {
  let summary = "sum rows of `grad` into a [V, D] table (embedding's adjoint)";
  let description = [{
    `result[v] = sum of grad[i...] over positions where indices[i...] == v`;
    `grad` is `indices.shape + [D]`. The VJP of `embedding`.

    ```mlir
    %g = tg.embedding_backward %gy, %tok : tensor<2x8x16xf32>, tensor<2x8xi64> to tensor<64x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_IndexTensor:$indices);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $indices attr-dict `:` type($grad) `,` "
                       "type($indices) `to` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tensor factories
//===----------------------------------------------------------------------===//

def TG_IotaOp : TG_Op<"iota", [Pure, TG_Recomputable, TG_NoDerivative]> {
  let summary = "0, 1, 2, ... along one dim (aten.arange, broadcast)";
  let description = [{
    ```mlir
    %i = tg.iota dim 1 : tensor<4x8xi64>
    ```
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs TG_NumericTensor:$result);
  let assemblyFormat = "`dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_FullOp : TG_Op<"full", [Pure, TG_Recomputable, TG_NoDerivative]> {
  let summary = "a tensor filled with one value (aten.full, zeros, ones)";
  let description = [{
    `value` is stored as f64 and converted to the element type (it may be
    `inf` or `-inf` for floats).

    ```mlir
    %z = tg.full 0.0 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

def TG_ConstantOp : TG_InferredOp<"constant", [ConstantLike, TG_Recomputable,
                                                TG_NoDerivative]> {
  let summary = "a literal tensor";
  let description = [{
    ```mlir
    %c = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$value attr-dict";
  // Its value, for MLIR's constant handling (ConstantLike ops must fold).
  let hasFolder = 1;
}

def TG_RandUniformOp : TG_Op<"rand_uniform", [Pure, TG_NoDerivative]> {
  let summary = "counter-based uniform [0, 1) values";
  let description = [{
    Element `i` (row-major logical index) is a hash of (`seed`, `i`), so the
    value of an element does not depend on how the tensor is sharded.

    ```mlir
    %u = tg.rand_uniform seed 7 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins I64Attr:$seed);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "`seed` $seed attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Composites (decomposed by --tg-decompose)
//===----------------------------------------------------------------------===//

def TG_LinearOp : TG_InferredOp<"linear", [TG_Composite], ["getFlops"]> {
  let summary = "`x @ weight^T + bias` (aten.linear)";
  let description = [{
    `input` is `[..., in]`, `weight` is `[out, in]`, the optional `bias` is
    `[out]`; the result is `[..., out]`.

    ```mlir
    %y = tg.linear %x, %w, %b : tensor<8x50xf32>, tensor<32x50xf32>, tensor<32xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                   Optional<TG_FloatTensor>:$bias);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` "
                       "type($input) `,` type($weight) (`,` type($bias)^)?";
}

class TG_SoftmaxLikeOp<string mnemonic, string desc>
    : TG_InferredOp<mnemonic, [TG_Composite]> {
  let summary = desc;
  let description = [{
    Computed stably (the max along `dim` is subtracted first).

    ```mlir
    %p = tg.}] # mnemonic # [{ %x dim -1 : tensor<4x10xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, I64Attr:$dim);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict `:` type($input)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      if (!adaptor.getDimAttr())
        return ::mlir::emitOptionalError(loc, "requires attribute 'dim'");
      return inferSameAsInputWithDim(loc, adaptor.getInput(), adaptor.getDim(),
                                     types);
    }
    ::spmdc::tg::ShardingRule $cppClass::getShardingRule() {
      return replicatedShardingRule(getOperation());
    }
  }];
}

def TG_SoftmaxOp : TG_SoftmaxLikeOp<"softmax", "softmax along a dim">;
def TG_LogSoftmaxOp : TG_SoftmaxLikeOp<"log_softmax",
                                       "log of softmax along a dim">;

def TG_LayerNormOp : TG_InferredOp<"layer_norm", [TG_Composite]> {
  let summary = "layer normalization over the trailing dims of `weight`";
  let description = [{
    Normalizes over the last `rank(weight)` dims (biased variance), then
    scales by `weight` and shifts by `bias` (aten.layer_norm).

    ```mlir
    %y = tg.layer_norm %x, %g, %b eps 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                   TG_FloatTensor:$bias, F64Attr:$eps);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight `,` $bias `eps` $eps attr-dict `:` "
                       "type($input) `,` type($weight) `,` type($bias)";
}

def TG_RmsNormOp : TG_InferredOp<"rms_norm", [TG_Composite]> {
  let summary = "RMS normalization over the trailing dims of `weight`";
  let description = [{
    `x * rsqrt(mean(x^2) + eps) * weight` over the last `rank(weight)` dims.

    ```mlir
    %y = tg.rms_norm %x, %g eps 1.0e-06 : tensor<2x8x16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                   F64Attr:$eps);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight `eps` $eps attr-dict `:` "
                       "type($input) `,` type($weight)";
}

def TG_GeluOp : TG_Op<"gelu", [Pure, SameOperandsAndResultType, TG_Composite,
                             TG_Recomputable]> {
  let summary = "GELU, exact (erf) or tanh approximation";
  let description = [{
    `approximate` is "none" (`x/2 * (1 + erf(x/sqrt 2))`) or "tanh"
    (`x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`).

    ```mlir
    %y = tg.gelu %x approximate "tanh" : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input,
                   DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat =
      "$input (`approximate` $approximate^)? attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def TG_SiluOp : TG_UnaryOp<"silu", TG_FloatTensor,
                           "SiLU (swish): `x * sigmoid(x)`. A composite.",
                           [TG_Composite]>;

def TG_CrossEntropyOp : TG_InferredOp<"cross_entropy", [TG_Composite]> {
  let summary = "mean cross-entropy of logits against integer labels";
  let description = [{
    `logits` is `[..., C]`, `labels` is `[...]` with values in [0, C); the
    result is the scalar mean over all positions of
    `logsumexp(logits) - logits[label]`.

    ```mlir
    %l = tg.cross_entropy %logits, %labels : tensor<16x64xf32>, tensor<16xi64>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$logits, TG_IndexTensor:$labels);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat =
      "$logits `,` $labels attr-dict `:` type($logits) `,` type($labels)";
}

def TG_ScaledDotProductAttentionOp
    : TG_InferredOp<"sdpa", [TG_Composite], ["getFlops"]> {
  let summary = "scaled dot-product attention, optionally causal, with GQA";
  let description = [{
    `query` is `[B, H, S, D]`, `key` `[B, Hkv, S2, D]`, `value`
    `[B, Hkv, S2, Dv]` where `Hkv` divides `H` (grouped-query attention:
    query head `h` reads kv head `h / (H / Hkv)`). The result is
    `[B, H, S, Dv]` = `softmax(q k^T * scale + mask) v`, where `scale`
    defaults to `1/sqrt(D)` and `causal` masks key positions after the
    query position. The optional `mask` broadcasts to `[B, H, S, S2]`
    (PyTorch's `attn_mask`): an i1 mask keeps the positions where it is
    true, a float mask is added to the scores; with `causal` both apply.

    ```mlir
    %o = tg.sdpa %q, %k, %v causal : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
    %m = tg.sdpa %q, %k, %v mask %keep : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x8x8xi1>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$query, TG_FloatTensor:$key,
                   TG_FloatTensor:$value, Optional<TG_Tensor>:$mask,
                   UnitAttr:$causal, OptionalAttr<F64Attr>:$scale);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$query `,` $key `,` $value (`mask` $mask^)? "
      "(`causal` $causal^)? (`scale` $scale^)? attr-dict `:` type($query) "
      "`,` type($key) `,` type($value) (`,` type($mask)^)?";
}

def TG_DropoutOp : TG_Op<"dropout", [Pure, SameOperandsAndResultType,
                                   TG_Composite]> {
  let summary = "training-mode dropout with a counter-based mask";
  let description = [{
    Zeroes each element with probability `p` and scales the rest by
    `1/(1-p)`; the mask is `rand_uniform seed >= p`, so it is the same
    however the tensor is sharded.

    ```mlir
    %y = tg.dropout %x p 1.0e-01 seed 3 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, F64Attr:$p, I64Attr:$seed);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input `p` $p `seed` $seed attr-dict `:` type($input)";
  let hasVerifier = 1;
}

#endif // SPMDC_DIALECT_TENSORGRAPH_IR_TENSORGRAPHOPS_TD
