// An affine.for carrying a tensor: tp-opt accepted it, then the lowering
// stopped on "op was not bufferized" (issue 40); as scf.for it ran.
func.func @main(%a: tensor<8x16xf32>, %w: tensor<16x16xf32> {tp.param}) -> tensor<8x16xf32> {
  %r = affine.for %i = 0 to 3 iter_args(%acc = %a) -> (tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<8x16xf32>
    %s = linalg.add ins(%acc, %a : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
    affine.yield %s : tensor<8x16xf32>
  }
  %z = tensor.empty() : tensor<8x16xf32>
  %c0 = arith.constant 0.0 : f32
  %zf = linalg.fill ins(%c0 : f32) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
  %m = linalg.matmul ins(%r, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%zf : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %m : tensor<8x16xf32>
}
