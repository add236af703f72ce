// A dense_resource blob one byte short of its type (8 floats: 32 bytes).
func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  %w = arith.constant dense_resource<w> : tensor<8xf32>
  %y = arith.addf %a, %w : tensor<8xf32>
  return %y : tensor<8xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F0000004000004040000080400000A0400000C0400000E040000000"
    }
  }
#-}
