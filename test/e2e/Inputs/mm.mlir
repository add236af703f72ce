// A tiny model for tp-run's fault and checkpoint tests: y = x @ w + b, with
// named arguments (their names are model.json's buffer names, which a
// checkpoint's tensor names match). Compiles in a fraction of a second.
func.func @mm(%x: tensor<4x8xf32> loc("x"),
              %w: tensor<8x6xf32> {tp.param, tp.init = {kind = "normal", seed = 5 : i64, std = 0.5 : f64}} loc("w"),
              %b: tensor<6xf32> {tp.param, tp.init = {kind = "zeros"}} loc("b"))
    -> tensor<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %h = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x6xf32>)
                     outs(%acc : tensor<4x6xf32>) -> tensor<4x6xf32>
  %bb = linalg.broadcast ins(%b : tensor<6xf32>) outs(%e : tensor<4x6xf32>) dimensions = [0]
  %y = linalg.add ins(%h, %bb : tensor<4x6xf32>, tensor<4x6xf32>)
                  outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}
