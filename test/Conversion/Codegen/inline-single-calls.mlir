// RUN: spmdc-opt %s --split-input-file --inline-single-calls | FileCheck %s

// @backward, called once, is inlined into @main; @forward, which @eval
// calls too, stays a function, as does a public function called once.

// CHECK-LABEL: func.func @main
// CHECK-SAME:  (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:  %[[S:.*]]:2 = call @forward(%[[X]])
// CHECK-NEXT:  %[[N:.*]] = tg.neg %[[S]]#1
// CHECK-NEXT:  %[[G:.*]] = tg.mul %[[N]], %[[X]]
// CHECK-NEXT:  %[[P:.*]] = call @public(%[[G]])
// CHECK-NEXT:  return %[[S]]#0, %[[P]]
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s:2 = call @forward(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %g = call @backward(%s#1, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %p = call @public(%g) : (tensor<4xf32>) -> tensor<4xf32>
  return %s#0, %p : tensor<4xf32>, tensor<4xf32>
}
// CHECK-LABEL: func.func @eval
// CHECK-NEXT:  call @forward
func.func @eval(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s:2 = call @forward(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %s#0 : tensor<4xf32>
}
// CHECK:       func.func private @forward
func.func private @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y = tg.exp %x : tensor<4xf32>
  return %y, %y : tensor<4xf32>, tensor<4xf32>
}
// CHECK-NOT:   @backward
func.func private @backward(%s: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %n = tg.neg %s : tensor<4xf32>
  %g = tg.mul %n, %x : tensor<4xf32>, tensor<4xf32>
  return %g : tensor<4xf32>
}
// CHECK:       func.func @public
func.func @public(%g: tensor<4xf32>) -> tensor<4xf32> {
  return %g : tensor<4xf32>
}

// -----

// A function's calls move with its body: @outer's one call of @inner comes
// into @main with it, and @inner is inlined there too. A function that
// calls itself is not inlined.

// CHECK-LABEL: func.func @main
// CHECK-NEXT:  %[[A:.*]] = tg.exp
// CHECK-NEXT:  %[[B:.*]] = tg.neg %[[A]]
// CHECK-NEXT:  %[[C:.*]] = call @self(%[[B]])
// CHECK-NEXT:  return %[[C]]
// CHECK-NOT:   @outer
// CHECK-NOT:   @inner
// CHECK:       func.func private @self
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = call @outer(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @outer(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tg.exp %x : tensor<4xf32>
  %y = call @inner(%e) : (tensor<4xf32>) -> tensor<4xf32>
  %z = call @self(%y) : (tensor<4xf32>) -> tensor<4xf32>
  return %z : tensor<4xf32>
}
func.func private @inner(%x: tensor<4xf32>) -> tensor<4xf32> {
  %n = tg.neg %x : tensor<4xf32>
  return %n : tensor<4xf32>
}
func.func private @self(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = call @self(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
