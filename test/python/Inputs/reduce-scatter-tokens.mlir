// A Partial sum reduce-scattered along the tokens dimension (the result's pin):
// tp_opt.Plan.sequence_parallel is True only for the token split (issue 42).
tp.mesh @tp ["tp" = 2]
func.func @main(%x: tensor<16x64xf32>, %w1: tensor<64x256xf32> {tp.param, tp.name = "w1", tp.layout = #tp.layout<@tp, [-, "tp"]>}, %w2: tensor<256x256xf32> {tp.param, tp.name = "w2", tp.layout = #tp.layout<@tp, ["tp", -]>}) -> (tensor<16x256xf32> {tp.layout = #tp.layout<@tp, ["tp", -]>}) {
  %c0 = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<16x256xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16x256xf32>) -> tensor<16x256xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<16x64xf32>, tensor<64x256xf32>) outs(%f1 : tensor<16x256xf32>) -> tensor<16x256xf32>
  %e2 = tensor.empty() : tensor<16x256xf32>
  %f2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<16x256xf32>) -> tensor<16x256xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<16x256xf32>, tensor<256x256xf32>) outs(%f2 : tensor<16x256xf32>) -> tensor<16x256xf32>
  return %y : tensor<16x256xf32>
}
