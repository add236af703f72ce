// An integer input that indexes nothing (no bound): y = x + 1.
func.func @f(%x: tensor<4x8xi32> loc("x")) -> tensor<4x8xi32> {
  %one = arith.constant dense<1> : tensor<4x8xi32>
  %e = tensor.empty() : tensor<4x8xi32>
  %y = linalg.add ins(%x, %one : tensor<4x8xi32>, tensor<4x8xi32>) outs(%e : tensor<4x8xi32>) -> tensor<4x8xi32>
  return %y : tensor<4x8xi32>
}
