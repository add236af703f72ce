// A parameter returned as it is, to a result that is replicated (not
// tp.param). Under the default budget (1.1 x the even share: 35 bytes at
// tp=2) it cannot be stored whole (64 bytes), so it is stored split and
// gathered into its result.
func.func @f(%x: tensor<4x4xf32>, %w: tensor<4x4xf32> {tp.param}) -> tensor<4x4xf32> {
  return %w : tensor<4x4xf32>
}
