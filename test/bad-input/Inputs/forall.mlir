// scf.forall with tensor.parallel_insert_slice copying rows of an argument,
// then a product with a weight: the planner segfaulted on it (issue 40).
func.func @main(%a: tensor<8x16xf32>, %w: tensor<16x16xf32> {tp.param}) -> tensor<8x16xf32> {
  %init = tensor.empty() : tensor<8x16xf32>
  %r = scf.forall (%i) in (8) shared_outs(%o = %init) -> (tensor<8x16xf32>) {
    %row = tensor.extract_slice %a[%i, 0] [1, 16] [1, 1] : tensor<8x16xf32> to tensor<1x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %row into %o[%i, 0] [1, 16] [1, 1] : tensor<1x16xf32> into tensor<8x16xf32>
    }
  }
  %z = tensor.empty() : tensor<8x16xf32>
  %c0 = arith.constant 0.0 : f32
  %zf = linalg.fill ins(%c0 : f32) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
  %m = linalg.matmul ins(%r, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%zf : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %m : tensor<8x16xf32>
}
