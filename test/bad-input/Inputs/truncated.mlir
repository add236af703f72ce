func.func @f(%a: tensor<4x8xf32>, %w: tensor<8x16xf32> {tp.param}) -> tensor<4x16xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x