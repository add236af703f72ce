// A two-matmul MLP (no reshapes) for comparing with upstream MLIR's shard passes.
func.func @mlp(%x: tensor<4096x1024xf32>, %w1: tensor<1024x4096xf32> {tp.param}, %w2: tensor<4096x1024xf32> {tp.param}) -> tensor<4096x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4096x4096xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<4096x1024xf32>, tensor<1024x4096xf32>) outs(%f1 : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4096x4096xf32>) outs(%e1 : tensor<4096x4096xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<4096x4096xf32>
  %e2 = tensor.empty() : tensor<4096x1024xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4096x1024xf32>) -> tensor<4096x1024xf32>
  %y = linalg.matmul ins(%g, %w2 : tensor<4096x4096xf32>, tensor<4096x1024xf32>) outs(%f2 : tensor<4096x1024xf32>) -> tensor<4096x1024xf32>
  return %y : tensor<4096x1024xf32>
}
