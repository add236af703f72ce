// An empty reassociation group: MLIR 22's expand_shape verifier reads past
// it (the sanitized fuzz run's second finding). A 0-d collapse's empty
// reassociation, `[]` alone, is valid and not refused.
func.func @f(%a: tensor<8x8xf32>, %s: tensor<1x1xf32>) -> (tensor<1x8x8x1xf32>, tensor<f32>) {
  %e = tensor.expand_shape %a [[0, 1], [2], [ ]] output_shape [1, 8, 8, 1] : tensor<8x8xf32> into tensor<1x8x8x1xf32>
  %c = tensor.collapse_shape %s [] : tensor<1x1xf32> into tensor<f32>
  return %e, %c : tensor<1x8x8x1xf32>, tensor<f32>
}
