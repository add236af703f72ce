// A parameter pinned to a partial layout: "no layout assignment satisfies
// the pins" gave no reason (issue 40).
tp.mesh @tp ["tp" = 2]
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {tp.param, tp.layout = #tp.layout<@tp, [-, -], partial = sum("tp")>}) -> tensor<4x8xf32> {
  %z = tensor.empty() : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %zf = linalg.fill ins(%c0 : f32) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%zf : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}
