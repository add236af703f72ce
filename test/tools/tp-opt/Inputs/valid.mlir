tp.mesh @m ["tp" = 4]
func.func @ok(%x: tensor<16xf32>) -> tensor<4xf32> {
  %0 = tp.slice %x over @m ["tp"] dim = 0 : tensor<16xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
