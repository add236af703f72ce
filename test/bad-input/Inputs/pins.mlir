// Pins that blame: a pin on a mesh other than the one planned for, a
// tp.annotate on an argument, and pins no assignment satisfies.
tp.mesh @m ["tp" = 2]
tp.mesh @other ["tp" = 2]
func.func @other_mesh(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %t = math.tanh %a : tensor<4x8xf32>
  %p = tp.annotate %t layout <@other, [-, "tp"]> : tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}
