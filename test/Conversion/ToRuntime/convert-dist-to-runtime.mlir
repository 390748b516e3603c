// RUN: spmdc-opt %s --convert-dist-to-runtime -split-input-file -verify-diagnostics | FileCheck %s

// Each collective becomes a call on the input's buffer and a fresh output
// buffer, with its kind, dims and packed mesh axes as constants: "tp" is
// axis 1 (code 2), ["tp", "dp"] packs to 2 | 1 << 4 = 18.
// CHECK-LABEL: func.func @collectives
// CHECK-DAG: %[[AR:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[TP:.*]] = arith.constant 2 : i64
// CHECK: %[[IN:.*]] = bufferization.to_buffer %arg0 read_only : tensor<4x8xf32> to memref<4x8xf32>
// CHECK: %[[I:.*]] = memref.cast %[[IN]] : memref<4x8xf32> to memref<*xf32>
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: %[[O:.*]] = memref.cast %[[OUT]] : memref<4x8xf32> to memref<*xf32>
// CHECK: call @spmd_collective_f32(%[[AR]], %{{.*}}, %{{.*}}, %[[TP]], %[[I]], %[[O]])
// CHECK: %[[S:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<4x8xf32> to tensor<4x8xf32>
// CHECK-DAG: %[[AG:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[TPDP:.*]] = arith.constant 18 : i64
// CHECK: bufferization.to_buffer %[[S]] read_only
// CHECK: memref.alloc() : memref<16x8xf32>
// CHECK: call @spmd_collective_f32(%[[AG]], {{.*}}, %[[TPDP]],
// CHECK: %[[A2A:.*]] = arith.constant 3 : i32
// CHECK: memref.alloc() : memref<8x4xf32>
// CHECK: call @spmd_collective_f32(%[[A2A]],
// CHECK: memref.alloc() : memref<i64>
// CHECK: call @spmd_collective_i64(
// An all-reduce by max is kind 5.
// CHECK: %[[MAX:.*]] = arith.constant 5 : i32
// CHECK: call @spmd_collective_f32(%[[MAX]],
// CHECK: func.func private @spmd_collective_f32(i32, i64, i64, i64, memref<*xf32>, memref<*xf32>)
// CHECK: func.func private @spmd_collective_i64(i32, i64, i64, i64, memref<*xi64>, memref<*xi64>)
module attributes {dist.mesh = {axes = ["dp", "tp"], shape = array<i64: 2, 2>}} {
  func.func @collectives(%a: tensor<4x8xf32>, %n: tensor<i64>) -> (tensor<4x8xf32>, tensor<16x8xf32>, tensor<8x4xf32>, tensor<i64>, tensor<4x8xf32>) {
    %s = dist.all_reduce %a axes ["tp"] : tensor<4x8xf32>
    %g = dist.all_gather %s axes ["tp", "dp"] dim 0 : tensor<4x8xf32> -> tensor<16x8xf32>
    %t = dist.all_to_all %a axes ["tp"] split_dim 1 concat_dim 0 : tensor<4x8xf32> -> tensor<8x4xf32>
    %m = dist.all_reduce %n axes ["dp"] : tensor<i64>
    %x = dist.all_reduce %a axes ["tp"] by max : tensor<4x8xf32>
    return %s, %g, %t, %m, %x : tensor<4x8xf32>, tensor<16x8xf32>, tensor<8x4xf32>, tensor<i64>, tensor<4x8xf32>
  }
}

// -----

// The runtime has no f16 collectives.
module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @half(%a: tensor<4xf16>) -> tensor<4xf16> {
    // expected-error @below {{the runtime's collectives take f32, f64, i64 or i32, not 'f16'}}
    %s = dist.all_reduce %a axes ["dp"] : tensor<4xf16>
    return %s : tensor<4xf16>
  }
}

// -----

// Collectives need the module's mesh.
func.func @no_mesh(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{needs a module attribute 'dist.mesh'}}
  %s = dist.all_reduce %a axes ["dp"] : tensor<4xf32>
  return %s : tensor<4xf32>
}
