// RUN: spmdc-opt %s --number-constant-globals | FileCheck %s
// RUN: spmdc-opt %s --number-constant-globals --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// Constant globals are renamed __constant_<n> in the order of first use
// (functions in module order) and placed in that order at the top; a
// mutable global keeps its name and place.

// A global takes the location of its first use: bufferization gives a
// global shared by several constants the location of whichever it met
// first, in an order that varies from run to run.
// LOC: memref.global "private" constant @__constant_0 {{.*}} loc("first use of [4, 8]")

// CHECK-LABEL: module
// CHECK-NEXT: memref.global "private" constant @__constant_0 : memref<2xindex> = dense<[4, 8]>
// CHECK-NEXT: memref.global "private" constant @__constant_1 : memref<f32> = dense<1.000000e+00>
// CHECK-NEXT: memref.global "private" constant @__constant_2 : memref<3xindex> = dense<[1, 2, 3]>
// CHECK-NEXT: memref.global "private" @state : memref<f32>
// CHECK: func.func @first
// CHECK: memref.get_global @__constant_0
// CHECK: memref.get_global @__constant_1
// CHECK: memref.get_global @state
// CHECK: func.func @second
// CHECK: memref.get_global @__constant_2
// CHECK: memref.get_global @__constant_0
module {
  memref.global "private" constant @__constant_3xindex : memref<3xindex> = dense<[1, 2, 3]>
  memref.global "private" constant @__constant_1xf32_0 : memref<f32> = dense<1.0>
  memref.global "private" @state : memref<f32>
  memref.global "private" constant @__constant_2xindex_1 : memref<2xindex> = dense<[4, 8]> loc("a later use of [4, 8]")
  func.func @first() {
    %0 = memref.get_global @__constant_2xindex_1 : memref<2xindex> loc("first use of [4, 8]")
    %1 = memref.get_global @__constant_1xf32_0 : memref<f32>
    %2 = memref.get_global @state : memref<f32>
    return
  }
  func.func @second() {
    %0 = memref.get_global @__constant_3xindex : memref<3xindex>
    %1 = memref.get_global @__constant_2xindex_1 : memref<2xindex> loc("a later use of [4, 8]")
    return
  }
}
