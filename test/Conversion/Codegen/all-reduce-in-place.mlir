// RUN: spmdc-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(all-reduce-in-place))' | FileCheck %s

// The runtime's blocking collective: kind (0 all-reduce, 1 all-gather,
// 5 all-reduce-max), dim, dim2, mesh axes, input, output.
func.func private @spmd_collective_f32(i32, i64, i64, i64, memref<*xf32>, memref<*xf32>)

func.func private @use(memref<*xf32>)

// An input read by nothing after the all-reduce: the output is its buffer.
// CHECK-LABEL: func.func @dies_at_the_call
// CHECK: %[[IN:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NOT: memref.alloc
// CHECK: %[[A:.*]] = memref.cast %[[IN]]
// CHECK: %[[B:.*]] = memref.cast %[[IN]]
// CHECK: call @spmd_collective_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[A]], %[[B]])
// CHECK: %[[C:.*]] = memref.cast %[[IN]]
// CHECK: call @use(%[[C]])
func.func @dies_at_the_call(%c: f32) {
  %kind = arith.constant 0 : i32
  %z = arith.constant 0 : i64
  %axes = arith.constant 1 : i64
  %in = memref.alloc() : memref<8xf32>
  linalg.fill ins(%c : f32) outs(%in : memref<8xf32>)
  %out = memref.alloc() : memref<8xf32>
  %a = memref.cast %in : memref<8xf32> to memref<*xf32>
  %b = memref.cast %out : memref<8xf32> to memref<*xf32>
  call @spmd_collective_f32(%kind, %z, %z, %axes, %a, %b) : (i32, i64, i64, i64, memref<*xf32>, memref<*xf32>) -> ()
  %r = memref.cast %out : memref<8xf32> to memref<*xf32>
  call @use(%r) : (memref<*xf32>) -> ()
  return
}

// -----

func.func private @spmd_collective_f32(i32, i64, i64, i64, memref<*xf32>, memref<*xf32>)

func.func private @use(memref<*xf32>)

// Buckets as --elide-slice-copies leaves them: bytes, and views of all of
// them from the first byte. A max all-reduce is one too.
// CHECK-LABEL: func.func @bucket_bytes
// CHECK: %[[IN:.*]] = memref.alloc() : memref<32xi8>
// CHECK-NOT: memref.alloc
// CHECK: %[[V:.*]] = memref.view %[[IN]]
// CHECK: %[[W:.*]] = memref.view %[[IN]]
func.func @bucket_bytes(%c: f32) {
  %kind = arith.constant 5 : i32
  %z = arith.constant 0 : i64
  %axes = arith.constant 1 : i64
  %c0 = arith.constant 0 : index
  %inBytes = memref.alloc() : memref<32xi8>
  %in = memref.view %inBytes[%c0][] : memref<32xi8> to memref<8xf32>
  linalg.fill ins(%c : f32) outs(%in : memref<8xf32>)
  %outBytes = memref.alloc() : memref<32xi8>
  %out = memref.view %outBytes[%c0][] : memref<32xi8> to memref<8xf32>
  %a = memref.cast %in : memref<8xf32> to memref<*xf32>
  %b = memref.cast %out : memref<8xf32> to memref<*xf32>
  call @spmd_collective_f32(%kind, %z, %z, %axes, %a, %b) : (i32, i64, i64, i64, memref<*xf32>, memref<*xf32>) -> ()
  call @use(%b) : (memref<*xf32>) -> ()
  return
}

// -----

func.func private @spmd_collective_f32(i32, i64, i64, i64, memref<*xf32>, memref<*xf32>)

func.func private @use(memref<*xf32>)

