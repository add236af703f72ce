// An i8 product whose reduction dimension is split over "tp" (pinned): each
// device's partial sums travel as an i32 all-reduce and wrap modulo 2^8 like
// the unsharded i8 sum.
tp.mesh @m ["tp" = 2]
func.func @f(%x: tensor<4x8xi8> {tp.layout = #tp.layout<@m, [-, "tp"]>} loc("x"),
             %w: tensor<8x6xi8> {tp.param, tp.layout = #tp.layout<@m, ["tp", -]>} loc("w")) -> tensor<4x6xi8> {
  %zero = arith.constant 0 : i8
  %e = tensor.empty() : tensor<4x6xi8>
  %acc = linalg.fill ins(%zero : i8) outs(%e : tensor<4x6xi8>) -> tensor<4x6xi8>
  %h = linalg.matmul ins(%x, %w : tensor<4x8xi8>, tensor<8x6xi8>) outs(%acc : tensor<4x6xi8>) -> tensor<4x6xi8>
  return %h : tensor<4x6xi8>
}
