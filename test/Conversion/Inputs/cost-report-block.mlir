// A GEMM over a K split by 2, its all-reduce and a softmax (lower-gpu-cost-report.test).
tp.mesh @tp ["tp" = 2]
func.func @block(%x: tensor<16x32xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>},
                 %w: tensor<32x64xf32> {tp.layout = #tp.layout<@tp, ["tp", -]>})
    -> tensor<16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %h = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f : tensor<16x64xf32>) -> tensor<16x64xf32>
  %y = linalg.softmax dimension(1) ins(%h : tensor<16x64xf32>) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
