// RUN: spmdc-opt %s --drop-self-retaining-deallocs --canonicalize | FileCheck %s

// A scatter loop after ownership-based deallocation: the dealloc in its
// body retains the one buffer it would free, so it goes, and with it the
// ownership flag the loop carried. A dealloc that frees another buffer
// stays.

// CHECK-LABEL: func.func @scatter
// CHECK: scf.for %{{[a-z0-9]+}} = %{{.*}} to %{{.*}} step %{{[a-z0-9]+}} {
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.store
// CHECK-NEXT: }
// CHECK-NEXT: return %false
func.func @scatter(%buffer: memref<8xf32>, %index: memref<4xindex>, %v: f32) -> i1 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %false = arith.constant false
  %owned = scf.for %i = %c0 to %c4 step %c1 iter_args(%flag = %false) -> (i1) {
    %j = memref.load %index[%i] : memref<4xindex>
    memref.store %v, %buffer[%j] : memref<8xf32>
    %kept = bufferization.dealloc (%buffer : memref<8xf32>) if (%flag) retain (%buffer : memref<8xf32>)
    scf.yield %kept : i1
  }
  return %owned : i1
}

// CHECK-LABEL: func.func @frees_another
// CHECK: bufferization.dealloc (%arg0 : memref<8xf32>) if (%arg2) retain (%arg1 : memref<8xf32>)
func.func @frees_another(%a: memref<8xf32>, %b: memref<8xf32>, %c: i1) -> i1 {
  %kept = bufferization.dealloc (%a : memref<8xf32>) if (%c) retain (%b : memref<8xf32>)
  return %kept : i1
}
