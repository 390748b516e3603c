// RUN: spmdc-opt %s --parallelize-loop-nests=min-work=64 -split-input-file | FileCheck %s
// RUN: spmdc-opt %s --parallelize-loop-nests -split-input-file | FileCheck %s --check-prefix=SMALL

// A map whose outer iterations write disjoint rows takes the outer loop's
// bounds as arguments; its call passes the old ones. Under the default
// min-work (262144 operations) this nest is too small and stays as it was.

// CHECK-LABEL: func.func @step
// CHECK:         %[[LO:.*]] = arith.constant 0 : index
// CHECK:         %[[HI:.*]] = arith.constant 16 : index
// CHECK:         call @step_nest0_map(%arg0, %arg1, %[[LO]], %[[HI]])
// CHECK:       func.func private @step_nest0_map(%[[A:.*]]: memref<16x8xf32>, %[[B:.*]]: memref<16x8xf32>, %[[L:.*]]: index, %[[H:.*]]: index)
// CHECK-SAME:    spmdc.parallel_step = 2 : i64
// CHECK:         affine.for %[[I:.*]] = %[[L]] to %[[H]] step 2 {
// CHECK:           affine.for %[[J:.*]] = 0 to 8
// CHECK:             affine.load %[[A]][%[[I]], %[[J]]]
// CHECK:             affine.store %{{.*}}, %[[B]][%[[I]], %[[J]]]
// SMALL-LABEL: func.func @step
// SMALL:         call @step_nest0_map(%arg0, %arg1) :
// SMALL-NOT:     spmdc.parallel_step
func.func @step(%a: memref<16x8xf32>, %b: memref<16x8xf32>) {
  call @step_nest0_map(%a, %b) : (memref<16x8xf32>, memref<16x8xf32>) -> ()
  return
}
func.func private @step_nest0_map(%a: memref<16x8xf32>, %b: memref<16x8xf32>) {
  affine.for %i = 0 to 16 step 2 {
    affine.for %j = 0 to 8 {
      %x = affine.load %a[%i, %j] : memref<16x8xf32>
      %y = arith.mulf %x, %x : f32
      affine.store %y, %b[%i, %j] : memref<16x8xf32>
    }
  }
  return
}

// -----

// A sum over the outer loop (the store leaves it out) keeps its order:
// the nest stays serial.

// CHECK-LABEL: func.func @sum
// CHECK:         call @sum_nest0_reduce(%arg0, %arg1) :
// CHECK:       func.func private @sum_nest0_reduce(%{{[^,]*}}, %{{[^,)]*}})
// CHECK-NOT:     spmdc.parallel_step
// CHECK:         affine.for %{{.*}} = 0 to 64
func.func @sum(%a: memref<64x8xf32>, %s: memref<8xf32>) {
  call @sum_nest0_reduce(%a, %s) : (memref<64x8xf32>, memref<8xf32>) -> ()
  return
}
func.func private @sum_nest0_reduce(%a: memref<64x8xf32>, %s: memref<8xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 8 {
      %x = affine.load %a[%i, %j] : memref<64x8xf32>
      %acc = affine.load %s[%j] : memref<8xf32>
      %y = arith.addf %x, %acc : f32
      affine.store %y, %s[%j] : memref<8xf32>
    }
  }
  return
}

// -----

// A row reduction (each outer iteration sums its own row) is parallel in
// rows; a nest that reads a written buffer at another row (a shift) is not.

// CHECK-LABEL: func.func private @rows_nest0_reduce
// CHECK-SAME:    spmdc.parallel_step = 1 : i64
// CHECK-LABEL: func.func private @rows_nest1_map
// CHECK-NOT:     spmdc.parallel_step
// CHECK:         return
func.func private @rows_nest0_reduce(%a: memref<64x8xf32>, %s: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 8 {
      %x = affine.load %a[%i, %j] : memref<64x8xf32>
      %acc = affine.load %s[%i] : memref<64xf32>
      %y = arith.addf %x, %acc : f32
      affine.store %y, %s[%i] : memref<64xf32>
    }
  }
  return
}
func.func private @rows_nest1_map(%s: memref<65xf32>) {
  affine.for %i = 0 to 64 {
    %x = affine.load %s[%i + 1] : memref<65xf32>
    affine.store %x, %s[%i] : memref<65xf32>
  }
  return
}
