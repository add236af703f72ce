// Buffer names (model.json "name", the tensor a checkpoint provides): an
// argument's or result's tp.name, else the argument's NameLoc, else argN /
// resultN (run-names.test).
func.func @named(%x: tensor<4x8xf32> {tp.name = "input_embeds"} loc("x_loc"),
                 %w: tensor<8x6xf32> {tp.param} loc("w"),
                 %b: tensor<6xf32> {tp.param})
    -> (tensor<4x6xf32> {tp.name = "logits"}, tensor<4x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %h = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x6xf32>)
                     outs(%acc : tensor<4x6xf32>) -> tensor<4x6xf32>
  %bb = linalg.broadcast ins(%b : tensor<6xf32>) outs(%e : tensor<4x6xf32>) dimensions = [0]
  %y = linalg.add ins(%h, %bb : tensor<4x6xf32>, tensor<4x6xf32>)
                  outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %y, %h : tensor<4x6xf32>, tensor<4x6xf32>
}
