// A head whose output (5 features, padded to 6 on 2 ranks) feeds both a
// max and a sum over its split dim: the padding is masked with -inf for
// the one and with 0 for the other.
func.func @main(%x: tensor<4x3xf32> {tg.name = "x", tg.role = #tg.role<data>},
                %w: tensor<3x5xf32> {tg.name = "head.weight", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %h = tg.matmul %x, %w : tensor<4x3xf32>, tensor<3x5xf32>
  %m = tg.max %h dims [1] keepdim : tensor<4x5xf32>
  %s = tg.sum %h dims [1] keepdim : tensor<4x5xf32>
  %t = tg.add %m, %s : tensor<4x1xf32>, tensor<4x1xf32>
  %l = tg.sum %t dims [0, 1] : tensor<4x1xf32>
  return %l : tensor<f32>
}
