// RUN: spmdc-opt %s --record-buffer-peak | FileCheck %s

// The arguments (32 bytes), then: @make holds its result (64) and a
// temporary (128) at once, 192; back in @main its result stays held and
// %b adds 256 (320); the loop's buffer adds 16 while it runs: 336. The
// peak is 32 + 336. The dealloc that retains @make's result frees only %b.
// While @make runs, the most is 32 + 192.

// At the peak the step holds, besides its arguments, %b (256 bytes, named
// "grad" by its location), @make's result (64, "made", allocated in
// @make) and the loop's buffer (16, "(FILE:LINE)": no name): they sum to
// 336, the peak less the arguments.

// CHECK: module attributes {spmdc.buffer_peak_bytes = 368 : i64, spmdc.buffer_peak_bytes_in = {make = 224 : i64}, spmdc.buffer_peak_held = [
// CHECK-SAME: {buffers = 1 : i64, bytes = 256 : i64, function = "main", name = "grad"},
// CHECK-SAME: {buffers = 1 : i64, bytes = 64 : i64, function = "make", name = "made"},
// CHECK-SAME: {buffers = 1 : i64, bytes = 16 : i64, function = "main", name = "({{.*}}record-buffer-peak.mlir:{{[0-9]+}})"}]}

func.func private @make() -> memref<16xf32> {
  %true = arith.constant true
  %a = memref.alloc() : memref<16xf32> loc("made")
  %t = memref.alloc() : memref<32xf32>
  linalg.copy ins(%t : memref<32xf32>) outs(%t : memref<32xf32>)
  bufferization.dealloc (%t : memref<32xf32>) if (%true)
  return %a : memref<16xf32>
}

func.func @main(%x: memref<8xf32>) -> memref<16xf32> {
  %true = arith.constant true
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r = call @make() : () -> memref<16xf32>
  %b = memref.alloc() : memref<64xf32> loc(fused["grad", "x.py":3:1])
  scf.for %i = %c0 to %c2 step %c1 {
    %c = memref.alloc() : memref<4xf32>
    memref.dealloc %c : memref<4xf32>
  }
  %view = memref.cast %r : memref<16xf32> to memref<?xf32>
  %kept = bufferization.dealloc (%b, %view : memref<64xf32>, memref<?xf32>) if (%true, %true) retain (%r : memref<16xf32>)
  return %r : memref<16xf32>
}
