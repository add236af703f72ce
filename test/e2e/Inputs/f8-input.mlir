func.func @f(%x: tensor<4x8xf8E4M3FN> loc("x")) -> tensor<4x8xf8E4M3FN> {
  return %x : tensor<4x8xf8E4M3FN>
}
