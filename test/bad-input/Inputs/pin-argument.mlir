tp.mesh @m ["tp" = 2]
func.func @annotate_argument(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %p = tp.annotate %a layout <@m, [-, "tp"]> : tensor<4x8xf32>
  %t = math.tanh %p : tensor<4x8xf32>
  return %t : tensor<4x8xf32>
}
