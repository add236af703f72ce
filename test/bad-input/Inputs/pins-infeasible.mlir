// Splitting the rows of the matmul's result (the pin) means reading its
// weight whole, which the default memory budget (the parameters' share)
// forbids: the error names the pin.
tp.mesh @m ["tp" = 4]
func.func @f(%x: tensor<64x32xf32>, %w: tensor<32x64xf32> {tp.param}) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %h = linalg.matmul ins(%x, %w : tensor<64x32xf32>, tensor<32x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  %p = tp.annotate %h layout <@m, ["tp", -]> : tensor<64x64xf32>
  return %p : tensor<64x64xf32>
}
