module attributes {tg.model = "mlp"} {
  func.func @main(%arg0: tensor<128x50xf32> {tg.name = "x", tg.role = #tg.role<data>}, %arg1: tensor<128x8xf32> {tg.name = "target", tg.role = #tg.role<data>}, %arg2: tensor<32x50xf32> {tg.name = "fc1.weight", tg.role = #tg.role<param>}, %arg3: tensor<32xf32> {tg.name = "fc1.bias", tg.role = #tg.role<param>}, %arg4: tensor<8x32xf32> {tg.name = "fc2.weight", tg.role = #tg.role<param>}, %arg5: tensor<8xf32> {tg.name = "fc2.bias", tg.role = #tg.role<param>}) -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
    %0 = tg.linear %arg0, %arg2, %arg3 : tensor<128x50xf32>, tensor<32x50xf32>, tensor<32xf32>
    %1 = tg.relu %0 : tensor<128x32xf32>
    %2 = tg.linear %1, %arg4, %arg5 : tensor<128x32xf32>, tensor<8x32xf32>, tensor<8xf32>
    %3 = tg.sigmoid %2 : tensor<128x8xf32>
    %4 = tg.sub %3, %arg1 : tensor<128x8xf32>, tensor<128x8xf32>
    %5 = tg.mul %4, %4 : tensor<128x8xf32>, tensor<128x8xf32>
    %6 = tg.mean %5 dims [0, 1] : tensor<128x8xf32>
    return %6 : tensor<f32>
  }
}

