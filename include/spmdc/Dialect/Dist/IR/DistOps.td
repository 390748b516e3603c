//===- DistOps.td - the distribution dialect ---------------*- tablegen -*-===//
//
// The per-rank program's collectives over named mesh axes. Every op works on
// the local tensor of the rank that runs it.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_DIALECT_DIST_IR_DISTOPS_TD
#define SPMDC_DIALECT_DIST_IR_DISTOPS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::spmdc::dist";
  let summary = "Collectives over named axes of a device mesh";
  let description = [{
    A sharded program carries the mesh as a module attribute
    `dist.mesh = {axes = ["dp", "tp"], shape = [2, 2]}`; rank r sits at the
    row-major multi-index of the mesh (last axis fastest). A collective over
    axes `A` runs within each group of ranks that agree on every axis not
    in `A`; a rank's index in its group is its multi-index on `A`, the first
    axis of `A` most significant. The arguments and results of `@main` carry
    a `dist.sharding = #dist.sharding<...>`.

    Before the program is partitioned, the mesh it will run on is
    `dist.planned_mesh`, and every value carries the sharding it is planned
    to have (with its origin): shapes are still logical, so the program
    still means the single-device step.
  }];
  let usePropertiesForAttributes = 0;
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
}

def Dist_ShardingAttr : AttrDef<Dist_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "how a logical tensor is spread over the mesh";
  let description = [{
    `dims` lists, per dim, the mesh axes that split it (the first most
    significant): the logical tensor is cut into equal chunks along each
    dim. `partial` lists the axes over which the rank's values are summands
    of the logical value. `origin` says where the sharding came from: a
    shard-spec entry (`spec /presets/dp`), the rule of the op that defines
    the value or of a user, or the caller (a callee's argument).

    A dim that its group does not divide is padded at its end to the next
    multiple of the group, and every rank holds an equal chunk of the
    padded dim (the positions past the logical size carry no value). On
    the arguments and results of a partitioned `@main`, whose types are
    local, `logical` gives the logical shape where a dim is padded.

    `parts` views a dim as that many equal parts, each split over the
    dim's axes (a strided layout, DTensor's `_StridedShard`): a fused QKV
    weight `[3d, d]` with `parts[3, 1]` over `tp` gives each rank its rows
    of q, of k and of v, in that order. Absent (or 1): the dim is cut into
    contiguous chunks.

    ```mlir
    #dist.sharding<[["dp"], []]>
    #dist.sharding<[["tp"], []] parts[3, 1]>
    #dist.sharding<[[], ["tp"]] partial ["dp"]>
    #dist.sharding<[["dp"], []] from "spec /presets/dp">
    #dist.sharding<[["dp"], []] logical[50257, 768]>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims,
                        OptionalParameter<"::mlir::ArrayAttr">:$partial,
                        OptionalArrayRefParameter<"int64_t">:$logical,
                        OptionalParameter<"::mlir::StringAttr">:$origin,
                        OptionalArrayRefParameter<"int64_t">:$parts);
  let assemblyFormat = "`<` $dims (`parts` `[` $parts^ `]`)? "
                       "(`partial` $partial^)? "
                       "(`logical` `[` $logical^ `]`)? (`from` $origin^)? `>`";
  let genVerifyDecl = 1;
}

def Dist_Phase : I32EnumAttr<"Phase", "the part of the step a collective serves", [
  I32EnumAttrCase<"forward", 0>, I32EnumAttrCase<"backward", 1>,
  I32EnumAttrCase<"optimizer", 2>]> {
  let cppNamespace = "::spmdc::dist";
  let genSpecializedAttr = 0;
}
def Dist_PhaseAttr : EnumAttr<Dist_Dialect, Dist_Phase, "phase"> {
  let summary = "the part of the step a collective serves (`phase`)";
  let assemblyFormat = "`<` $value `>`";
}

def Dist_Reduction : I32EnumAttr<"Reduction", "how an all-reduce combines the members' values", [
  I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>]> {
  let cppNamespace = "::spmdc::dist";
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

def Dist_AxesAttr : TypedArrayAttrBase<StrAttr, "mesh axis names">;

/// Collectives communicate: they are not Pure, so nothing moves or drops
/// them, and every rank runs each one in program order.
class Dist_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, traits> {
  let results = (outs AnyRankedTensor:$result);
  let hasVerifier = 1;
}

def Dist_AllReduceOp : Dist_CollectiveOp<"all_reduce",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "sum (or max) over the group; every member gets it";
  let description = [{
    Sums the members' tensors elementwise, or with `by max` takes their
    elementwise max (the max of a softmax over a split vocabulary).
    `phase` (forward, backward, optimizer) and `origin` (the tensor it
    serves) are for the compile report.

    ```mlir
    %s = dist.all_reduce %g axes ["dp"] : tensor<32x50xf32>
    %m = dist.all_reduce %x axes ["tp"] by max : tensor<4x128x1xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_AxesAttr:$axes,
                   OptionalAttr<Dist_PhaseAttr>:$phase, OptionalAttr<StrAttr>:$origin,
                   DefaultValuedAttr<Dist_Reduction, "::spmdc::dist::Reduction::sum">:$reduction);
  let assemblyFormat = "$input `axes` $axes (`by` $reduction^)? attr-dict `:` type($input)";
}

