// RUN: spmdc-opt %s --prepare-linalg-for-gpu | FileCheck %s

// CHECK-DAG: #[[$IN:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[$OUT:.*]] = affine_map<(d0, d1) -> (d0)>

// Copies between buffers become linalg.copy (a kernel later); a constant
// global is staged into a fresh buffer by a host copy, and its users read
// that buffer.

// CHECK-LABEL: func.func @copies_and_globals
// CHECK-SAME:    (%[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>)
// CHECK:         linalg.copy ins(%[[A]] : memref<4xf32>) outs(%[[B]] : memref<4xf32>)
// CHECK:         %[[G:.*]] = memref.get_global @weights : memref<4xf32>
// CHECK:         %[[S:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         memref.copy %[[G]], %[[S]] : memref<4xf32> to memref<4xf32>
// CHECK:         linalg.copy ins(%[[S]] : memref<4xf32>) outs(%[[A]] : memref<4xf32>)
memref.global "private" constant @weights : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func @copies_and_globals(%a: memref<4xf32>, %b: memref<4xf32>) {
  memref.copy %a, %b : memref<4xf32> to memref<4xf32>
  %g = memref.get_global @weights : memref<4xf32>
  memref.copy %g, %a : memref<4xf32> to memref<4xf32>
  return
}

// A sum over the leading dim (a bias gradient) has its parallel loop put
// first, so --convert-linalg-to-parallel-loops makes it a parallel loop
// over columns with the rows as a sequential loop inside.

// CHECK-LABEL: func.func @column_sums
// CHECK:         linalg.generic
// CHECK-SAME:      indexing_maps = [#[[$IN]], #[[$OUT]]]
// CHECK-SAME:      iterator_types = ["parallel", "reduction"]
func.func @column_sums(%x: memref<8x4xf32>, %s: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<8x4xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %v, %acc : f32
    linalg.yield %r : f32
  }
  return
}
