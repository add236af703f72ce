// A model that declares its 2 x 2 mesh and pins its input's rows on "dp":
// tp-run runs it on 4 ranks without --tp.
tp.mesh @m ["dp" = 2, "tp" = 2]
func.func @mm(%x: tensor<4x8xf32> {tp.layout = #tp.layout<@m, ["dp", -]>} loc("x"),
              %w: tensor<8x6xf32> {tp.param, tp.init = {kind = "normal", seed = 5 : i64, std = 0.5 : f64}} loc("w"))
    -> tensor<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %h = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%acc : tensor<4x6xf32>) -> tensor<4x6xf32>
  %t = math.tanh %h : tensor<4x6xf32>
  return %t : tensor<4x6xf32>
}
