// RUN: spmdc-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(vectorize-affine-loops{vector-size=8}))' | FileCheck %s
// RUN: not spmdc-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(vectorize-affine-loops{vector-size=1}))' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SIZE
// SIZE: vectorize-affine-loops: vector-size must be at least 2, not 1

// A parallel loop over identity layouts is vectorized along its innermost
// (contiguous) dim. Its 64 elements are whole vectors, so the transfers
// are in bounds (plain loads and stores, not masked ones); the 60 of
// @partial end in a part of one and stay possibly out of bounds.

// CHECK-LABEL: func.func @identity
// CHECK: affine.for %{{.*}} = 0 to 64 step 8
// CHECK: vector.transfer_read {{.*}} {in_bounds = [true]}
// CHECK: arith.addf {{.*}} : vector<8xf32>
// CHECK: vector.transfer_write {{.*}} {in_bounds = [true]}
func.func @identity(%a: memref<64xf32>, %b: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %x = affine.load %a[%i] : memref<64xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %b[%i] : memref<64xf32>
  }
  return
}

// CHECK-LABEL: func.func @partial
// CHECK: affine.for %{{.*}} = 0 to 60 step 8
// CHECK: vector.transfer_read
// CHECK-NOT: in_bounds
// CHECK: vector.transfer_write
// CHECK-NOT: in_bounds
// CHECK: return
func.func @partial(%a: memref<60xf32>, %b: memref<60xf32>) {
  affine.for %i = 0 to 60 {
    %x = affine.load %a[%i] : memref<60xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %b[%i] : memref<60xf32>
  }
  return
}

// i1 buffers hold a byte per element, which an in-bounds vector<8xi1> load
// would read as 8 bits of one byte: their transfers stay masked.

// CHECK-LABEL: func.func @bools
// CHECK: vector.transfer_read
// CHECK-NOT: in_bounds
// CHECK: return
func.func @bools(%a: memref<64xi1>, %b: memref<64xi1>) {
  affine.for %i = 0 to 64 {
    %x = affine.load %a[%i] : memref<64xi1>
    %y = arith.xori %x, %x : i1
    affine.store %y, %b[%i] : memref<64xi1>
  }
  return
}

// -----

// A loop that reads a strided slice stays scalar, and no diagnostic is
// reported (--verify-diagnostics fails on any).

// CHECK-LABEL: func.func @strided
// CHECK: affine.for %{{.*}} = 0 to 32 {
// CHECK-NOT: vector.
func.func @strided(%a: memref<32xf32, strided<[2], offset: 1>>, %b: memref<32xf32>) {
  affine.for %i = 0 to 32 {
    %x = affine.load %a[%i] : memref<32xf32, strided<[2], offset: 1>>
    %y = arith.addf %x, %x : f32
    affine.store %y, %b[%i] : memref<32xf32>
  }
  return
}


// -----

// A reduction through memory (linalg's loops: C[i] = C[i] + A[i, k]) is
// carried in a register, then vectorized as a reduction: 8 partial sums in
// a vector, one horizontal add after the loop, one store.

// CHECK-LABEL: func.func @row_sum
// CHECK: affine.for %[[I:.*]] = 0 to 4 {
// CHECK: %[[INIT:.*]] = affine.load %[[C:.*]][%[[I]]] : memref<4xf32>
// CHECK: %[[SUM:.*]] = affine.for %{{.*}} = 0 to 64 step 8 iter_args(%{{.*}} = %{{.*}}) -> (vector<8xf32>)
// CHECK: vector.transfer_read
// CHECK: arith.addf {{.*}} : vector<8xf32>
// CHECK: %[[TOTAL:.*]] = vector.reduction <add>, %[[SUM]] : vector<8xf32> into f32
// CHECK: %[[NEW:.*]] = arith.addf %[[TOTAL]], %[[INIT]] : f32
// CHECK: affine.store %[[NEW]], %[[C]][%[[I]]] : memref<4xf32>
func.func @row_sum(%a: memref<4x64xf32>) -> memref<4xf32> {
  %c = memref.alloc() : memref<4xf32>
  affine.for %i = 0 to 4 {
    affine.for %k = 0 to 64 {
      %x = affine.load %a[%i, %k] : memref<4x64xf32>
      %acc = affine.load %c[%i] : memref<4xf32>
      %s = arith.addf %acc, %x : f32
      affine.store %s, %c[%i] : memref<4xf32>
    }
  }
  return %c : memref<4xf32>
}

