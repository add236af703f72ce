// A hand-written collective in a program on global shapes: planned as a
// global op it would sum tp copies of %y.
tp.mesh @m ["tp" = 2]
func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = math.tanh %a : tensor<4x8xf32>
  %r = tp.all_reduce sum %y over @m ["tp"] : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
