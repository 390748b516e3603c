// RUN: spmdc-opt %s --split-input-file --form-gpu-kernels=block-size=16 | FileCheck %s
// RUN: not spmdc-opt %s --split-input-file --form-gpu-kernels=block-size=2048 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: block-size must be in 1..1024, not 2048

// Softmax-like rows: fill, a max per row, a subtract per element. The three
// nests share the row dim and touch the row buffer only at their row, so
// they fuse into one loop over rows (one kernel); the element dim becomes a
// sequential loop. The alloc between them moves above, the dealloc of a
// buffer the later nest does not touch moves below.

// CHECK-LABEL: func.func @rows
// CHECK:         memref.alloc() : memref<4x1xf32>
// CHECK:         memref.alloc() : memref<2xf32>
// CHECK:         scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%{{.*}}) step
// CHECK:           scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%{{.*}}) step
// CHECK:             memref.store %{{.*}}, %[[M:.*]][%[[R:.*]], %{{.*}}] : memref<4x1xf32>
// CHECK:             scf.for
// CHECK:               arith.maximumf
// CHECK:             scf.for
// CHECK:               arith.subf
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK-NOT:     scf.parallel
// CHECK:         memref.dealloc %{{.*}} : memref<2xf32>
// CHECK:         return
func.func @rows(%x: memref<4x16xf32>, %out: memref<4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %ninf = arith.constant 0xFF800000 : f32
  %m = memref.alloc() : memref<4x1xf32>
  %unrelated = memref.alloc() : memref<2xf32>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %ninf, %m[%i, %c0] : memref<4x1xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.for %j = %c0 to %c16 step %c1 {
      %a = memref.load %x[%i, %j] : memref<4x16xf32>
      %b = memref.load %m[%i, %c0] : memref<4x1xf32>
      %c = arith.maximumf %a, %b : f32
      memref.store %c, %m[%i, %c0] : memref<4x1xf32>
    }
    scf.reduce
  }
  memref.dealloc %unrelated : memref<2xf32>
  %unused = memref.alloc() : memref<3xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c16) step (%c1, %c1) {
    %a = memref.load %x[%i, %j] : memref<4x16xf32>
    %b = memref.load %m[%i, %c0] : memref<4x1xf32>
    %c = arith.subf %a, %b : f32
    memref.store %c, %out[%i, %j] : memref<4x16xf32>
    scf.reduce
  }
  memref.dealloc %unused : memref<3xf32>
  memref.dealloc %m : memref<4x1xf32>
  return
}

// -----

// A transpose reads what the first nest wrote at another row: fusing would
// read elements not written yet, so the nests stay two kernels. 5 x 7 = 35
// elements on blocks of 16 threads: 3 blocks, and a bound check.

// CHECK-LABEL: func.func @transpose
// CHECK:         %[[C3:.*]] = arith.constant 3 : index
// CHECK:         scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%[[C3]])
// CHECK:           %[[C16:.*]] = arith.constant 16 : index
// CHECK:           scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%[[C16]])
// CHECK:             %[[MUL:.*]] = arith.muli %[[B]], %{{.*}} : index
// CHECK:             %[[LIN:.*]] = arith.addi %[[MUL]], %[[T]] : index
// CHECK:             %[[IN:.*]] = arith.cmpi slt, %[[LIN]], %{{.*}} : index
// CHECK:             scf.if %[[IN]]
// CHECK:               arith.divui %[[LIN]]
// CHECK:               arith.remui
// CHECK:               memref.store
// CHECK:         scf.parallel
// CHECK:           scf.parallel
// CHECK:             memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<7x5xf32>
func.func @transpose(%x: memref<5x7xf32>, %out: memref<5x7xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %t = memref.alloc() : memref<7x5xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c5, %c7) step (%c1, %c1) {
    %a = memref.load %x[%i, %j] : memref<5x7xf32>
    memref.store %a, %t[%j, %i] : memref<7x5xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c5, %c7) step (%c1, %c1) {
    %a = memref.load %t[%j, %i] : memref<7x5xf32>
    %b = memref.load %t[%i, %i] : memref<7x5xf32>
    %c = arith.addf %a, %b : f32
    memref.store %c, %out[%i, %j] : memref<5x7xf32>
    scf.reduce
  }
  memref.dealloc %t : memref<7x5xf32>
  return
}

// -----

// A sequential nest that touches buffers (scatter_add's) runs as one thread
// of one block; a call stays host code.

// CHECK-LABEL: func.func @scatter
// CHECK:         scf.parallel
// CHECK-SAME:      to (%[[ONE:c1[_0-9]*]])
// CHECK:           scf.parallel
// CHECK:             scf.for
// CHECK:               memref.load
// CHECK:               memref.store
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK:         call @host
func.func private @host()
func.func @scatter(%idx: memref<8xindex>, %src: memref<8xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %k = memref.load %idx[%i] : memref<8xindex>
    %v = memref.load %src[%i] : memref<8xf32>
    %o = memref.load %out[%k] : memref<4xf32>
    %s = arith.addf %o, %v : f32
    memref.store %s, %out[%k] : memref<4xf32>
  }
  call @host() : () -> ()
  return
}