// -----

// Not a reduction to carry: the accumulator is a function argument (it may
// alias the input), or the loop also reads the accumulator elsewhere.

// CHECK-LABEL: func.func @may_alias
// CHECK-NOT: iter_args
// CHECK-LABEL: func.func @read_twice
// CHECK-NOT: iter_args
func.func @may_alias(%a: memref<4x64xf32>, %c: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %k = 0 to 64 {
      %x = affine.load %a[%i, %k] : memref<4x64xf32>
      %acc = affine.load %c[%i] : memref<4xf32>
      %s = arith.addf %acc, %x : f32
      affine.store %s, %c[%i] : memref<4xf32>
    }
  }
  return
}
func.func @read_twice(%a: memref<4x64xf32>) -> memref<4xf32> {
  %c = memref.alloc() : memref<4xf32>
  affine.for %i = 0 to 4 {
    affine.for %k = 0 to 64 {
      %x = affine.load %a[%i, %k] : memref<4x64xf32>
      %acc = affine.load %c[%i] : memref<4xf32>
      %other = affine.load %c[0] : memref<4xf32>
      %t = arith.addf %acc, %other : f32
      %s = arith.addf %t, %x : f32
      affine.store %s, %c[%i] : memref<4xf32>
    }
  }
  return %c : memref<4xf32>
}

// -----

// An argument marked llvm.noalias (--outline-loop-nests marks the buffers it
// knows apart) is a buffer of its own: its sum is carried.

// CHECK-LABEL: func.func @noalias_sum
// CHECK: iter_args
// CHECK: vector.reduction <add>
func.func @noalias_sum(%a: memref<4x64xf32>,
                       %c: memref<4xf32> {llvm.noalias}) {
  affine.for %i = 0 to 4 {
    affine.for %k = 0 to 64 {
      %x = affine.load %a[%i, %k] : memref<4x64xf32>
      %acc = affine.load %c[%i] : memref<4xf32>
      %s = arith.addf %acc, %x : f32
      affine.store %s, %c[%i] : memref<4xf32>
    }
  }
  return
}

// -----

// A loop shorter than a vector stays scalar.

// CHECK-LABEL: func.func @short
// CHECK: affine.for %{{.*}} = 0 to 4 {
// CHECK-NOT: vector
func.func @short(%a: memref<4xf32>, %b: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    %x = affine.load %a[%i] : memref<4xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %b[%i] : memref<4xf32>
  }
  return
}

// -----

// Loops whose iterations write what another iteration reads or writes stay
// scalar: a store one element ahead of the load, and a store to the same
// element on every iteration (a function argument, so not a reduction to
// carry). Their accesses to the written memref differ, or none is indexed
// by the loop alone, so the quick test leaves them to MLIR's dependence
// analysis.

// CHECK-LABEL: func.func @shifted
// CHECK-NOT: vector
// CHECK-LABEL: func.func @same_element
// CHECK-NOT: vector
// CHECK: return
func.func @shifted(%b: memref<65xf32>) {
  affine.for %i = 0 to 64 {
    %x = affine.load %b[%i] : memref<65xf32>
    affine.store %x, %b[%i + 1] : memref<65xf32>
  }
  return
}
func.func @same_element(%a: memref<64xf32>, %b: memref<1xf32>) {
  affine.for %i = 0 to 64 {
    %x = affine.load %a[%i] : memref<64xf32>
    %y = affine.load %b[0] : memref<1xf32>
    %s = arith.addf %x, %y : f32
    affine.store %s, %b[0] : memref<1xf32>
  }
  return
}
