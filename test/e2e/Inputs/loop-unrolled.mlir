// loop-for.mlir without the loop: three products in a row.
func.func @loop(%x: tensor<4x8xf32> loc("x"),
                %w: tensor<8x8xf32> {tp.param, tp.init = {kind = "normal", seed = 5 : i64, std = 0.3 : f64}} loc("w"))
    -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m1 = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m2 = linalg.matmul ins(%m1, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m3 = linalg.matmul ins(%m2, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %m3 : tensor<4x8xf32>
}
