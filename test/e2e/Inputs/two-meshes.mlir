// Two meshes: tp-run cannot tell which one the model runs on.
tp.mesh @a ["tp" = 2]
tp.mesh @b ["tp" = 4]
func.func @f(%x: tensor<8xf32> loc("x")) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}
