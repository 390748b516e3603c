// RUN: spmdc-opt %s --split-input-file --free-after-last-use | FileCheck %s

// Ownership-based deallocation frees a block's buffers at its end. Each
// buffer that aliases nothing retained moves to a dealloc of its own after
// the last use of any of its views; the returned buffer stays retained.

func.func private @use(memref<*xf32>)

// CHECK-LABEL: func.func @chain
// CHECK:      %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: %[[B:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: linalg.copy ins(%[[A]] : memref<4xf32>) outs(%[[B]] : memref<4xf32>)
// CHECK-NEXT: bufferization.dealloc (%[[A]] : memref<4xf32>) if (%true){{$}}
// CHECK-NEXT: %[[C:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: %[[VIEW:.*]] = memref.cast %[[B]]
// CHECK-NEXT: call @use(%[[VIEW]])
// CHECK-NEXT: bufferization.dealloc (%[[B]] : memref<4xf32>) if (%true)
// CHECK-NEXT: linalg.copy ins(%[[C]]
// CHECK-NEXT: bufferization.dealloc (%[[C]] : memref<4xf32>) if (%true)
// CHECK-NEXT: %[[NONE:.*]] = arith.constant false
// CHECK-NEXT: return %{{.*}}, %[[NONE]]
func.func @chain(%r: memref<4xf32>) -> (memref<4xf32>, i1) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
  %c = memref.alloc() : memref<4xf32>
  %view = memref.cast %b : memref<4xf32> to memref<*xf32>
  call @use(%view) : (memref<*xf32>) -> ()
  linalg.copy ins(%c : memref<4xf32>) outs(%r : memref<4xf32>)
  %kept = bufferization.dealloc (%a, %b, %c : memref<4xf32>, memref<4xf32>, memref<4xf32>) if (%true, %true, %true) retain (%r : memref<4xf32>)
  return %r, %kept : memref<4xf32>, i1
}

// -----

// A use inside a loop counts as the loop's: the buffer is freed after it.
// Two views of one buffer in the dealloc are freed together, once.

// CHECK-LABEL: func.func @loop_and_views
// CHECK:      scf.for
// CHECK:      }
// CHECK-NEXT: memref.extract_strided_metadata
// CHECK-NEXT: bufferization.dealloc (%{{.*}}, %{{.*}} : memref<8xf32>, memref<f32>) if (%true, %true){{$}}
// CHECK-NEXT: return
func.func @loop_and_views(%v: f32) {
  %true = arith.constant true
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %a = memref.alloc() : memref<8xf32>
  %base, %offset, %size, %stride = memref.extract_strided_metadata %a : memref<8xf32> -> memref<f32>, index, index, index
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %v, %a[%i] : memref<8xf32>
  }
  bufferization.dealloc (%a, %base : memref<8xf32>, memref<f32>) if (%true, %true)
  return
}

// -----

// What stays: a buffer returned through a select (it may be the result), a
// buffer used in another block, and an argument (it may alias another).

// CHECK-LABEL: func.func @stays
// CHECK:      ^bb1:
// CHECK-NEXT: linalg.copy
// CHECK-NEXT: bufferization.dealloc (%{{.*}}, %{{.*}}, %arg1 : memref<4xf32>, memref<4xf32>, memref<4xf32>) if (%true, %true, %arg2) retain (%{{.*}} : memref<4xf32>)
// CHECK-NEXT: return
func.func @stays(%p: i1, %arg: memref<4xf32>, %owned: i1) -> memref<4xf32> {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  %r = memref.alloc() : memref<4xf32>
  %s = arith.select %p, %a, %r : memref<4xf32>
  cf.br ^bb1
^bb1:
  linalg.copy ins(%b : memref<4xf32>) outs(%s : memref<4xf32>)
  %kept = bufferization.dealloc (%a, %b, %arg : memref<4xf32>, memref<4xf32>, memref<4xf32>) if (%true, %true, %owned) retain (%s : memref<4xf32>)
  return %s : memref<4xf32>
}

// -----

// A buffer of unknown origin, a call's result, is freed through its base,
// which deallocation extracts just before the dealloc: the extraction moves
// with the free, to after the buffer's last use.

func.func private @make() -> memref<4xf32>

// CHECK-LABEL: func.func @call_result
// CHECK:      %[[A:.*]] = call @make()
// CHECK-NEXT: linalg.copy ins(%[[A]] : memref<4xf32>)
// CHECK-NEXT: %[[BASE:.*]], %{{.*}}, %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[A]]
// CHECK-NEXT: bufferization.dealloc (%[[BASE]] : memref<f32>) if (%true){{$}}
// CHECK-NEXT: %[[B:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: linalg.copy ins(%{{.*}} : memref<4xf32>) outs(%[[B]] : memref<4xf32>)
// CHECK-NEXT: bufferization.dealloc (%[[B]] : memref<4xf32>) if (%true){{$}}
// CHECK-NEXT: %[[NONE:.*]] = arith.constant false
// CHECK-NEXT: return %{{.*}}, %[[NONE]]
func.func @call_result(%r: memref<4xf32>) -> (memref<4xf32>, i1) {
  %true = arith.constant true
  %a = call @make() : () -> memref<4xf32>
  linalg.copy ins(%a : memref<4xf32>) outs(%r : memref<4xf32>)
  %b = memref.alloc() : memref<4xf32>
  linalg.copy ins(%r : memref<4xf32>) outs(%b : memref<4xf32>)
  %base, %offset, %size, %stride = memref.extract_strided_metadata %a : memref<4xf32> -> memref<f32>, index, index, index
  %kept = bufferization.dealloc (%base, %b : memref<f32>, memref<4xf32>) if (%true, %true) retain (%r : memref<4xf32>)
  return %r, %kept : memref<4xf32>, i1
}
