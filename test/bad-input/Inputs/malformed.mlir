// A type missing its closing '>'.
func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = math.tanh %a : tensor<4x8xf32
  return %0 : tensor<4x8xf32>
}
