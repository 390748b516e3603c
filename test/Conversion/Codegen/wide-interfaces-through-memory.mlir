// RUN: spmdc-opt %s --wide-interfaces-through-memory="scalars=2 entry=step" | FileCheck %s
// RUN: not spmdc-opt %s --wide-interfaces-through-memory="scalars=2 entry=narrow" 2>&1 | FileCheck %s --check-prefix=BAD

// @body takes three scalars and returns a struct of three: over scalars=2,
// so its arguments come through a pointer (loaded where used) and its
// result fields go out through another (stored where made). The entry
// @step is rewritten in place as (ptr, ptr); its call of @body stores the
// operands where they are made and loads result fields where they are used.

// CHECK-NOT:   llvm.func internal @body(%
// CHECK-LABEL: llvm.func internal @body_body(
// CHECK-SAME:    %[[A:.*]]: !llvm.ptr, %[[R:.*]]: !llvm.ptr)
// CHECK:         %[[B1:.*]] = llvm.getelementptr %[[A]][0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(i64, i64, i64)>
// CHECK-NEXT:    %[[B:.*]] = llvm.load %[[B1]] : !llvm.ptr -> i64
// CHECK-NEXT:    %[[A1:.*]] = llvm.getelementptr %[[A]][0, 0]
// CHECK-NEXT:    %[[X:.*]] = llvm.load %[[A1]] : !llvm.ptr -> i64
// CHECK-NEXT:    %[[S:.*]] = llvm.add %[[X]], %[[B]]
// CHECK-NEXT:    %[[R0:.*]] = llvm.getelementptr %[[R]][0, 0]
// CHECK-NEXT:    llvm.store %[[S]], %[[R0]]
// CHECK:         %[[T:.*]] = llvm.add %[[S]],
// CHECK-NEXT:    %[[R1:.*]] = llvm.getelementptr %[[R]][0, 1]
// CHECK-NEXT:    llvm.store %[[T]], %[[R1]]
// CHECK-NEXT:    %[[U:.*]] = llvm.mul %[[T]], %[[X]]
// CHECK-NEXT:    %[[R2:.*]] = llvm.getelementptr %[[R]][0, 2]
// CHECK-NEXT:    llvm.store %[[U]], %[[R2]]
// CHECK-NEXT:    llvm.return
// CHECK-LABEL: llvm.func @step(
// CHECK-SAME:    %[[ARGS:.*]]: !llvm.ptr, %[[RESULTS:.*]]: !llvm.ptr)
// CHECK:         %[[RB:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(i64, i64, i64)>
// CHECK:         %[[AB:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(i64, i64, i64)>
// CHECK:         %[[S0:.*]] = llvm.getelementptr %[[AB]][0, 0]
// CHECK-NEXT:    %[[G0:.*]] = llvm.getelementptr %[[ARGS]][0, 0]
// CHECK-NEXT:    %[[V0:.*]] = llvm.load %[[G0]] : !llvm.ptr -> i64
// CHECK-NEXT:    llvm.store %[[V0]], %[[S0]]
// CHECK:         llvm.call @body_body(%[[AB]], %[[RB]])
// CHECK-NEXT:    %[[F1:.*]] = llvm.getelementptr %[[RB]][0, 1]
// CHECK-NEXT:    %[[Y:.*]] = llvm.load %[[F1]] : !llvm.ptr -> i64
// CHECK-NEXT:    %[[O0:.*]] = llvm.getelementptr %[[RESULTS]][0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(i64, i64)>
// CHECK-NEXT:    llvm.store %[[Y]], %[[O0]]
// CHECK:         llvm.return
// CHECK-NOT:     llvm.insertvalue
// BAD: error: wide-interfaces-through-memory: the entry 'narrow' has an argument or result scalar that is not 8 bytes
llvm.func internal @body(%a: i64, %b: i64, %c: i64) -> !llvm.struct<(i64, i64, i64)> {
  %s = llvm.add %a, %b : i64
  %t = llvm.add %s, %c : i64
  %u = llvm.mul %t, %a : i64
  %0 = llvm.mlir.poison : !llvm.struct<(i64, i64, i64)>
  %1 = llvm.insertvalue %s, %0[0] : !llvm.struct<(i64, i64, i64)>
  %2 = llvm.insertvalue %t, %1[1] : !llvm.struct<(i64, i64, i64)>
  %3 = llvm.insertvalue %u, %2[2] : !llvm.struct<(i64, i64, i64)>
  llvm.return %3 : !llvm.struct<(i64, i64, i64)>
}
llvm.func @step(%x: i64, %y: i64, %z: i64) -> !llvm.struct<(i64, i64)> {
  %r = llvm.call @body(%x, %y, %z) : (i64, i64, i64) -> !llvm.struct<(i64, i64, i64)>
  %f = llvm.extractvalue %r[1] : !llvm.struct<(i64, i64, i64)>
  %g = llvm.extractvalue %r[2] : !llvm.struct<(i64, i64, i64)>
  %0 = llvm.mlir.poison : !llvm.struct<(i64, i64)>
  %1 = llvm.insertvalue %f, %0[0] : !llvm.struct<(i64, i64)>
  %2 = llvm.insertvalue %g, %1[1] : !llvm.struct<(i64, i64)>
  llvm.return %2 : !llvm.struct<(i64, i64)>
}
llvm.func @narrow(%x: i32, %y: i32, %z: i32) {
  llvm.return
}
