// RUN: spmdc-opt %s --call-parallel-nests | FileCheck %s

// A call of a marked nest stores its other arguments in a stack buffer and
// calls spmd_parallel_for with the nest's task, the bounds and the step;
// the task loads them back and calls the nest on the range it is given.

// CHECK-LABEL: llvm.func @step
// CHECK-SAME:    (%[[A:.*]]: !llvm.ptr, %[[S:.*]]: f32)
// CHECK:         %[[BUF:.*]] = llvm.alloca %{{.*}} x !llvm.array<2 x i64>
// CHECK:         %[[P0:.*]] = llvm.getelementptr %[[BUF]][0]
// CHECK:         llvm.store %[[A]], %[[P0]] : !llvm.ptr, !llvm.ptr
// CHECK:         %[[P1:.*]] = llvm.getelementptr %[[BUF]][1]
// CHECK:         llvm.store %[[S]], %[[P1]] : f32, !llvm.ptr
// CHECK:         %[[TASK:.*]] = llvm.mlir.addressof @nest_task
// CHECK:         %[[STEP:.*]] = llvm.mlir.constant(8 : i64)
// CHECK:         llvm.call @spmd_parallel_for(%[[TASK]], %[[BUF]], %{{.*}}, %{{.*}}, %[[STEP]])
// CHECK-NOT:     llvm.call @nest(
// CHECK:       llvm.func @nest(
// CHECK-NOT:     spmdc.parallel_step
// CHECK:       llvm.func internal @nest_task(%[[CTX:.*]]: !llvm.ptr, %[[LO:.*]]: i64, %[[HI:.*]]: i64)
// CHECK:         %[[Q0:.*]] = llvm.getelementptr %[[CTX]][0]
// CHECK:         %[[X:.*]] = llvm.load %[[Q0]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[Q1:.*]] = llvm.getelementptr %[[CTX]][1]
// CHECK:         %[[F:.*]] = llvm.load %[[Q1]] : !llvm.ptr -> f32
// CHECK:         llvm.call @nest(%[[X]], %[[F]], %[[LO]], %[[HI]])
// CHECK:       llvm.func @spmd_parallel_for(!llvm.ptr, !llvm.ptr, i64, i64, i64)
llvm.func @step(%a: !llvm.ptr, %s: f32) {
  %lo = llvm.mlir.constant(0 : i64) : i64
  %hi = llvm.mlir.constant(4096 : i64) : i64
  llvm.call @nest(%a, %s, %lo, %hi) : (!llvm.ptr, f32, i64, i64) -> ()
  llvm.return
}
llvm.func @nest(%a: !llvm.ptr, %s: f32, %lo: i64, %hi: i64) attributes {spmdc.parallel_step = 8 : i64} {
  llvm.return
}
