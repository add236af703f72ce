// Attention-like scores through linalg.softmax and an elementwise op on
// tensors (math.tanh), as front ends write them; used by run-softmax.test.
func.func @scores(%q: tensor<8x16xf32>, %k: tensor<16x32xf32> {tp.param, tp.init = {kind = "normal", seed = 5 : i64, std = 0.5 : f64}}) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %s = linalg.matmul ins(%q, %k : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %t = math.tanh %p : tensor<8x32xf32>
  return %t : tensor<8x32xf32>
}
