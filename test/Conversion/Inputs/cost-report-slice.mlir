// lower-gpu-cost-report.test: a slice (it reads only its block), and an
// unfused score product (q k^T of two projections) followed by a softmax.
tp.mesh @m ["tp" = 4]
func.func @slice(%x: tensor<16x64xf32>) -> tensor<4x64xf32> {
  %b = tp.slice %x over @m ["tp"] dim = 0 : tensor<16x64xf32> -> tensor<4x64xf32>
  return %b : tensor<4x64xf32>
}

func.func @scores(%x: tensor<8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<16x16xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
  %es = tensor.empty() : tensor<8x8xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<8x8xf32>) -> tensor<8x8xf32>
  %s = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%q, %k : tensor<8x16xf32>, tensor<8x16xf32>) outs(%zs : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<8x8xf32>) outs(%es : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %p : tensor<8x8xf32>
}
