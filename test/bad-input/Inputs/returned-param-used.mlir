// A parameter both multiplied by and returned (to a replicated result): the
// matmul reads it as stored, the result gathers it.
func.func @both(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {tp.param}) -> (tensor<4x8xf32>, tensor<8x8xf32>) {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y, %w : tensor<4x8xf32>, tensor<8x8xf32>
}
