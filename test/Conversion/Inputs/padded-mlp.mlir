// A Megatron MLP of hidden size 50 (lower-gpu-padded-gemm.test).
func.func @mlp(%x: tensor<64x16xf32>, %w1: tensor<16x50xf32> {tp.param}, %w2: tensor<50x16xf32> {tp.param})
    -> tensor<64x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64x50xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x50xf32>) -> tensor<64x50xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<64x16xf32>, tensor<16x50xf32>) outs(%f1 : tensor<64x50xf32>) -> tensor<64x50xf32>
  %g = math.exp %h : tensor<64x50xf32>
  %e = tensor.empty() : tensor<64x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
  %y = linalg.matmul ins(%g, %w2 : tensor<64x50xf32>, tensor<50x16xf32>) outs(%f : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}