// Kept: the input is read after the call.
// CHECK-LABEL: func.func @input_read_after
// CHECK: memref.alloc() : memref<8xf32>
// CHECK: memref.alloc() : memref<8xf32>
func.func @input_read_after(%c: f32) {
  %kind = arith.constant 0 : i32
  %z = arith.constant 0 : i64
  %axes = arith.constant 1 : i64
  %in = memref.alloc() : memref<8xf32>
  linalg.fill ins(%c : f32) outs(%in : memref<8xf32>)
  %out = memref.alloc() : memref<8xf32>
  %a = memref.cast %in : memref<8xf32> to memref<*xf32>
  %b = memref.cast %out : memref<8xf32> to memref<*xf32>
  call @spmd_collective_f32(%kind, %z, %z, %axes, %a, %b) : (i32, i64, i64, i64, memref<*xf32>, memref<*xf32>) -> ()
  call @use(%a) : (memref<*xf32>) -> ()
  call @use(%b) : (memref<*xf32>) -> ()
  return
}

// -----

func.func private @spmd_collective_f32(i32, i64, i64, i64, memref<*xf32>, memref<*xf32>)

// Kept: the output is written before the call, the input returned, an
// all-gather, only part of the bytes viewed, a function argument.
// CHECK-LABEL: func.func @output_written_before
// CHECK-COUNT-2: memref.alloc()
func.func @output_written_before(%c: f32) {
  %kind = arith.constant 0 : i32
  %z = arith.constant 0 : i64
  %axes = arith.constant 1 : i64
  %in = memref.alloc() : memref<8xf32>
  linalg.fill ins(%c : f32) outs(%in : memref<8xf32>)
  %out = memref.alloc() : memref<8xf32>
  linalg.fill ins(%c : f32) outs(%out : memref<8xf32>)
  %a = memref.cast %in : memref<8xf32> to memref<*xf32>
  %b = memref.cast %out : memref<8xf32> to memref<*xf32>
  call @spmd_collective_f32(%kind, %z, %z, %axes, %a, %b) : (i32, i64, i64, i64, memref<*xf32>, memref<*xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @input_returned
// CHECK-COUNT-2: memref.alloc()
func.func @input_returned(%c: f32) -> memref<8xf32> {
  %kind = arith.constant 0 : i32
  %z = arith.constant 0 : i64
  %axes = arith.constant 1 : i64
  %in = memref.alloc() : memref<8xf32>
  linalg.fill ins(%c : f32) outs(%in : memref<8xf32>)
  %out = memref.alloc() : memref<8xf32>
  %a = memref.cast %in : memref<8xf32> to memref<*xf32>
  %b = memref.cast %out : memref<8xf32> to memref<*xf32>
  call @spmd_collective_f32(%kind, %z, %z, %axes, %a, %b) : (i32, i64, i64, i64, memref<*xf32>, memref<*xf32>) -> ()
  return %in : memref<8xf32>
}

// CHECK-LABEL: func.func @all_gather
// CHECK-COUNT-2: memref.alloc()
func.func @all_gather(%c: f32) {
  %kind = arith.constant 1 : i32
  %z = arith.constant 0 : i64
  %axes = arith.constant 1 : i64
  %in = memref.alloc() : memref<8xf32>
  linalg.fill ins(%c : f32) outs(%in : memref<8xf32>)
  %out = memref.alloc() : memref<8xf32>
  %a = memref.cast %in : memref<8xf32> to memref<*xf32>
  %b = memref.cast %out : memref<8xf32> to memref<*xf32>
  call @spmd_collective_f32(%kind, %z, %z, %axes, %a, %b) : (i32, i64, i64, i64, memref<*xf32>, memref<*xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @part_of_the_bytes
// CHECK-COUNT-2: memref.alloc()
func.func @part_of_the_bytes(%c: f32) {
  %kind = arith.constant 0 : i32
  %z = arith.constant 0 : i64
  %axes = arith.constant 1 : i64
  %c0 = arith.constant 0 : index
  %inBytes = memref.alloc() : memref<64xi8>
  %in = memref.view %inBytes[%c0][] : memref<64xi8> to memref<8xf32>
  linalg.fill ins(%c : f32) outs(%in : memref<8xf32>)
  %outBytes = memref.alloc() : memref<64xi8>
  %out = memref.view %outBytes[%c0][] : memref<64xi8> to memref<8xf32>
  %a = memref.cast %in : memref<8xf32> to memref<*xf32>
  %b = memref.cast %out : memref<8xf32> to memref<*xf32>
  call @spmd_collective_f32(%kind, %z, %z, %axes, %a, %b) : (i32, i64, i64, i64, memref<*xf32>, memref<*xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @argument_input
// CHECK: memref.alloc() : memref<8xf32>
func.func @argument_input(%in: memref<8xf32>) {
  %kind = arith.constant 0 : i32
  %z = arith.constant 0 : i64
  %axes = arith.constant 1 : i64
  %out = memref.alloc() : memref<8xf32>
  %a = memref.cast %in : memref<8xf32> to memref<*xf32>
  %b = memref.cast %out : memref<8xf32> to memref<*xf32>
  call @spmd_collective_f32(%kind, %z, %z, %axes, %a, %b) : (i32, i64, i64, i64, memref<*xf32>, memref<*xf32>) -> ()
  return
}

// -----

func.func private @spmd_collective_start_f32(i32, i64, i64, i64, memref<*xf32>, memref<*xf32>) -> i64
func.func private @spmd_collective_wait_f32(i64, memref<*xf32>, memref<*xf32>)

func.func private @use(memref<*xf32>)

// A started all-reduce (--overlap): in place when after its start only its
// wait touches the input, and before its wait only its start the output.
// CHECK-LABEL: func.func @started
// CHECK: %[[IN:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NOT: memref.alloc() : memref<8xf32>
// CHECK: call @spmd_collective_start_f32
// CHECK: memref.alloc() : memref<4xf32>
// CHECK: call @spmd_collective_wait_f32
func.func @started(%c: f32) {
  %kind = arith.constant 0 : i32
  %z = arith.constant 0 : i64
  %axes = arith.constant 1 : i64
  %in = memref.alloc() : memref<8xf32>
  linalg.fill ins(%c : f32) outs(%in : memref<8xf32>)
  %out = memref.alloc() : memref<8xf32>
  %a = memref.cast %in : memref<8xf32> to memref<*xf32>
  %b = memref.cast %out : memref<8xf32> to memref<*xf32>
  %h = call @spmd_collective_start_f32(%kind, %z, %z, %axes, %a, %b) : (i32, i64, i64, i64, memref<*xf32>, memref<*xf32>) -> i64
  %other = memref.alloc() : memref<4xf32>
  linalg.fill ins(%c : f32) outs(%other : memref<4xf32>)
  call @spmd_collective_wait_f32(%h, %a, %b) : (i64, memref<*xf32>, memref<*xf32>) -> ()
  call @use(%b) : (memref<*xf32>) -> ()
  return
}

// Kept: the input is read while the all-reduce is under way.
// CHECK-LABEL: func.func @input_read_while_started
// CHECK-COUNT-2: memref.alloc() : memref<8xf32>
func.func @input_read_while_started(%c: f32) {
  %kind = arith.constant 0 : i32
  %z = arith.constant 0 : i64
  %axes = arith.constant 1 : i64
  %in = memref.alloc() : memref<8xf32>
  linalg.fill ins(%c : f32) outs(%in : memref<8xf32>)
  %out = memref.alloc() : memref<8xf32>
  %a = memref.cast %in : memref<8xf32> to memref<*xf32>
  %b = memref.cast %out : memref<8xf32> to memref<*xf32>
  %h = call @spmd_collective_start_f32(%kind, %z, %z, %axes, %a, %b) : (i32, i64, i64, i64, memref<*xf32>, memref<*xf32>) -> i64
  call @use(%a) : (memref<*xf32>) -> ()
  call @spmd_collective_wait_f32(%h, %a, %b) : (i64, memref<*xf32>, memref<*xf32>) -> ()
  call @use(%b) : (memref<*xf32>) -> ()
  return
}
