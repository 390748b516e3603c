// RUN: spmdc-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(vectorize-affine-loops{vector-size=8}))' | FileCheck %s
// RUN: not spmdc-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(vectorize-affine-loops{vector-size=1}))' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SIZE
// SIZE: vectorize-affine-loops: vector-size must be at least 2, not 1

// A parallel loop over identity layouts is vectorized along its innermost
// (contiguous) dim.

// CHECK-LABEL: func.func @identity
// CHECK: affine.for %{{.*}} = 0 to 64 step 8
// CHECK: vector.transfer_read
// CHECK: arith.addf {{.*}} : vector<8xf32>
// CHECK: vector.transfer_write
func.func @identity(%a: memref<64xf32>, %b: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %x = affine.load %a[%i] : memref<64xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %b[%i] : memref<64xf32>
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

