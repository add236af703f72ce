func.func @f(%x: tensor<4xcomplex<f32>> loc("x")) -> tensor<4xcomplex<f32>> {
  return %x : tensor<4xcomplex<f32>>
}
