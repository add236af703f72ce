// Two arguments named alike with different types: accepted before, and the
// later error blamed a checkpoint shape (issue 40).
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {tp.param, tp.name = "w"}, %v: tensor<8x16xf32> {tp.param, tp.name = "w"}) -> tensor<4x16xf32> {
  %z = tensor.empty() : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %zf = linalg.fill ins(%c0 : f32) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%zf : tensor<4x8xf32>) -> tensor<4x8xf32>
  %z2 = tensor.empty() : tensor<4x16xf32>
  %zf2 = linalg.fill ins(%c0 : f32) outs(%z2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %n = linalg.matmul ins(%m, %v : tensor<4x8xf32>, tensor<8x16xf32>) outs(%zf2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %n : tensor<4x16xf32>
}
