// A bf16 product and an f32 product in one function: the cost report's
// roofline prices each at the peak of its own type
// (lower-gpu-cost-report.test).
func.func @mixed(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>,
                 %c: tensor<16x16xf32>, %d: tensor<16x16xf32>)
    -> (tensor<256x256xbf16>, tensor<16x16xf32>) {
  %z16 = arith.constant 0.0 : bf16
  %z32 = arith.constant 0.0 : f32
  %e16 = tensor.empty() : tensor<256x256xbf16>
  %f16 = linalg.fill ins(%z16 : bf16) outs(%e16 : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  %p16 = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>)
                       outs(%f16 : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  %e32 = tensor.empty() : tensor<16x16xf32>
  %f32 = linalg.fill ins(%z32 : f32) outs(%e32 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %p32 = linalg.matmul ins(%c, %d : tensor<16x16xf32>, tensor<16x16xf32>)
                       outs(%f32 : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %p16, %p32 : tensor<256x256xbf16>, tensor<16x16xf32>
}
