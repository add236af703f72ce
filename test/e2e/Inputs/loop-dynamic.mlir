// A loop over a dynamically shaped tensor (tp-opt plans static shapes
// only).
func.func @f(%x: tensor<4xf32> loc("x")) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %d = tensor.cast %x : tensor<4xf32> to tensor<?xf32>
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%h = %d) -> (tensor<?xf32>) {
    %t = math.tanh %h : tensor<?xf32>
    scf.yield %t : tensor<?xf32>
  }
  %s = tensor.cast %r : tensor<?xf32> to tensor<4xf32>
  return %s : tensor<4xf32>
}
