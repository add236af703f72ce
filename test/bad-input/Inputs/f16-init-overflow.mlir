// An init that overflows its element type: normal draws of std 1e5 in f16
// (largest 65504) were inf, and only "does not match" said so (issue 40).
func.func @main(%x: tensor<4x8xf16>, %w: tensor<8x8xf16> {tp.param, tp.init = {kind = "normal", seed = 1 : i64, std = 1.0e5 : f64}}) -> tensor<4x8xf16> {
  %z = tensor.empty() : tensor<4x8xf16>
  %c0 = arith.constant 0.0 : f16
  %zf = linalg.fill ins(%c0 : f16) outs(%z : tensor<4x8xf16>) -> tensor<4x8xf16>
  %m = linalg.matmul ins(%x, %w : tensor<4x8xf16>, tensor<8x8xf16>) outs(%zf : tensor<4x8xf16>) -> tensor<4x8xf16>
  return %m : tensor<4x8xf16>
}
