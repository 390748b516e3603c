// RUN: spmdc-opt %s --outline-loop-nests | FileCheck %s
// RUN: spmdc-opt %s --outline-loop-nests | FileCheck %s --check-prefix=SHARED
// RUN: spmdc-opt %s --outline-loop-nests | FileCheck %s --check-prefix=REDUCE
// RUN: spmdc-opt %s --outline-loop-nests | FileCheck %s --check-prefix=WORK
// RUN: spmdc-opt %s --outline-loop-nests | FileCheck %s --check-prefix=LINALG
// RUN: spmdc-opt %s --outline-loop-nests | FileCheck %s --check-prefix=NOALIAS

// Each top-level loop nest moves into a function of its own; the values it
// uses from outside become arguments, constants are cloned in.

// CHECK-LABEL: func.func @step
// CHECK-SAME:    (%[[A:.*]]: memref<64xf32>, %[[B:.*]]: memref<64xf32>, %[[S:.*]]: f32)
// CHECK:         call @step_nest0_map(%[[A]], %[[S]], %[[B]]) : (memref<64xf32>, f32, memref<64xf32>) -> ()
// CHECK-NEXT:    %[[V:.*]] = memref.load %[[B]]
// CHECK-NEXT:    call @step_nest1_map(%[[V]], %[[B]]) : (f32, memref<64xf32>) -> ()
// CHECK-NEXT:    return %[[V]]
// CHECK:       func.func private @step_nest0_map(%[[X:.*]]: memref<64xf32>, %[[F:.*]]: f32, %[[Y:.*]]: memref<64xf32>)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         affine.for %[[I:.*]] = 0 to 64
// CHECK:           affine.load %[[X]][%[[I]]]
// CHECK:           arith.mulf %{{.*}}, %[[F]]
// CHECK:         return
// CHECK:       func.func private @step_nest1_map(
// CHECK:         scf.for
func.func @step(%a: memref<64xf32>, %b: memref<64xf32>, %s: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  affine.for %i = 0 to 64 {
    %x = affine.load %a[%i] : memref<64xf32>
    %y = arith.mulf %x, %s : f32
    %z = memref.load %b[%c0] : memref<64xf32>
    %w = arith.addf %y, %z : f32
    affine.store %w, %b[%i] : memref<64xf32>
  }
  %v = memref.load %b[%c0] : memref<64xf32>
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %v, %b[%i] : memref<64xf32>
  }
  return %v : f32
}

// Two nests equal but for the buffers they get (the same loops on the same
// types, as in each layer of a model) share one function; static memrefs
// cross its calls as bare pointers.

// SHARED-LABEL: func.func @layers
// SHARED:        call @layers_nest0_map(%arg0, %arg1)
// SHARED-NEXT:   call @layers_nest0_map(%arg1, %arg2)
// SHARED-NEXT:   return
// SHARED:      func.func private @layers_nest0_map(%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>) attributes {llvm.bareptr}
// SHARED-NOT:  func.func private @layers_nest1
func.func @layers(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %b[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 8 {
    %x = affine.load %b[%i] : memref<8xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %c[%i] : memref<8xf32>
  }
  return
}

// A nest whose store leaves out a loop it is in accumulates over it: its
// name says "reduce" (spmd-run's profile counts its time as a reduction).

// REDUCE-LABEL: func.func @sum
// REDUCE:         call @sum_nest0_reduce(%arg0, %arg1)
func.func @sum(%a: memref<8x4xf32>, %s: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 4 {
      %x = affine.load %a[%i, %j] : memref<8x4xf32>
      %acc = affine.load %s[%i] : memref<8xf32>
      %y = arith.addf %x, %acc : f32
      affine.store %y, %s[%i] : memref<8xf32>
    }
  }
  return
}

// A nest whose ops are located as attention's or the optimizer's
// (tg::workLoc) says so in its name, before its map or reduce.
// WORK-LABEL: func.func @named_work
// WORK:         call @named_work_nest0_attention_reduce(
// WORK:         call @named_work_nest1_optimizer_map(
// WORK:         call @named_work_nest2_map(
func.func @named_work(%a: memref<8xf32>, %b: memref<8xf32>, %s: memref<f32>) {
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %t = affine.load %s[] : memref<f32>
    %m = arith.maximumf %x, %t : f32
    affine.store %m, %s[] : memref<f32>
  } loc("attention"("model.py":3:4))
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.negf %x : f32 loc("optimizer"("model.py":9:1))
    affine.store %y, %b[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 8 {
    %x = affine.load %b[%i] : memref<8xf32>
    %y = arith.negf %x : f32 loc("other"("model.py":9:1))
    affine.store %y, %a[%i] : memref<8xf32>
  }
  return
}

// Linalg ops on buffers are outlined before they are lowered, so equal ops
// (each layer's) are lowered once; a reduction says "reduce"; an op on
// rank-0 buffers has no loop and stays.
// LINALG-LABEL: func.func @linalg_layers
// LINALG:         call @linalg_layers_nest0_map(%arg0, %arg1)
// LINALG-NEXT:    call @linalg_layers_nest0_map(%arg1, %arg2)
// LINALG-NEXT:    call @linalg_layers_nest2_reduce(%arg2, %arg3)
// LINALG-NEXT:    linalg.generic
// LINALG:         return
// LINALG:       func.func private @linalg_layers_nest0_map(%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>) attributes {llvm.bareptr}
// LINALG-NEXT:    linalg.generic
// LINALG:       func.func private @linalg_layers_nest2_reduce(
// LINALG-NOT:   func.func private @linalg_layers_nest1
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#scalar = affine_map<() -> ()>
func.func @linalg_layers(%a: memref<4x8xf32>, %b: memref<4x8xf32>,
                         %c: memref<4x8xf32>, %s: memref<4xf32>,
                         %x: memref<f32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.addf %in, %in : f32
    linalg.yield %y : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : memref<4x8xf32>) outs(%c : memref<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.addf %in, %in : f32
    linalg.yield %y : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%c : memref<4x8xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.addf %in, %out : f32
    linalg.yield %y : f32
  }
  linalg.generic {indexing_maps = [#scalar], iterator_types = []}
      outs(%x : memref<f32>) {
  ^bb0(%out: f32):
    %y = arith.addf %out, %out : f32
    linalg.yield %y : f32
  }
  return
}

// A memref argument whose buffer at the call is an allocation no other
// argument views is llvm.noalias; two views of one allocation are not, nor
// is the caller's own argument.
// NOALIAS-LABEL: func.func @aliasing
// NOALIAS:         call @aliasing_nest0_map(%arg0, %[[A:.*]])
// NOALIAS:         call @aliasing_nest1_map(%[[V0:.*]], %[[V1:.*]])
// NOALIAS:       func.func private @aliasing_nest0_map(%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32> {llvm.noalias})
// NOALIAS:       func.func private @aliasing_nest1_map(%{{.*}}: memref<8xf32, strided<[1]>>, %{{.*}}: memref<8xf32, strided<[1], offset: 8>>)
func.func @aliasing(%in: memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  affine.for %i = 0 to 8 {
    %x = affine.load %in[%i] : memref<8xf32>
    affine.store %x, %a[%i] : memref<8xf32>
  }
  %b = memref.alloc() : memref<16xf32>
  %lo = memref.subview %b[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  %hi = memref.subview %b[8] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1], offset: 8>>
  affine.for %i = 0 to 8 {
    %x = affine.load %lo[%i] : memref<8xf32, strided<[1]>>
    affine.store %x, %hi[%i] : memref<8xf32, strided<[1], offset: 8>>
  }
  return
}
