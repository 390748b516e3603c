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

// -----

// A call's result that a loop also takes ownership of (a scatter into it,
// as the cross-entropy's gradient) is named twice, by two extractions of
// its base, the second under the loop's ownership flag. Neither extraction
// is a use: the buffer is freed after the product that reads it last, not
// at the end (GPT-2 small's 103 MB logits gradient lived through the whole
// backward).

func.func private @make() -> memref<8xf32>
func.func private @use(memref<*xf32>)

// CHECK-LABEL: func.func @named_twice
// CHECK:      %[[R:.*]] = call @make()
// CHECK:      %[[OWNED:.*]] = scf.for
// CHECK:      %[[VIEW:.*]] = memref.cast %[[R]]
// CHECK-NEXT: call @use(%[[VIEW]])
// CHECK-NEXT: %[[B1:.*]], %{{.*}}, %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[R]]
// CHECK-NEXT: %[[B2:.*]], %{{.*}}, %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[R]]
// CHECK-NEXT: bufferization.dealloc (%[[B1]], %[[B2]] : memref<f32>, memref<f32>) if (%true, %[[OWNED]]){{$}}
// CHECK-NEXT: %[[LATER:.*]] = memref.alloc() : memref<64xf32>
// CHECK:      bufferization.dealloc (%[[LATER]] : memref<64xf32>) if (%true){{$}}
// CHECK-NEXT: return
func.func @named_twice(%v: f32) {
  %true = arith.constant true
  %false = arith.constant false
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %r = call @make() : () -> memref<8xf32>
  %owned = scf.for %i = %c0 to %c8 step %c1 iter_args(%o = %false) -> (i1) {
    memref.store %v, %r[%i] : memref<8xf32>
    scf.yield %o : i1
  }
  %view = memref.cast %r : memref<8xf32> to memref<*xf32>
  call @use(%view) : (memref<*xf32>) -> ()
  %later = memref.alloc() : memref<64xf32>
  %later_view = memref.cast %later : memref<64xf32> to memref<*xf32>
  call @use(%later_view) : (memref<*xf32>) -> ()
  %b1, %o1, %s1, %t1 = memref.extract_strided_metadata %r : memref<8xf32> -> memref<f32>, index, index, index
  %b2, %o2, %s2, %t2 = memref.extract_strided_metadata %r : memref<8xf32> -> memref<f32>, index, index, index
  bufferization.dealloc (%later, %b1, %b2 : memref<64xf32>, memref<f32>, memref<f32>) if (%true, %true, %owned)
  return
}
