// RUN: spmdc-opt %s --overwrite-donated-buffers | FileCheck %s

// After bufferization: the step's backward function updates the parameter
// its caller was donated in the parameter's own buffer. A buffer that is
// not donated, read after the update, or passed twice keeps its value.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @main
func.func @main(%p: memref<8xf32> {spmdc.donated}, %q: memref<8xf32> {spmdc.donated},
                %r: memref<8xf32> {spmdc.donated}, %data: memref<8xf32>)
    -> (memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>) {
  %0 = call @forward(%r) : (memref<8xf32>) -> memref<8xf32>
  %1:4 = call @backward(%p, %q, %r, %0, %data) : (memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>) -> (memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>)
  return %1#0, %1#1, %1#2, %1#3 : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>
}

// @forward hands back a view of %r: @backward's %r and %saved may be one
// buffer.
func.func private @forward(%r: memref<8xf32>) -> memref<8xf32> {
  %v = memref.cast %r : memref<8xf32> to memref<8xf32>
  return %v : memref<8xf32>
}

// CHECK-LABEL: func.func private @backward
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic {{.*}} ins(%arg0 : memref<8xf32>) outs(%arg0 : memref<8xf32>)
// CHECK: %[[Q:.*]] = memref.alloc
// CHECK: linalg.generic {{.*}} ins(%arg1 : memref<8xf32>) outs(%[[Q]] : memref<8xf32>)
// CHECK: %[[R:.*]] = memref.alloc
// CHECK: linalg.generic {{.*}} ins(%arg2 : memref<8xf32>) outs(%[[R]] : memref<8xf32>)
// CHECK: %[[D:.*]] = memref.alloc
// CHECK: linalg.generic {{.*}} ins(%arg4, %arg3 : memref<8xf32>, memref<8xf32>) outs(%[[D]] : memref<8xf32>)
// CHECK: return %arg0, %[[Q]], %[[R]], %[[D]]
func.func private @backward(%p: memref<8xf32>, %q: memref<8xf32>, %r: memref<8xf32>,
                            %saved: memref<8xf32>, %data: memref<8xf32>)
    -> (memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>) {
  %np = memref.alloc() : memref<8xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%p : memref<8xf32>) outs(%np : memref<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.negf %v : f32
    linalg.yield %s : f32
  }
  %nq = memref.alloc() : memref<8xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%q : memref<8xf32>) outs(%nq : memref<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.negf %v : f32
    linalg.yield %s : f32
  }
  // %q is read after its update.
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%q : memref<8xf32>) outs(%nq : memref<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.addf %v, %o : f32
    linalg.yield %s : f32
  }
  %nr = memref.alloc() : memref<8xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%r : memref<8xf32>) outs(%nr : memref<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.negf %v : f32
    linalg.yield %s : f32
  }
  %nd = memref.alloc() : memref<8xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%data, %saved : memref<8xf32>, memref<8xf32>) outs(%nd : memref<8xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %s = arith.addf %v, %w : f32
    linalg.yield %s : f32
  }
  return %np, %nq, %nr, %nd : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>
}
