// MLIR 22's linalg.transpose parser stores a null attribute when an integer
// of its permutation does not fit 64 bits, and crashes (the sanitized fuzz
// run's finding); tp-opt and tp-run refuse the text before parsing it.
// The permutation below is not a note: "dimensions = 3" in a comment is.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%b : tensor<3x2xf32>) permutation = [18446744073709551617, 0]
  return %t : tensor<3x2xf32>
}
