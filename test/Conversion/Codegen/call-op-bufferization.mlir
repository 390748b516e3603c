// RUN: spmdc-opt %s --one-shot-bufferize="bufferize-function-boundaries test-analysis-only" | FileCheck %s
// RUN: spmdc-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=BUFFERS

// spmdc's model of func.call for one-shot bufferization answers what MLIR's
// does: what a call reads, writes and returns of its operands, from the
// callee's analysis. The in-place decisions and copies below are MLIR's.

// A callee that writes its argument and returns it (equivalent), one that
// only reads it, and one that returns a fresh tensor.
func.func private @overwrite(%t: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant 1.0 : f32
  %r = linalg.fill ins(%c : f32) outs(%t : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

func.func private @read(%t: tensor<4xf32>) -> f32 {
  %i = arith.constant 0 : index
  %v = tensor.extract %t[%i] : tensor<4xf32>
  return %v : f32
}

func.func private @fresh(%t: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.copy ins(%t : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// Written while still read after the call: the call gets a buffer of its
// own (not a copy: the callee reads none of it).
// CHECK-LABEL: func.func @read_after_write
// CHECK: call @overwrite(%{{.*}}) {__inplace_operands_attr__ = ["false"]}
// CHECK: call @read(%{{.*}}) {__inplace_operands_attr__ = ["true"]}
// BUFFERS-LABEL: func.func @read_after_write
// BUFFERS-SAME: (%[[X:.*]]: memref<4xf32>)
// BUFFERS: %[[OWN:.*]] = memref.alloc
// BUFFERS-NEXT: call @overwrite(%[[OWN]])
// BUFFERS-NEXT: call @read(%[[X]])
func.func @read_after_write(%x: tensor<4xf32>) -> (tensor<4xf32>, f32) {
  %w = call @overwrite(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %v = call @read(%x) : (tensor<4xf32>) -> f32
  return %w, %v : tensor<4xf32>, f32
}

// Written at its last use: in place, and what the call returns is the
// operand's buffer, read through by the next call.
// CHECK-LABEL: func.func @write_at_last_use
// CHECK: call @overwrite(%{{.*}}) {__inplace_operands_attr__ = ["true"]}
// CHECK: call @read(%{{.*}}) {__inplace_operands_attr__ = ["true"]}
// BUFFERS-LABEL: func.func @write_at_last_use
// BUFFERS-SAME: (%[[X:.*]]: memref<4xf32>)
// BUFFERS-NEXT: %[[W:.*]] = call @overwrite(%[[X]])
// BUFFERS-NEXT: call @read(%[[W]])
func.func @write_at_last_use(%x: tensor<4xf32>) -> f32 {
  %w = call @overwrite(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %v = call @read(%w) : (tensor<4xf32>) -> f32
  return %v : f32
}

// Only read by the call, then overwritten: no copy for the call.
// CHECK-LABEL: func.func @read_then_write
// CHECK: call @read(%{{.*}}) {__inplace_operands_attr__ = ["true"]}
// CHECK: linalg.fill {{.*}}__inplace_operands_attr__ = ["none", "true"]
func.func @read_then_write(%x: tensor<4xf32>) -> (tensor<4xf32>, f32) {
  %v = call @read(%x) : (tensor<4xf32>) -> f32
  %c = arith.constant 2.0 : f32
  %w = linalg.fill ins(%c : f32) outs(%x : tensor<4xf32>) -> tensor<4xf32>
  return %w, %v : tensor<4xf32>, f32
}

// A fresh result does not alias the operand: writing it leaves the
// operand, read afterwards, alone.
// CHECK-LABEL: func.func @fresh_result
// CHECK: call @fresh(%{{.*}}) {__inplace_operands_attr__ = ["true"]}
// CHECK: linalg.fill {{.*}}__inplace_operands_attr__ = ["none", "true"]
// CHECK: call @read(%{{.*}}) {__inplace_operands_attr__ = ["true"]}
func.func @fresh_result(%x: tensor<4xf32>) -> (tensor<4xf32>, f32) {
  %f = call @fresh(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %c = arith.constant 3.0 : f32
  %w = linalg.fill ins(%c : f32) outs(%f : tensor<4xf32>) -> tensor<4xf32>
  %v = call @read(%x) : (tensor<4xf32>) -> f32
  return %w, %v : tensor<4xf32>, f32
}
