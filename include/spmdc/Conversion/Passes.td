//===- Passes.td - conversions out of the tg dialect ------*- tablegen -*-===//

#ifndef SPMDC_CONVERSION_PASSES_TD
#define SPMDC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTgToLinalg : Pass<"convert-tg-to-linalg", "::mlir::func::FuncOp"> {
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
    into a zero tensor, or, where their only reader adds them to a tensor
    of their type (a tied embedding's gradients, cross-entropy's one-hot
    term), into that tensor, replacing the add; rand_uniform computes the interpreter's counter
    generator in integer arithmetic. Composites must have been decomposed.
    Not lowered yet: the dist collectives (the pass fails on them). Runs on
    each function, so the step's functions convert in parallel.

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

def StripGraphAttributes : Pass<"strip-graph-attributes", "::mlir::ModuleOp"> {
  let summary = "Drop the graph's tg.* and dist.* argument and result attributes";
  let description = [{
    The first pass of the lower stage. The step's signature (names, roles,
    shardings of @main's arguments and results) has been read by then, and
    its attributes' values (`#tg.role<...>`, `#dist.sharding<...>`) belong
    to spmdc's dialects: without them the lowered program is IR that
    MLIR's own tools (`mlir-translate`, `mlir-runner`) read.

    Before: `func.func @main(%x: tensor<4xf32> {tg.name = "x", tg.role = #tg.role<data>})`.
    After: `func.func @main(%x: tensor<4xf32>)`.
  }];
}

def MarkDonatedArguments : Pass<"mark-donated-arguments", "::mlir::ModuleOp"> {
  let summary = "Mark the inputs an entry point may overwrite: the parameters and state it returns updated";
  let description = [{
    Runs before `--strip-graph-attributes`, while the signature's names and
    roles are there. spmd-run feeds a parameter or state that the step
    returns under its argument's role and name (on the same ranks, in the
    same type) back as the next step's argument, so the old value is dead
    once the step has read it: such an argument is donated, its buffer the
    step's to reuse (JAX's `donate_argnums`, read off the signature). It
    gets `bufferization.writable = true` and `spmdc.donated = R`, R the
    result that comes back as it; every other
    tensor argument of a public function gets `bufferization.writable =
    false`, so one-shot bufferization never writes over a data batch the
    runner keeps from step to step.

    Before: `func.func @main(%w: tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> (tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>})`.
    After: the argument also carries `bufferization.writable = true, spmdc.donated = 0 : i64`.
  }];
}

def OverwriteDeadInputs : Pass<"overwrite-dead-inputs", "::mlir::ModuleOp"> {
  let summary = "Write an elementwise op's result over an input nothing reads after it";
  let description = [{
    Runs on tensors, before one-shot bufferization. An all-parallel
    `linalg.generic` whose result goes to a `tensor.empty` (its payload not
    reading it) takes instead an input of the same type, read only at the
    result's own (permutation) indexing, when nothing reads that input, or
    a value that may share its buffer, after the op, and the input's buffer
    is fresh: a `tensor.empty`, a restrict-writable `to_tensor` of an
    alloc, followed through destination operands and calls, or an entry
    point's donated argument (`--mark-donated-arguments`). Each input goes
    to one result at most, donated arguments first: the caller holds a
    donated buffer for the whole step, so a result placed elsewhere (AdamW's
    new v over the gradient) would hold a second buffer until the step
    returns. Bufferized, the op updates that buffer in place: it stores to
    cache lines it has just read, and the step holds one buffer fewer. A
    private function's
    arguments are left to `--overwrite-donated-buffers`.

    Before:
    ```mlir
    %e = tensor.empty() : tensor<4xf32>
    %r = linalg.generic {...} ins(%x, %g : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {...}
    ```
    After (`%x` fresh, dead after it): `outs(%x : tensor<4xf32>)`.
  }];
}

def ResultsInDonatedBuffers
    : Pass<"results-in-donated-buffers", "::mlir::ModuleOp"> {
  let summary = "Make an entry point's result in the buffer of the donated argument it comes back as";
  let description = [{
    Runs on buffers, after one-shot bufferization (XLA's input/output
    aliasing). An entry point's result that is a `memref.alloc` of its
    entry block, of the type of the donated argument it comes back as
    (`spmdc.donated = R`, `--mark-donated-arguments`), is made in that
    argument's buffer instead, where every op that may read or write the
    argument's memory comes before the first that touches the result's and
    the argument escapes nowhere. Under ZeRO-1 and ZeRO-2 each rank
    all-gathers its updated parameters at the step's end into fresh
    buffers while the old ones are still held: GPT-2 small's peak was the
    arguments plus a second copy of every weight gathered alone (494 MB a
    rank). Now the gathers write over the parameters, which the step has
    finished reading. The CPU pipelines run it.

    Before:
    ```mlir
    func.func @main(%w: memref<8xf32> {spmdc.donated = 0 : i64}, %s: memref<4xf32>) -> memref<8xf32> {
      "use"(%w) : (memref<8xf32>) -> ()
      %new = memref.alloc() : memref<8xf32>
      "gather"(%s, %new) : (memref<4xf32>, memref<8xf32>) -> ()
      return %new : memref<8xf32>
    }
    ```
    After: `"gather"(%s, %w)`, `return %w`, the alloc gone.
  }];
}

