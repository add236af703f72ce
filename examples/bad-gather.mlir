// A collective whose shapes do not add up: gathering 4 blocks of 768 columns
// cannot give 3000 columns. tp-opt rejects it with a located diagnostic.
tp.mesh @m ["tp" = 4]
func.func @bad(%h: tensor<128x768xf32>) -> tensor<128x3000xf32> {
  %0 = tp.all_gather %h over @m ["tp"] dim = 1 : tensor<128x768xf32> -> tensor<128x3000xf32>
  return %0 : tensor<128x3000xf32>
}
