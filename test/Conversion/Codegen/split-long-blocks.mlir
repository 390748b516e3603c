// RUN: spmdc-opt %s --split-long-blocks=ops=3 | FileCheck %s
// RUN: not spmdc-opt %s --split-long-blocks=ops=1 2>&1 | FileCheck %s --check-prefix=BAD

// Five ops and a return become blocks of at most three ops, each ending in
// a branch to the next; values flow on without block arguments.

// CHECK-LABEL: llvm.func @glue
// CHECK:         %[[A:.*]] = llvm.add %arg0, %arg0
// CHECK-NEXT:    %[[B:.*]] = llvm.add %[[A]], %arg0
// CHECK-NEXT:    llvm.br ^[[BB1:.*]]
// CHECK-NEXT:  ^[[BB1]]:
// CHECK-NEXT:    %[[C:.*]] = llvm.add %[[B]], %[[A]]
// CHECK-NEXT:    %[[D:.*]] = llvm.add %[[C]], %[[B]]
// CHECK-NEXT:    llvm.br ^[[BB2:.*]]
// CHECK-NEXT:  ^[[BB2]]:
// CHECK-NEXT:    %[[E:.*]] = llvm.add %[[D]], %[[C]]
// CHECK-NEXT:    llvm.return %[[E]]
// BAD: error: split-long-blocks: ops must be at least 2
llvm.func @glue(%x: i64) -> i64 {
  %a = llvm.add %x, %x : i64
  %b = llvm.add %a, %x : i64
  %c = llvm.add %b, %a : i64
  %d = llvm.add %c, %b : i64
  %e = llvm.add %d, %c : i64
  llvm.return %e : i64
}