def OverwriteDonatedBuffers : Pass<"overwrite-donated-buffers", "::mlir::ModuleOp"> {
  let summary = "Update donated parameters and state in their own buffers";
  let description = [{
    Runs on buffers, after one-shot bufferization. An all-parallel
    `linalg.generic` in a private function that fills a `memref.alloc`
    (first used there; its payload not reading it) from an argument of the
    same type, read only at the result's own (permutation) indexing, fills
    the argument instead, where nothing reads the argument after the op and
    every call passes an entry point's donated argument
    (`--mark-donated-arguments`) at its last use, which no other operand of
    the call may share a buffer with. This is the optimizer's update in the
    step's backward function: AdamW updates the parameters and moments
    where they lie. On tensors the same rewrite made one-shot
    bufferization's analysis of the 600-operand backward call take 8 s
    instead of 0.7 s on GPT-2 small.

    Before:
    ```mlir
    %new = memref.alloc() : memref<4xf32>
    linalg.generic {...} ins(%p, %g : memref<4xf32>, memref<4xf32>) outs(%new : memref<4xf32>) {...}
    return %new : memref<4xf32>
    ```
    After: `outs(%p : memref<4xf32>)`, `return %p`, the alloc gone.
  }];
}

def ElideSliceCopies : Pass<"elide-slice-copies", "::mlir::func::FuncOp"> {
  let summary = "A buffer copied into or out of a slice of another becomes that slice";
  let description = [{
    Runs on buffers, after one-shot bufferization. A concatenation
    bufferizes to a fresh buffer and a copy of each input into it; a slice
    taken back out and reshaped, to a copy into a fresh buffer. DDP's
    gradient buckets (`--dist-bucket-collectives`) are both: every gradient
    was copied into its bucket before the all-reduce and out of the result
    after it, GPT-2 small's whole model twice a step on every rank. Where
    nothing else touches the slice meanwhile, the copy goes and the fresh
    buffer is the slice:

    - into: a static `memref.alloc` copied whole (through shape-only views:
      reshape, collapse, expand, cast, and `scf.for` loops that yield the
      buffer they were handed, as an embedding's scatter-add gradient
      bufferizes) into a contiguous static subview of
      another, in the same block, and not used after the copy, is
      allocated in that slice, provided every other use of the host is
      after the copy or of a slice that does not overlap it;
    - out of: a static `memref.alloc` whose first use is a copy of a
      contiguous static subview of another is that slice, provided every
      other use of the host is before the copy or of a slice that does not
      overlap it.

    Neither buffer may be returned. The host is allocated as bytes, before
    the first buffer that goes into it, and it and every buffer in it
    become `memref.view`s, whose layout stays the identity (what the
    vectorizer and the calls between functions take). The CPU pipelines
    run it.

    Before:
    ```mlir
    %g = memref.alloc() : memref<2x4xf32>
    linalg.fill ins(%c : f32) outs(%g : memref<2x4xf32>)
    %bucket = memref.alloc() : memref<16xf32>
    %flat = memref.collapse_shape %g [[0, 1]] : memref<2x4xf32> into memref<8xf32>
    %slot = memref.subview %bucket[8] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1], offset: 8>>
    memref.copy %flat, %slot : memref<8xf32> to memref<8xf32, strided<[1], offset: 8>>
    ```

    After:
    ```mlir
    %bytes = memref.alloc() : memref<64xi8>
    %g = memref.view %bytes[%c32][] : memref<64xi8> to memref<2x4xf32>
    linalg.fill ins(%c : f32) outs(%g : memref<2x4xf32>)
    %bucket = memref.view %bytes[%c0][] : memref<64xi8> to memref<16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def AllReduceInPlace : Pass<"all-reduce-in-place", "::mlir::func::FuncOp"> {
  let summary = "An all-reduce whose input dies at it reduces in the input's buffer";
  let description = [{
    Runs on buffers, after one-shot bufferization (and after
    `--elide-slice-copies`). A collective is a call of the runtime's
    `spmd_collective_<dtype>` on its input's buffer and a fresh output
    buffer; the runtime's all-reduce copies the input into the output and
    reduces there. Where the input's memory is touched by nothing after
    the call and the output's by nothing before it (views and casts aside),
    both whole static allocations of one type in the call's block, the
    output's allocation goes and its uses take the input's: the runtime
    then skips the copy (it sees one buffer), and the step holds one
    buffer fewer. DDP's gradient buckets are such inputs: the whole model
    a step on every rank. A started all-reduce (`--overlap`:
    `spmd_collective_start_<dtype>` and its wait) goes in place when,
    after the start, nothing but its wait touches the input, and before
    the wait nothing but its start touches the output. The CPU pipelines
    run it.

    Before:
    ```mlir
    %in = memref.alloc() : memref<8xf32>
    linalg.fill ins(%c : f32) outs(%in : memref<8xf32>)
    %out = memref.alloc() : memref<8xf32>
    call @spmd_collective_f32(%all_reduce, %c0, %c0, %c1, %in_cast, %out_cast)
    ```

    After:
    ```mlir
    %in = memref.alloc() : memref<8xf32>
    linalg.fill ins(%c : f32) outs(%in : memref<8xf32>)
    call @spmd_collective_f32(%all_reduce, %c0, %c0, %c1, %in_cast, %in_cast2)
    ```
  }];
}

def DropReturnedArguments : Pass<"drop-returned-arguments", "::mlir::ModuleOp"> {
  let summary = "Drop a private function's results that are its own arguments' buffers";
  let description = [{
    Runs after one-shot bufferization. A private function that updated an
    argument's buffer in place returns that buffer; ownership-based
    deallocation would return a clone of it, since a function's results
    are its caller's to free. The result is dropped and each call uses the
    operand it passed (through a `memref.cast` where the types differ).
    This is MLIR's `drop-equivalent-buffer-results` kept off public
    functions, whose results are the step's signature.
  }];
}

def ReturnDonatedArguments : Pass<"return-donated-arguments", "::mlir::ModuleOp"> {
  let summary = "Return a donated argument's own buffer, not a clone of it";
  let description = [{
    Runs after ownership-based deallocation, which makes an entry point
    return a clone of an argument it returns. Where the argument is donated
    (`spmdc.donated`), its buffer holds the update already and goes back to
    the caller, which adopts a result that is an argument's buffer as that
    argument (spmd-run), so the clone goes: `%c = bufferization.clone %arg`
    used only by `func.return` and deallocations' `retain` lists becomes
    `%arg`. The `spmdc.donated` marks are removed.
  }];
}

def ConvertDistToRuntime : Pass<"convert-dist-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lower dist collectives to calls of the runtime's spmd_collective_<dtype>";
  let description = [{
    Each collective becomes a call into the runtime (`Collectives.h`), on
    buffers: the input tensor's buffer (read only), a fresh buffer for the
    result, both passed as unranked memrefs so the runtime reads their
    shapes, and constants that say what to do: the collective's kind (0
    all_reduce, 1 all_gather, 2 reduce_scatter, 3 all_to_all, 4
    local_slice), its dims, and its mesh axes as indices into the module's
    `dist.mesh`, packed four bits each, first listed axis lowest, each plus
    one. The result is the output buffer as a tensor again, so one-shot
    bufferization then treats the call's buffers like any others. Runs
    before `--convert-tg-to-linalg`.

    Before:
    ```mlir
    %s = dist.all_reduce %g axes ["dp"] : tensor<8xf32>
    ```
    After:
    ```mlir
    %in = bufferization.to_buffer %g read_only : tensor<8xf32> to memref<8xf32>
    %out = memref.alloc() : memref<8xf32>
    %i = memref.cast %in : memref<8xf32> to memref<*xf32>
    %o = memref.cast %out : memref<8xf32> to memref<*xf32>
    call @spmd_collective_f32(%c0_i32, %c0_i64, %c0_i64, %c1_i64, %i, %o)
        : (i32, i64, i64, i64, memref<*xf32>, memref<*xf32>) -> ()
    %s = bufferization.to_tensor %out restrict writable : memref<8xf32> to tensor<8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}

def ConvertTgMatmulToBlas : Pass<"convert-tg-matmul-to-blas", "::mlir::ModuleOp"> {
  let summary = "Lower f32, f64 and bf16 tg.matmul to calls of the runtime's BLAS GEMMs";
  let description = [{
    Each `tg.matmul` of f32, f64 or bf16 becomes a call of
    `spmd_matmul_f32`, `spmd_matmul_f64` or `spmd_matmul_bf16` (the
    runtime's `Blas.h`; bf16 accumulates in f32) on its operands' buffers and
    a fresh result buffer, passed as unranked memrefs; the runtime runs one
    CBLAS GEMM per batch index, broadcasting batch dims as `tg.matmul`
    does. Other element types keep `--convert-tg-to-linalg`'s loops. Runs
    before `--convert-tg-to-linalg`.

    A transpose of the last two dims feeding a GEMM is read in place (the
    call's transpose flag), through any number of them; other permutations
    stay copies. `--tg-rearrange-products`, run before, puts the transposes
    where the GEMMs read them.

    Before:
    ```mlir
    %c = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    ```
    After:
    ```mlir
    %ab = bufferization.to_buffer %a read_only : tensor<4x8xf32> to memref<4x8xf32>
    %bb = bufferization.to_buffer %b read_only : tensor<8x16xf32> to memref<8x16xf32>
    %out = memref.alloc() : memref<4x16xf32>
    call @spmd_matmul_f32(%ab_unranked, %bb_unranked, %out_unranked)
        : (memref<*xf32>, memref<*xf32>, memref<*xf32>) -> ()
    %c = bufferization.to_tensor %out restrict writable : memref<4x16xf32> to tensor<4x16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::func::FuncDialect"];
}

def PrepareLinalgForGpu : Pass<"prepare-linalg-for-gpu", "::mlir::ModuleOp"> {
  let summary = "Make bufferized linalg ready to become GPU kernels";
  let description = [{
    The first step of the CUDA lowering after bufferization, where every
    buffer is memory the device can reach (the CUDA runtime allocates with
    `cuMemAllocManaged`) except the constant globals:

    - a `memref.get_global` in a function becomes a fresh buffer that the
      host fills from the global once per use, so kernels never read host
      memory;
    - `memref.copy` between buffers becomes `linalg.copy`, so the copy is a
      kernel instead of a host loop over device memory;
    - each `linalg.generic` is interchanged so that its parallel loops come
      first, so `--convert-linalg-to-parallel-loops` gives one
      `scf.parallel` over the parallel dims with the reductions as
      sequential loops inside (a reduction over a leading dim would
      otherwise leave the whole nest on the host).

    Before:
    ```mlir
    memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
    ```
    After:
    ```mlir
    linalg.copy ins(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
}

def StripGpuObjectTimings : Pass<"strip-gpu-object-timings", "::mlir::ModuleOp"> {
  let summary = "Drop the compile times gpu-module-to-binary records";
  let description = [{
    `gpu-module-to-binary` stores, in each `gpu.object`'s properties, how
    many milliseconds the kernel took to compile (`LLVMIRToISATimeInMs`
    and other `...TimeInMs` entries). They change from run to run, so a
    module holding them does too; nothing reads them. This pass removes
    every property whose name ends in `TimeInMs`, leaving the target, the
    format, the object (the PTX) and the other properties as they were.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def UniqueKernelNames : Pass<"unique-kernel-names", "::mlir::ModuleOp"> {
  let summary = "Name each outlined kernel after its gpu.module";
  let description = [{
    After `gpu-kernel-outlining` every kernel of a function has that
    function's name plus `_kernel` and only the `gpu.module`s holding them
    are numbered, so the driver, profilers and `SPMD_CUDA_PROFILE=1` could
    not tell the kernels apart. This pass renames the kernel of each
    one-kernel `gpu.module` to the module's (unique) name and updates every
    `gpu.launch_func` that launches it.
  }];
}

def FreeAfterLastUse : Pass<"free-after-last-use", "::mlir::ModuleOp"> {
  let summary = "Free each buffer right after its last use";
  let description = [{
    `ownership-based-buffer-deallocation` frees the buffers of a block in
    one `bufferization.dealloc` at its end, so every intermediate of a
    step's backward lives until the backward returns. This pass takes each
    buffer of such a dealloc whose alias class (the buffer and the views
    made from it or it from, transitively) is neither retained nor escapes
    (returned, yielded, taken as a pointer, or passed to an op that returns
    a memref without being a view) and frees it in a dealloc of its own
    after the last op of the block that uses any member of the class.
    Buffers used in other blocks, or whose ownership condition is not known
    by then, stay where they were. The dealloc keeps what it retained: the
    buffers taken from it alias none of that. A buffer of unknown origin,
    such as a call's result, is freed through its base, which deallocation
    extracts (`memref.extract_strided_metadata`) just before the dealloc;
    the extraction moves with the free, the class being its source's: the
    saved activations `@forward` returns are freed after their last use in
    the inlined backward (`--inline-single-calls`). A buffer named twice,
    owned outright and through a loop's ownership flag (a scatter into a
    saved activation), has an extraction for each; none is a use.

    The CPU pipelines run it. The CUDA target does not yet: its frees
    return buffers to a pool, and that every later writer of a reused
    buffer is ordered after the kernels still reading it has not been
    checked on a GPU.
  }];
}

def RecordBufferPeak : Pass<"record-buffer-peak", "::mlir::ModuleOp"> {
  let summary = "Record the most bytes the step's buffers hold at once";
  let description = [{
    Runs the entry function's body in program order on its buffers, after
    deallocation is placed: a `memref.alloc` adds its bytes, a
    `bufferization.dealloc` (of what it does not retain) or `memref.dealloc`
    subtracts them, a call runs its callee (what the callee returns stays
    held), and a loop or branch adds the buffers it allocates inside while
    it runs. The highest total, plus the bytes of the entry's arguments, is
    set on the module as `spmdc.buffer_peak_bytes`; `spmdc --report` gives
    it as `peak_memory_bytes`. It is what the compiled step allocates: the
    tensor-level estimate counts values that fusion never allocates. The
    highest total while each called function runs (arguments included) is
    set as `spmdc.buffer_peak_bytes_in` (`{backward = ..., forward = ...}`;
    the report's `peak_memory_bytes_in`), which shows where the peak is
    and what a phase's own choices (--prefetch-depth) cost it. The buffers
    held at the peak, summed by name (the graph's name for the op that
    allocated them, from its location) and by the function that allocated
    them, the largest 20 and the rest as one, are set as
    `spmdc.buffer_peak_held` (the report's `peak_buffers`): with the
    arguments they make up the peak.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"main\"",
           "the function a step runs">,
  ];
}

def DropSelfRetainingDeallocs
    : Pass<"drop-self-retaining-deallocs", "::mlir::ModuleOp"> {
  let summary = "Remove deallocations that retain the one buffer they free";
  let description = [{
    `ownership-based-buffer-deallocation` threads an ownership flag through
    each loop that writes a buffer in place and puts
    `bufferization.dealloc (%m) if (%c) retain (%m)` in its body. Such an op
    frees nothing (its one buffer is retained) and returns `%c` as the
    retained buffer's ownership, so this pass replaces its result by `%c`
    and erases it; canonicalization then removes the flag from the loop,
    which `--form-gpu-kernels` can turn into a kernel. This is one case of
    `buffer-deallocation-simplification`, without the alias analysis that
    made that pass take four minutes on GPT-2 small.
  }];
}

def FormGpuKernels : Pass<"form-gpu-kernels", "::mlir::ModuleOp"> {
  let summary = "Fuse row loops and map every loop nest of a step to GPU blocks and threads";
  let description = [{
    Runs on `scf` loops over buffers (after
    `--convert-linalg-to-parallel-loops`) and leaves each compute loop nest
    as a two-level `scf.parallel` with GPU mapping attributes, ready for
    `--convert-parallel-loops-to-gpu`:

    1. Row fusion: neighbouring top-level `scf.parallel` loops whose leading
       dims have the same bounds are fused when one of them holds a
       sequential loop (a reduction) or both have the same dims, and every
       buffer they share is indexed by the shared dims at the same places
       (so iterations of the fused loop touch disjoint rows). Softmax
       (max, sum of exps, divide) and layer_norm (mean, variance,
       normalise) become one loop over rows, so one kernel each. A
       loop's dims beyond the shared ones become sequential loops.
    2. Mapping: each top-level `scf.parallel` becomes a loop over blocks
       and a loop over `block-size` threads, its dims linearised and guarded
       by a bound check; a top-level sequential loop nest that touches
       buffers (scatter_add, embedding_backward) becomes one thread of one
       block, so no step's data is touched by the host between kernels.

    Before:
    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) { ... }
    ```
    After:
    ```mlir
    scf.parallel (%b) = (%c0) to (%c1) step (%c1) {
      scf.parallel (%t) = (%c0) to (%c32) step (%c1) {
        // linear = b * 32 + t; if linear < 32: i = linear / 8, j = linear % 8
      } {mapping = [#gpu.loop_dim_map<processor = thread_x, ...>]}
    } {mapping = [#gpu.loop_dim_map<processor = block_x, ...>]}
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "threads per block">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def SplatConstantsToFills
    : Pass<"splat-constants-to-fills", "::mlir::ModuleOp"> {
  let summary = "Large splat tensor constants as linalg.fill of tensor.empty";
  let description = [{
    Bufferized, a tensor constant becomes a global of its full size in the
    module's native code, copied into a fresh buffer wherever it is written:
    GPT-2 small's scatter loops (the adjoints of its embeddings and of the
    cross-entropy's gather) start from zeros of the embedding table's and
    the logits' shapes, 258 MB of zeros read at every start and copied at
    every step. This pass makes each splat constant of at least `min-bytes`
    bytes a `linalg.fill` of a `tensor.empty`, which bufferizes to one
    allocation written once. Small constants (shapes, scalars) stay.
  }];
  let options = [
    Option<"minBytes", "min-bytes", "uint64_t", /*default=*/"4096",
           "the smallest constant, in bytes, made a fill">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FuseElementwise : Pass<"fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "MLIR's elementwise fusion without recomputing costly broadcasts, and of producers other ops read too";
  let description = [{
    `--linalg-fuse-elementwise-ops`'s patterns (a producer with one use is
    fused into its consumer; reshapes fold by expansion; constants fold),
    with one restriction: a producer that runs fewer iterations than its
    consumer (its result is broadcast) and calls a math function or
    divides is not fused, since the fused loop would recompute it for every
    element. AdamW's bias corrections (`1 - beta^step`, one `pow` per
    parameter tensor) stayed inside the per-element update loop otherwise:
    a `pow` per parameter element, a twentieth of gpt2 medium's step.
    Runs on each function (the step's functions fuse in parallel), with
    its patterns made once.

    Kept apart (the producer is rank 0, the consumer 1024 elements):
    ```mlir
    %c = linalg.generic {... iterator_types = []} ins(%beta, %step : tensor<f64>, tensor<f64>) ... {
      %p = math.powf %b, %s : f64
      ...
    } -> tensor<f64>
    %u = linalg.generic {... iterator_types = ["parallel"]} ins(%m, %c : tensor<1024xf32>, tensor<f64>) ...
    ```

    And one addition: a producer that other ops read too is fused into a
    consumer that reads it point for point (its indexing map a
    permutation, so nothing is computed twice). The fused op yields the
    producer's results as well, and the other ops read those, so the value
    is computed and stored once and the consumer no longer loads it back.
    MLIR's own pattern fuses only a producer of one use (fused otherwise,
    the producer stays for its other uses and the consumer recomputes it).
    The fused op takes the consumer's place when every other use follows
    the consumer, or else the producer's place when everything the
    consumer reads exists by then; otherwise the two stay apart, as they do
    when the consumer reads two results of the producer. These fusions run
    in one walk over each block from its end (a consumer takes in its
    producers, and theirs, before they are visited), after MLIR's
    patterns, which then run again on the fused ops alone (a producer of
    a fused op may have one use now). AdamW is
    the case in point: its new `m` and `v` are returned and read by the
    parameter's update, three loops over each parameter (40 bytes of
    traffic an element) that become one (28):
    ```mlir
    %m1 = linalg.generic ... ins(%m, %g ...)          // returned, and read by %p1
    %v1 = linalg.generic ... ins(%v, %g ...)          // returned, and read by %p1
    %p1 = linalg.generic ... ins(%p, %m1, %v1 ...)
    // becomes
    %f:3 = linalg.generic ... ins(%p, %m, %g, %v ...) // yields v1, m1, p1
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::affine::AffineDialect"];
}

def ApproximateMath : Pass<"approximate-math", "::mlir::ModuleOp"> {
  let summary = "Inline f32 math functions as MLIR's polynomial approximations";
  let description = [{
    The CPU target's f32 `math.tanh`, `math.exp`, `math.log`, `math.erf`
    and the like become MLIR's polynomial approximations (a few ulp), inline
    arithmetic instead of a libm call per element: GELU's tanh through
    glibc's tanhf and expm1f was a quarter of gpt2 medium's step. f64 math
    keeps libm. The CUDA target does not need it (libdevice).
  }];
  let dependentDialects = ["::mlir::math::MathDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

def InlineSingleCalls : Pass<"inline-single-calls", "::mlir::ModuleOp"> {
  let summary = "Inline each private function called once into its caller";
  let description = [{
    A function owns neither its arguments nor their buffers, so what a
    caller passes lives until the call returns. The min-cut partition
    hands `@backward` the forward's saved activations: called as a
    function, it held every one of them to its end (GPT-2 small: 0.33 GB
    beside the gradients at the step's peak). A private function with a
    single block whose symbol has one use, a call from another function,
    is inlined there, so that deallocation frees each value after its last
    use in the inlined body; no code is duplicated. `@forward`, which
    `@eval` calls too, stays a function. The CPU pipelines run it after
    `--dist-async-collectives`, so that the backward's collectives start
    after the forward's call, as before.

    Before:
    ```mlir
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %s = call @forward(%x) : (tensor<4xf32>) -> tensor<4xf32>
      %g = call @backward(%s) : (tensor<4xf32>) -> tensor<4xf32>
      return %g : tensor<4xf32>
    }
    func.func private @backward(%s: tensor<4xf32>) -> tensor<4xf32> {
      %g = tg.neg %s : tensor<4xf32>
      return %g : tensor<4xf32>
    }
    ```
    After (`@forward` is called by `@eval` too):
    ```mlir
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %s = call @forward(%x) : (tensor<4xf32>) -> tensor<4xf32>
      %g = tg.neg %s : tensor<4xf32>
      return %g : tensor<4xf32>
    }
    ```
  }];
}

def EarlyOptimizerUpdates : Pass<"early-optimizer-updates", "::mlir::ModuleOp"> {
  let summary = "Update each parameter as soon as its gradient is final";
  let description = [{
    The optimizer's update (the ops `--tg-optimizer` marks `tg.update`)
    follows the whole backward, so at the step's end every gradient is
    alive at once (GPT-2 small: 0.5 GB) beside what the backward still
    holds. In each single-block function, each update op moves up to just
    after the last of its operands and of the other readers of the
    arguments it reads (the parameter's last use in the backward, so that
    the update still overwrites the donated parameter in place): a
    parameter is updated, and its gradient freed, as soon as the gradient
    is final, as PyTorch's optimizer-in-backward hooks do. Update ops
    computed from arguments and other such ops alone (beta1 * m, the step
    count) move down instead, to just before their first reader, so that
    they hold no buffer from the step's start. The sums are the same.
    What needs every gradient (`--clip-grad-norm`'s norm) keeps the
    updates after it. The CPU pipelines run it after
    `--inline-single-calls`, where `@backward`'s ops are in `@main`.

    Before:
    ```mlir
    %g1 = tg.matmul ...                        // w1's gradient
    %g2 = tg.matmul ...                        // w2's gradient, later
    %m1 = tg.mul %arg_m1, %b1 {tg.update} ...
    %n1 = tg.sub %arg_w1, %g1 {tg.update} ...
    ```
    After:
    ```mlir
    %g1 = tg.matmul ...
    %m1 = tg.mul %arg_m1, %b1 {tg.update} ...
    %n1 = tg.sub %arg_w1, %g1 {tg.update} ...
    %g2 = tg.matmul ...
    ```
  }];
}

def OutlineLoopNests : Pass<"outline-loop-nests", "::mlir::ModuleOp"> {
  let summary = "Move each top-level loop nest of a function into a function of its own";
  let description = [{
    A step's functions hold thousands of loop nests, one per op. Lowering
    and compiling one huge function costs time that grows faster than its
    size (SCF-to-CF splits a block per loop; LLVM's instruction scheduler
    works on huge blocks): GPT-2 small spent 3 of its 10 compile seconds in
    SCF-to-CF. Each top-level `affine.for`, `scf.for` or `scf.parallel`
    without results, and each linalg op on buffers with at least one loop
    (outlined before deallocation and before linalg is lowered, so those
    passes see each distinct nest once), becomes a private function `@<function>_nest<N>_<kind>`
    taking the values it uses from outside (constants are cloned in, so
    bounds stay static) and a call in its place. The kind, for profiles, is
    `reduce` where the nest accumulates (a linalg op with a reduction loop,
    a store that leaves out a loop it is in, or a loop that carries values),
    else `map`, after `attention_` or
    `optimizer_` where a location in the nest names that work (a `NameLoc`
    from the attention decomposition or the optimizer pass). A nest equal to
    one of the same kind outlined before (the same loops on the same types,
    as in each layer of a model) calls that function instead: GPT-2 small's
    12 layers share their nests. Where
    every memref argument is static, the function is `llvm.bareptr`, so
    each buffer crosses the call as one pointer, not a descriptor.

    Before:
    ```mlir
    func.func @forward(%a: memref<64xf32>) {
      affine.for %i = 0 to 64 { ... %a ... }
    }
    ```
    After:
    ```mlir
    func.func @forward(%a: memref<64xf32>) {
      call @forward_nest0_map(%a) : (memref<64xf32>) -> ()
    }
    func.func private @forward_nest0_map(%a: memref<64xf32>) {
      affine.for %i = 0 to 64 { ... %a ... }
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def ParallelizeLoopNests : Pass<"parallelize-loop-nests", "::mlir::ModuleOp"> {
  let summary = "Give large outlined loop nests their outer loop's bounds as arguments, for a rank's threads";
  let description = [{
    After `--outline-loop-nests`, a nest function whose body is one
    `affine.for` with constant bounds, whose iterations are independent and
    whose work (the operations it executes, a vector counting its lanes)
    reaches `min-work` (spmdc's `--parallel-nests-min-work`), takes that loop's bounds as two trailing `index`
    arguments and is marked `spmdc.parallel_step` (the loop's step); its
    calls pass the old bounds. `--call-parallel-nests` then calls it through
    the runtime's `spmd_parallel_for`, which shares the iterations out
    among the rank's threads (`spmd-run --threads`), in contiguous chunks
    on step boundaries; on one thread it calls the nest once with the whole
    range. Iterations are independent when every memref the nest writes is
    accessed, by every load and store of the nest, with the loop's
    induction variable itself as the index of one and the same dim (a
    vector access spanning that dim spans at most the step), and the nest
    has no other side effects and makes no views. Reductions over the
    outer loop (a store that leaves it out) stay serial, so no sum changes
    its order.

    Before:
    ```mlir
    func.func private @forward_nest0_map(%a: memref<512x768xf32>, %b: memref<512x768xf32>) {
      affine.for %i = 0 to 512 { ... %a[%i, %j] ... %b[%i, %j] ... }
    }
    ```
    After:
    ```mlir
    func.func private @forward_nest0_map(%a: memref<512x768xf32>, %b: memref<512x768xf32>,
        %lo: index, %hi: index) attributes {spmdc.parallel_step = 1 : i64} {
      affine.for %i = %lo to %hi { ... }
    }
    ```
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"262144",
           "operations a nest executes at least (vector lanes counted) to "
           "be shared among threads">,
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect"];
}

def CallParallelNests : Pass<"call-parallel-nests", "::mlir::ModuleOp"> {
  let summary = "Call the nests --parallelize-loop-nests marked through spmd_parallel_for";
  let description = [{
    On LLVM IR: each `llvm.call` of a function marked `spmdc.parallel_step`
    (whose last two arguments are its outer loop's bounds) stores the other
    arguments in 8-byte slots of a stack buffer and calls
    `spmd_parallel_for(@<nest>_task, buffer, lo, hi, step)` instead;
    `@<nest>_task(ctx, lo, hi)` loads them back and calls the nest on
    [lo, hi). The mark is removed.

    Before:
    ```mlir
    llvm.call @f(%a, %b, %c0, %c512) : (!llvm.ptr, !llvm.ptr, i64, i64) -> ()
    ```
    After:
    ```mlir
    %buf = llvm.alloca %one x !llvm.array<2 x i64> : (i64) -> !llvm.ptr
    llvm.store %a, ... ; llvm.store %b, ...
    %task = llvm.mlir.addressof @f_task : !llvm.ptr
    llvm.call @spmd_parallel_for(%task, %buf, %c0, %c512, %step)
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def NumberConstantGlobals : Pass<"number-constant-globals", "::mlir::ModuleOp"> {
  let summary = "Name and place constant memref globals in the order of first use";
  let description = [{
    One-shot bufferization names each constant global after its type with a
    counter (`__constant_3xindex_2`) in the order it visits functions, which
    depends on pointer values, so two runs of spmdc could write the same
    step with different names and global order. This pass renames every
    constant `memref.global` to `__constant_<n>`, n counting first uses
    (functions in module order, operations in order), and moves them to the
    top of the module in that order: spmdc's output is the same on every run.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def VectorizeAffineLoops : Pass<"vectorize-affine-loops", "::mlir::func::FuncOp"> {
  let summary = "SIMD for affine loops: parallel ones and reductions";
  let description = [{
    Runs MLIR's affine super-vectorizer (`affine-super-vectorize` with
    `test-fastest-varying=0`: the innermost, contiguous dim, and
    reductions) on the CPU target's loops, after preparing them:

    - A reduction through memory, as linalg's loops write it (`C[i] =
      C[i] + A[i, k]` inside the loop over k), is carried in a register:
      when an innermost loop's only accesses to an allocation are one load
      and one store at the same indices that do not depend on the loop,
      and nothing else in the loop has side effects, the value is loaded
      before the loop, passed through `iter_args` and stored after it. The
      vectorizer then makes it a vector of partial sums reduced once at the
      end. Function arguments are left alone: they may alias.
    - Only loops whose loads and stores all use identity layouts are
      offered: the vectorizer reports every other candidate as an error
      ("NYI: non-trivial layout map") while leaving it scalar, which made
      successful compiles print errors.
    - Loops with fewer iterations than a vector stay scalar.
    - A loop is parallel at once when nothing in it has memory effects but
      affine loads and stores and each store meets only accesses of its
      memref with its own map and operands, one result of which is the
      loop's induction variable alone (an elementwise loop); MLIR's
      dependence analysis, a Presburger problem per pair of accesses at
      every depth, decides the rest. It was half of the pass's time.
  }];
  let options = [
    Option<"vectorSize", "vector-size", "unsigned", /*default=*/"8",
           "Lanes per vector (8 f32 lanes: one AVX2 register)">,
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect"];
}

def SplitLongBlocks : Pass<"split-long-blocks", "::mlir::ModuleOp"> {
  let summary = "Cut straight-line LLVM code into blocks of bounded length";
  let description = [{
    After `--outline-loop-nests` a step function is straight-line glue:
    allocations, memref descriptors and calls, 15,000 ops in one block of
    gpt2 medium's backward. LLVM selects instructions a block at a time and
    its schedulers grow faster than linearly in a block's length, so the
    JIT spent most of its time there. Cutting every `llvm.func` block after
    each `ops` operations with an `llvm.br` changes nothing the program
    computes (the first part dominates the rest, so no value needs a block
    argument) and bounds that cost.
  }];
  let options = [
    Option<"ops", "ops", "int64_t", /*default=*/"256",
           "operations per block at most">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def BranchlessConditionalFrees
    : Pass<"branchless-conditional-frees", "::mlir::ModuleOp"> {
  let summary = "Free owned buffers through a select instead of a branch";
  let description = [{
    The ownership-based deallocation frees a buffer where the code owns it:
    `llvm.cond_br %owned, ^free, ^next` with `^free` holding only
    `llvm.call @free(%p)`. GPT-2 small's backward had 1,985 of them, and
    the blocks they make cost LLVM's register allocator seconds of live
    range splitting. Since `free(NULL)` does nothing, each becomes
    `llvm.call @free(llvm.select %owned, %p, null)` and `^next` joins the
    block when nothing else branches to it.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def WideInterfacesThroughMemory
    : Pass<"wide-interfaces-through-memory", "::mlir::ModuleOp"> {
  let summary = "Pass a function's many arguments and results through memory";
  let description = [{
    A step's glue functions (`@main`, `@forward`, `@backward`) take and
    return every tensor of the step as a memref descriptor: GPT-2 small's
    backward has 3,500 scalar arguments and returns an aggregate of as
    many. As SSA values they are all live from entry to return, and LLVM's
    instruction selection, scheduler and register allocator cost grows
    faster than linearly in them: 30 of the JIT's 40 seconds went to these
    three functions. Each `llvm.func` whose arguments or result exceed
    `scalars` scalars gets its body moved into `@<name>_body(ptr, ptr)`,
    which loads each argument from the first pointer's struct in each block
    that uses it, and stores each field of its result into the second's
    right after it is made (when it returns once). Each call stores its
    operands right after they are made into a stack struct of its own and
    loads result fields where they are used. A private function is then
    erased; another public one keeps its signature as a call of its body.
    The functions named by `entry` (a list) are rewritten in place, without
    such a wrapper: spmd-run calls the step's entry as `void main(ptr
    arguments, ptr results)`, with its former arguments (memref
    descriptors) and result as arrays of 8-byte words, and `@eval` the same
    way (docs/module.md).

    Before:
    ```mlir
    llvm.func @f(%a: i64, ..., %z: i64) -> !llvm.struct<(i64, ..., i64)>
    ```
    After:
    ```mlir
    llvm.func @f(%a: i64, ..., %z: i64) -> !llvm.struct<(i64, ..., i64)> {
      // stores %a..%z to a stack struct, calls @f_body, loads the result
    }
    llvm.func internal @f_body(%arguments: !llvm.ptr, %results: !llvm.ptr)
    ```
  }];
  let options = [
    Option<"scalars", "scalars", "int64_t", /*default=*/"32",
           "scalars in the arguments or the result above which a function "
           "passes them through memory">,
    ListOption<"entries", "entry", "std::string",
               "the public functions rewritten in place (spmd-run's entries: "
               "the step, and its @eval)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // SPMDC_CONVERSION_PASSES_TD
