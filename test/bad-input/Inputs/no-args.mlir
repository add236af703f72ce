// Functions without arguments: one without tensors, one returning a
// constant (used to underflow splitFusedParameters' loop: a segfault).
func.func @g() {
  return
}
func.func @h() -> tensor<4x8xf32> {
  %c = arith.constant dense<1.0> : tensor<4x8xf32>
  %t = math.tanh %c : tensor<4x8xf32>
  return %t : tensor<4x8xf32>
}
