// Input of lower-gpu-options.test: two matmuls around an activation.
func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<8x32xf32>, %w2: tensor<32x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x32xf32>) -> tensor<4x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<4x8xf32>, tensor<8x32xf32>) outs(%f1 : tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x32xf32>) outs(%e1 : tensor<4x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<4x32xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul ins(%a, %w2 : tensor<4x32xf32>, tensor<32x16xf32>) outs(%f2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