def Dist_AllGatherOp : Dist_CollectiveOp<"all_gather"> {
  let summary = "concatenate the members' tensors along a dim, in group order";
  let description = [{
    ```mlir
    %w = dist.all_gather %shard axes ["dp"] dim 0 : tensor<16x50xf32> -> tensor<32x50xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_AxesAttr:$axes,
                   I64Attr:$dim, OptionalAttr<Dist_PhaseAttr>:$phase,
                   OptionalAttr<StrAttr>:$origin);
  let assemblyFormat = "$input `axes` $axes `dim` $dim attr-dict `:` "
                       "type($input) `->` type($result)";
}

def Dist_ReduceScatterOp : Dist_CollectiveOp<"reduce_scatter"> {
  let summary = "sum over the group, member i keeps chunk i along a dim";
  let description = [{
    ```mlir
    %g = dist.reduce_scatter %full axes ["dp"] dim 0 : tensor<32x50xf32> -> tensor<16x50xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_AxesAttr:$axes,
                   I64Attr:$dim, OptionalAttr<Dist_PhaseAttr>:$phase,
                   OptionalAttr<StrAttr>:$origin);
  let assemblyFormat = "$input `axes` $axes `dim` $dim attr-dict `:` "
                       "type($input) `->` type($result)";
}

def Dist_AllToAllOp : Dist_CollectiveOp<"all_to_all"> {
  let summary = "split along one dim, exchange, concatenate along another";
  let description = [{
    Member j splits its tensor into g chunks along `split_dim` and sends
    chunk i to member i, which concatenates what it receives along
    `concat_dim` in member order: a reshard from S(concat_dim) to
    S(split_dim).

    ```mlir
    %y = dist.all_to_all %x axes ["tp"] split_dim 1 concat_dim 0 : tensor<4x8xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_AxesAttr:$axes,
                   I64Attr:$split_dim, I64Attr:$concat_dim,
                   OptionalAttr<Dist_PhaseAttr>:$phase, OptionalAttr<StrAttr>:$origin);
  let assemblyFormat = "$input `axes` $axes `split_dim` $split_dim "
                       "`concat_dim` $concat_dim attr-dict `:` type($input) "
                       "`->` type($result)";
}

def Dist_LocalSliceOp : Dist_Op<"local_slice", [Pure]> {
  let summary = "this rank's chunk along a dim (a reshard R -> S, no traffic)";
  let description = [{
    The input is the same on every member of the group; member i keeps
    chunk i of g equal chunks along `dim`.

    ```mlir
    %s = dist.local_slice %w axes ["dp"] dim 0 : tensor<32x50xf32> -> tensor<16x50xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_AxesAttr:$axes,
                   I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `axes` $axes `dim` $dim attr-dict `:` "
                       "type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Asynchronous collectives: a start and a wait (--dist-async-collectives)
//===----------------------------------------------------------------------===//

def Dist_PendingType : TypeDef<Dist_Dialect, "Pending"> {
  let mnemonic = "pending";
  let summary = "a collective under way, which dist.wait turns into its result";
  let description = [{
    What a `dist.start_*` op yields: the collective has been issued and its
    result, a tensor of type `result`, is not there yet. Only `dist.wait`
    takes it.

    ```mlir
    !dist.pending<tensor<264xf32>>
    ```
  }];
  let parameters = (ins "::mlir::RankedTensorType":$result);
  let assemblyFormat = "`<` $result `>`";
}

/// A collective's start: the same operands and attributes as its blocking
/// form, a `!dist.pending` of its result type instead of the result.
class Dist_StartOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, traits> {
  let results = (outs Dist_PendingType:$pending);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The tensor the collective yields once dist.wait has it.
    ::mlir::RankedTensorType getResultType() {
      return ::llvm::cast<PendingType>(getPending().getType()).getResult();
    }
  }];
}

def Dist_StartAllReduceOp : Dist_StartOp<"start_all_reduce"> {
  let summary = "start a dist.all_reduce; dist.wait gives its result";
  let description = [{
    `dist.all_reduce` in two halves: this op issues it (on MPI a
    non-blocking `MPI_Iallreduce`), `dist.wait` blocks until it is done
    and yields the sum. What runs between overlaps the communication. The
    input must stay as it is until the wait (the lowering reads it there
    too, so bufferization writes no buffer of it in place before then).

    ```mlir
    %p = dist.start_all_reduce %g axes ["dp"] : tensor<264xf32> -> !dist.pending<tensor<264xf32>>
    ...
    %s = dist.wait %p : !dist.pending<tensor<264xf32>>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_AxesAttr:$axes,
                   OptionalAttr<Dist_PhaseAttr>:$phase, OptionalAttr<StrAttr>:$origin,
                   DefaultValuedAttr<Dist_Reduction, "::spmdc::dist::Reduction::sum">:$reduction);
  let assemblyFormat = "$input `axes` $axes (`by` $reduction^)? attr-dict `:` "
                       "type($input) `->` qualified(type($pending))";
}

def Dist_StartAllGatherOp : Dist_StartOp<"start_all_gather"> {
  let summary = "start a dist.all_gather; dist.wait gives its result";
  let description = [{
    ```mlir
    %p = dist.start_all_gather %shard axes ["dp"] dim 0 : tensor<16x50xf32> -> !dist.pending<tensor<32x50xf32>>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_AxesAttr:$axes,
                   I64Attr:$dim, OptionalAttr<Dist_PhaseAttr>:$phase,
                   OptionalAttr<StrAttr>:$origin);
  let assemblyFormat = "$input `axes` $axes `dim` $dim attr-dict `:` "
                       "type($input) `->` qualified(type($pending))";
}

def Dist_StartReduceScatterOp : Dist_StartOp<"start_reduce_scatter"> {
  let summary = "start a dist.reduce_scatter; dist.wait gives its result";
  let description = [{
    ```mlir
    %p = dist.start_reduce_scatter %full axes ["dp"] dim 0 : tensor<32x50xf32> -> !dist.pending<tensor<16x50xf32>>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_AxesAttr:$axes,
                   I64Attr:$dim, OptionalAttr<Dist_PhaseAttr>:$phase,
                   OptionalAttr<StrAttr>:$origin);
  let assemblyFormat = "$input `axes` $axes `dim` $dim attr-dict `:` "
                       "type($input) `->` qualified(type($pending))";
}

def Dist_StartAllToAllOp : Dist_StartOp<"start_all_to_all"> {
  let summary = "start a dist.all_to_all; dist.wait gives its result";
  let description = [{
    ```mlir
    %p = dist.start_all_to_all %x axes ["tp"] split_dim 1 concat_dim 0 : tensor<4x8xf32> -> !dist.pending<tensor<8x4xf32>>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_AxesAttr:$axes,
                   I64Attr:$split_dim, I64Attr:$concat_dim,
                   OptionalAttr<Dist_PhaseAttr>:$phase, OptionalAttr<StrAttr>:$origin);
  let assemblyFormat = "$input `axes` $axes `split_dim` $split_dim "
                       "`concat_dim` $concat_dim attr-dict `:` type($input) "
                       "`->` qualified(type($pending))";
}

def Dist_WaitOp : Dist_Op<"wait", [
    TypesMatchWith<"result is the pending collective's tensor", "pending",
                   "result", "::llvm::cast<PendingType>($_self).getResult()">]> {
  let summary = "block until a started collective is done; its result";
  let description = [{
    Takes the `!dist.pending` of a `dist.start_*` op (each exactly once)
    and yields the collective's result. Every rank of the group waits for
    its collectives, in any order; the starts are issued in the same order
    on every rank, as the blocking collectives are.

    ```mlir
    %s = dist.wait %p : !dist.pending<tensor<264xf32>>
    ```
  }];
  let arguments = (ins Dist_PendingType:$pending);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$pending attr-dict `:` qualified(type($pending))";
  let hasVerifier = 1;
}

#endif // SPMDC_DIALECT_DIST_IR_DISTOPS_TD
