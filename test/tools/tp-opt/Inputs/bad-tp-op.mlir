tp.mesh @m ["tp" = 4]
func.func @bad(%x: tensor<10xf32>) -> tensor<2xf32> {
  %0 = tp.slice %x over @m ["tp"] dim = 0 : tensor<10xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
