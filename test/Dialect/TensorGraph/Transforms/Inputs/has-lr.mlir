// A graph that already takes a learning rate: --tg-optimizer refuses to
// add another (tg-optimizer.mlir).
func.func @main(%w: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>},
                %lr: tensor<f64> {tg.name = "lr", tg.role = #tg.role<hyper>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %s = tg.mul %w, %w : tensor<2xf32>, tensor<2xf32>
  %l = tg.sum %s dims [0] : tensor<2xf32>
  return %l : tensor<f32>
}
