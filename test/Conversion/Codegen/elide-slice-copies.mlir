// RUN: spmdc-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(elide-slice-copies))' | FileCheck %s

// A bucket as DDP's bucketing bufferizes: two gradients copied into a flat
// buffer, an all-reduce into another, the gradients sliced back out. Every
// copy goes: the gradients are allocated in the bucket, the slices out are
// views of the result. A bias read as a subview of the result stays one.

func.func private @all_reduce(memref<*xf32>, memref<*xf32>)

func.func private @use(memref<*xf32>)

// CHECK-LABEL: func.func @bucket
// CHECK-NOT: memref.copy
// CHECK: %[[IN:.*]] = memref.alloc() : memref<48xi8>
// CHECK: %[[G:.*]] = memref.view %[[IN]][%{{.*}}][] : memref<48xi8> to memref<2x4xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[G]] : memref<2x4xf32>)
// CHECK: %[[B:.*]] = memref.view %[[IN]][%{{.*}}][] : memref<48xi8> to memref<1x4xf32>
// CHECK: %[[BUCKET:.*]] = memref.view %[[IN]][%{{.*}}][] : memref<48xi8> to memref<12xf32>
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<48xi8>
// CHECK: %[[R:.*]] = memref.view %[[OUT]][%{{.*}}][] : memref<48xi8> to memref<12xf32>
// CHECK: call @all_reduce
// CHECK: memref.subview %[[R]][8] [4] [1]
// CHECK: %[[G2:.*]] = memref.view %[[OUT]][%{{.*}}][] : memref<48xi8> to memref<8xf32>
// CHECK: memref.expand_shape %[[G2]]
// CHECK-NOT: memref.copy
func.func @bucket(%c: f32) {
  %g = memref.alloc() : memref<2x4xf32>
  linalg.fill ins(%c : f32) outs(%g : memref<2x4xf32>)
  %b = memref.alloc() : memref<1x4xf32>
  linalg.fill ins(%c : f32) outs(%b : memref<1x4xf32>)
  %bucket = memref.alloc() : memref<12xf32>
  %gflat = memref.collapse_shape %g [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  %s0 = memref.subview %bucket[0] [8] [1] : memref<12xf32> to memref<8xf32, strided<[1]>>
  memref.copy %gflat, %s0 : memref<8xf32> to memref<8xf32, strided<[1]>>
  %bflat = memref.collapse_shape %b [[0, 1]] : memref<1x4xf32> into memref<4xf32>
  %s1 = memref.subview %bucket[8] [4] [1] : memref<12xf32> to memref<4xf32, strided<[1], offset: 8>>
  memref.copy %bflat, %s1 : memref<4xf32> to memref<4xf32, strided<[1], offset: 8>>
  %r = memref.alloc() : memref<12xf32>
  %in = memref.cast %bucket : memref<12xf32> to memref<*xf32>
  %out = memref.cast %r : memref<12xf32> to memref<*xf32>
  call @all_reduce(%in, %out) : (memref<*xf32>, memref<*xf32>) -> ()
  %bias = memref.subview %r[8] [4] [1] : memref<12xf32> to memref<4xf32, strided<[1], offset: 8>>
  %t0 = memref.subview %r[0] [8] [1] : memref<12xf32> to memref<8xf32, strided<[1]>>
  %g2 = memref.alloc() : memref<8xf32>
  memref.copy %t0, %g2 : memref<8xf32, strided<[1]>> to memref<8xf32>
  %g3 = memref.expand_shape %g2 [[0, 1]] output_shape [2, 4] : memref<8xf32> into memref<2x4xf32>
  %bu = memref.cast %bias : memref<4xf32, strided<[1], offset: 8>> to memref<*xf32>
  call @use(%bu) : (memref<*xf32>) -> ()
  %gu = memref.cast %g3 : memref<2x4xf32> to memref<*xf32>
  call @use(%gu) : (memref<*xf32>) -> ()
  return
}

// -----

// Kept: the host is read whole before the copy into it, and the buffer is
// read after its copy.

func.func private @use(memref<*xf32>)

// CHECK-LABEL: func.func @host_read_before
// CHECK-NOT: memref.view
// CHECK: memref.copy
// CHECK: memref.copy
func.func @host_read_before(%c: f32) {
  %bucket = memref.alloc() : memref<8xf32>
  %whole = memref.cast %bucket : memref<8xf32> to memref<*xf32>
  %g = memref.alloc() : memref<4xf32>
  linalg.fill ins(%c : f32) outs(%g : memref<4xf32>)
  call @use(%whole) : (memref<*xf32>) -> ()
  %s = memref.subview %bucket[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  memref.copy %g, %s : memref<4xf32> to memref<4xf32, strided<[1]>>
  %h = memref.alloc() : memref<4xf32>
  linalg.fill ins(%c : f32) outs(%h : memref<4xf32>)
  %t = memref.subview %bucket[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  memref.copy %h, %t : memref<4xf32> to memref<4xf32, strided<[1], offset: 4>>
  %hu = memref.cast %h : memref<4xf32> to memref<*xf32>
  call @use(%hu) : (memref<*xf32>) -> ()
  return
}

// -----

// Kept: the slice out overlaps another subview read after the copy, a
// slice that is not contiguous, and a buffer the function returns.

func.func private @use(memref<*xf32>)

// CHECK-LABEL: func.func @kept_out
// CHECK-NOT: memref.view
// CHECK-COUNT-4: memref.copy
func.func @kept_out(%r: memref<8xf32>) -> memref<4xf32> {
  %host = memref.alloc() : memref<8xf32>
  memref.copy %r, %host : memref<8xf32> to memref<8xf32>
  %a = memref.subview %host[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  %overlap = memref.subview %host[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
  %d = memref.alloc() : memref<4xf32>
  memref.copy %a, %d : memref<4xf32, strided<[1]>> to memref<4xf32>
  %o = memref.cast %overlap : memref<4xf32, strided<[1], offset: 2>> to memref<*xf32>
  call @use(%o) : (memref<*xf32>) -> ()
  %du = memref.cast %d : memref<4xf32> to memref<*xf32>
  call @use(%du) : (memref<*xf32>) -> ()
  %m = memref.alloc() : memref<4x4xf32>
  %col = memref.subview %m[0, 0] [4, 2] [1, 1] : memref<4x4xf32> to memref<4x2xf32, strided<[4, 1]>>
  %e = memref.alloc() : memref<4x2xf32>
  memref.copy %col, %e : memref<4x2xf32, strided<[4, 1]>> to memref<4x2xf32>
  %eu = memref.cast %e : memref<4x2xf32> to memref<*xf32>
  call @use(%eu) : (memref<*xf32>) -> ()
  %host2 = memref.alloc() : memref<8xf32>
  %hu = memref.cast %host2 : memref<8xf32> to memref<*xf32>
  call @use(%hu) : (memref<*xf32>) -> ()
  %b = memref.subview %host2[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  %f = memref.alloc() : memref<4xf32>
  memref.copy %b, %f : memref<4xf32, strided<[1], offset: 4>> to memref<4xf32>
  return %f : memref<4xf32>
}

// -----

// An embedding's gradient as it bufferizes: a scatter-add in nested loops
// that hand the buffer through (each yields the buffer it got), then
// copied into its bucket. The loops' buffer is allocated in the bucket. A
// loop that yields another buffer is not followed: its copy stays.

func.func private @use(memref<*xf32>)

// CHECK-LABEL: func.func @scatter_loops
// CHECK: %[[BYTES:.*]] = memref.alloc() : memref<64xi8>
// CHECK: %[[G:.*]] = memref.view %[[BYTES]][%{{.*}}][] : memref<64xi8> to memref<3x4xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[G]] : memref<3x4xf32>)
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[G]])
// CHECK: %[[OTHER:.*]] = scf.for
// CHECK-COUNT-1: memref.copy
// CHECK-NOT: memref.copy
func.func @scatter_loops(%c: f32, %rows: memref<2xindex>, %d: memref<2x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %g = memref.alloc() : memref<3x4xf32>
  linalg.fill ins(%c : f32) outs(%g : memref<3x4xf32>)
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %g) -> (memref<3x4xf32>) {
    %in = scf.for %j = %c0 to %c4 step %c1 iter_args(%b = %a) -> (memref<3x4xf32>) {
      %row = memref.load %rows[%i] : memref<2xindex>
      %old = memref.load %b[%row, %j] : memref<3x4xf32>
      %add = memref.load %d[%i, %j] : memref<2x4xf32>
      %new = arith.addf %old, %add : f32
      memref.store %new, %b[%row, %j] : memref<3x4xf32>
      scf.yield %b : memref<3x4xf32>
    }
    scf.yield %in : memref<3x4xf32>
  }
  %h = memref.alloc() : memref<4xf32>
  %other = memref.alloc() : memref<4xf32>
  %s = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %h) -> (memref<4xf32>) {
    scf.yield %other : memref<4xf32>
  }
  %bucket = memref.alloc() : memref<16xf32>
  %flat = memref.collapse_shape %r [[0, 1]] : memref<3x4xf32> into memref<12xf32>
  %s0 = memref.subview %bucket[0] [12] [1] : memref<16xf32> to memref<12xf32, strided<[1]>>
  memref.copy %flat, %s0 : memref<12xf32> to memref<12xf32, strided<[1]>>
  %s1 = memref.subview %bucket[12] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1], offset: 12>>
  memref.copy %s, %s1 : memref<4xf32> to memref<4xf32, strided<[1], offset: 12>>
  %bu = memref.cast %bucket : memref<16xf32> to memref<*xf32>
  call @use(%bu) : (memref<*xf32>) -> ()
  return
}
