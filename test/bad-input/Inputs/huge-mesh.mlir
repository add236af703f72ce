// A declared mesh whose axis product overflows 64 bits (it used to divide
// by zero in the planner's layout enumeration).
tp.mesh @m ["x" = 4294967296, "y" = 4294967296]
func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %t = math.tanh %a : tensor<4x8xf32>
  return %t : tensor<4x8xf32>
}
