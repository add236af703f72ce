// A weight baked in as a dense_resource blob: w[k] = (k, 1), so with x all
// ones every row of the result is (28, 8). run-programs.test lengthens the
// blob by one byte.
func.func @f(%x: tensor<4x8xf32> loc("x")) -> tensor<4x2xf32> {
  %w = arith.constant dense_resource<w_blob> : tensor<8x2xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %r = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x2xf32>) outs(%acc : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w_blob: "0x04000000000000000000803F0000803F0000803F000000400000803F000040400000803F000080400000803F0000A0400000803F0000C0400000803F0000E0400000803F"
    }
  }
#-}
