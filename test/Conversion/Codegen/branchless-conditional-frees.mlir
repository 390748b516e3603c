// RUN: spmdc-opt %s --branchless-conditional-frees | FileCheck %s

// A branch around a lone free becomes a free of a select (free(NULL) does
// nothing) and the blocks join; a branch whose block does more stays.

// CHECK-LABEL: llvm.func @owned
// CHECK:         %[[N0:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT:    %[[P:.*]] = llvm.select %arg2, %arg0, %[[N0]] : i1, !llvm.ptr
// CHECK-NEXT:    llvm.call @free(%[[P]])
// CHECK-NEXT:    %[[N1:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT:    %[[Q:.*]] = llvm.select %arg3, %arg1, %[[N1]] : i1, !llvm.ptr
// CHECK-NEXT:    llvm.call @free(%[[Q]])
// CHECK-NEXT:    llvm.return
llvm.func @free(!llvm.ptr)
llvm.func @other(!llvm.ptr)
llvm.func @owned(%p: !llvm.ptr, %q: !llvm.ptr, %c: i1, %d: i1) {
  llvm.cond_br %c, ^bb1, ^bb2
^bb1:
  llvm.call @free(%p) : (!llvm.ptr) -> ()
  llvm.br ^bb2
^bb2:
  llvm.cond_br %d, ^bb3, ^bb4
^bb3:
  llvm.call @free(%q) : (!llvm.ptr) -> ()
  llvm.br ^bb4
^bb4:
  llvm.return
}

// CHECK-LABEL: llvm.func @kept
// CHECK:         llvm.cond_br %arg1, ^[[T:.*]], ^[[F:.*]]
// CHECK:       ^[[T]]:
// CHECK-NEXT:    llvm.call @other(%arg0)
// CHECK:       ^[[F]]:
// CHECK-NEXT:    llvm.mlir.zero
// CHECK-NEXT:    llvm.select %arg2
// CHECK-NEXT:    llvm.call @free
// CHECK-NEXT:    llvm.return
llvm.func @kept(%p: !llvm.ptr, %c: i1, %d: i1) {
  llvm.cond_br %c, ^bb1, ^bb2
^bb1:
  llvm.call @other(%p) : (!llvm.ptr) -> ()
  llvm.br ^bb2
^bb2:
  llvm.cond_br %d, ^bb3, ^bb4
^bb3:
  llvm.call @free(%p) : (!llvm.ptr) -> ()
  llvm.br ^bb4
^bb4:
  llvm.return
}
