// RUN: spmdc-opt %s --split-input-file --results-in-donated-buffers | FileCheck %s

// An entry point's result built in a fresh buffer goes in the buffer of the
// donated argument it comes back as (spmdc.donated = its result number),
// where nothing touches the argument from the first op that touches the
// result on: ZeRO-1's all-gather of an updated shard writes over the
// parameter the step has done with.

func.func private @spmd_collective_f32(i32, i64, i64, i64, memref<*xf32>, memref<*xf32>)
func.func private @read(memref<*xf32>)

// CHECK-LABEL: func.func @gathered
// CHECK-SAME: (%[[W:.*]]: memref<8xf32> {spmdc.donated = 1 : i64}, %[[S:.*]]: memref<4xf32>)
// CHECK-NOT:  memref.alloc
// CHECK:      call @read
// CHECK:      %[[OUT:.*]] = memref.cast %[[W]]
// CHECK-NEXT: call @spmd_collective_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[OUT]])
// CHECK-NEXT: return %{{.*}}, %[[W]] : f32, memref<8xf32>
func.func @gathered(%w: memref<8xf32> {spmdc.donated = 1 : i64}, %s: memref<4xf32>) -> (f32, memref<8xf32>) {
  %c1 = arith.constant 1 : i32
  %c0 = arith.constant 0 : i64
  %c1_i64 = arith.constant 1 : i64
  %loss = arith.constant 0.0 : f32
  %old = memref.cast %w : memref<8xf32> to memref<*xf32>
  call @read(%old) : (memref<*xf32>) -> ()
  %new = memref.alloc() : memref<8xf32>
  %shard = memref.cast %s : memref<4xf32> to memref<*xf32>
  %out = memref.cast %new : memref<8xf32> to memref<*xf32>
  call @spmd_collective_f32(%c1, %c0, %c0, %c1_i64, %shard, %out) : (i32, i64, i64, i64, memref<*xf32>, memref<*xf32>) -> ()
  return %loss, %new : f32, memref<8xf32>
}

// -----

// Kept: the argument is read after the result is first written; the
// argument comes back as another result; the result is returned twice;
// the argument is itself returned (it escapes).

func.func private @spmd_collective_f32(i32, i64, i64, i64, memref<*xf32>, memref<*xf32>)
func.func private @read(memref<*xf32>)
func.func private @fill(memref<*xf32>)

// CHECK-LABEL: func.func @read_after
// CHECK: memref.alloc
func.func @read_after(%w: memref<8xf32> {spmdc.donated = 0 : i64}) -> memref<8xf32> {
  %new = memref.alloc() : memref<8xf32>
  %out = memref.cast %new : memref<8xf32> to memref<*xf32>
  call @fill(%out) : (memref<*xf32>) -> ()
  %old = memref.cast %w : memref<8xf32> to memref<*xf32>
  call @read(%old) : (memref<*xf32>) -> ()
  return %new : memref<8xf32>
}

// CHECK-LABEL: func.func @another_result
// CHECK: memref.alloc
func.func @another_result(%w: memref<8xf32> {spmdc.donated = 1 : i64}) -> (memref<8xf32>, memref<8xf32>) {
  %new = memref.alloc() : memref<8xf32>
  %out = memref.cast %new : memref<8xf32> to memref<*xf32>
  call @fill(%out) : (memref<*xf32>) -> ()
  %other = memref.alloc() : memref<8xf32>
  return %new, %other : memref<8xf32>, memref<8xf32>
}

// CHECK-LABEL: func.func @returned_twice
// CHECK: memref.alloc
func.func @returned_twice(%w: memref<8xf32> {spmdc.donated = 0 : i64}) -> (memref<8xf32>, memref<8xf32>) {
  %new = memref.alloc() : memref<8xf32>
  %out = memref.cast %new : memref<8xf32> to memref<*xf32>
  call @fill(%out) : (memref<*xf32>) -> ()
  return %new, %new : memref<8xf32>, memref<8xf32>
}

// CHECK-LABEL: func.func @argument_returned
// CHECK: memref.alloc
func.func @argument_returned(%w: memref<8xf32> {spmdc.donated = 0 : i64}) -> (memref<8xf32>, memref<8xf32>) {
  %new = memref.alloc() : memref<8xf32>
  %out = memref.cast %new : memref<8xf32> to memref<*xf32>
  call @fill(%out) : (memref<*xf32>) -> ()
  return %new, %w : memref<8xf32>, memref<8xf32>
}
