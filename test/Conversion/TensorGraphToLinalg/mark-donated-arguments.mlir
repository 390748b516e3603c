// RUN: spmdc-opt %s --mark-donated-arguments | FileCheck %s

// A parameter or state returned under its argument's role and name, in its
// type, is the next step's argument: donated, writable. Every other
// argument stays unwritable: data, a parameter not returned, one returned
// under another name, one returned in another type, and @eval's. The mark
// holds the result that comes back as the argument.

// CHECK-LABEL: func.func @main
// CHECK-SAME: %arg0: tensor<4xf32> {bufferization.writable = false, tg.name = "x"
// CHECK-SAME: %arg1: tensor<4xf32> {bufferization.writable = true, spmdc.donated = 1 : i64, tg.name = "w"
// CHECK-SAME: %arg2: tensor<4xf32> {bufferization.writable = true, spmdc.donated = 2 : i64, tg.name = "w.exp_avg"
// CHECK-SAME: %arg3: tensor<4xf32> {bufferization.writable = false, tg.name = "frozen"
// CHECK-SAME: %arg4: tensor<4xf32> {bufferization.writable = false, tg.name = "b"
// CHECK-SAME: %arg5: tensor<4xf32> {bufferization.writable = false, tg.name = "c"
module {
  func.func @main(%x: tensor<4xf32> {tg.name = "x", tg.role = #tg.role<data>},
                  %w: tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>},
                  %m: tensor<4xf32> {tg.name = "w.exp_avg", tg.role = #tg.role<state>},
                  %frozen: tensor<4xf32> {tg.name = "frozen", tg.role = #tg.role<param>},
                  %renamed: tensor<4xf32> {tg.name = "b", tg.role = #tg.role<param>},
                  %resized: tensor<4xf32> {tg.name = "c", tg.role = #tg.role<param>})
      -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>},
          tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>},
          tensor<4xf32> {tg.name = "w.exp_avg", tg.role = #tg.role<state>},
          tensor<4xf32> {tg.name = "b2", tg.role = #tg.role<param>},
          tensor<2xf32> {tg.name = "c", tg.role = #tg.role<param>}) {
    %l = tg.mean %x dims [0] : tensor<4xf32>
    %c = tensor.extract_slice %resized[0] [2] [1] : tensor<4xf32> to tensor<2xf32>
    return %l, %w, %m, %renamed, %c : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>
  }

// CHECK-LABEL: func.func @eval
// CHECK-SAME: %arg0: tensor<4xf32> {bufferization.writable = false, tg.name = "w"
// CHECK-NOT: spmdc.donated
  func.func @eval(%w: tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>})
      -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
    %l = tg.mean %w dims [0] : tensor<4xf32>
    return %l : tensor<f32>
  }

// A private function's arguments are its callers' business.
// CHECK-LABEL: func.func private @helper
// CHECK-SAME: (%arg0: tensor<4xf32>)
  func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32> {
    return %a : tensor<4xf32>
  }
}
