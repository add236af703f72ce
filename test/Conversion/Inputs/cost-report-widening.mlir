// A product of bf16 operands into an f32 result (torch-mlir's spelling of
// a bf16 matmul whose f32 product is used as it is): one mixed-precision
// GEMM, priced at the bf16 peak of its operands (lower-gpu-cost-report.test).
func.func @widening(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>)
    -> tensor<256x256xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  %p = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>)
                     outs(%f : tensor<256x256xf32>) -> tensor<256x256xf32>
  return %p : tensor<256x256xf32>
}
