// The same with an upstream shard.grid (axes numbered) and a shard.shard
// annotation of the input's rows on axis 0.
shard.grid @g(shape = 2x2)
func.func @mm(%x: tensor<4x8xf32> loc("x"),
              %w: tensor<8x6xf32> {tp.param, tp.init = {kind = "normal", seed = 5 : i64, std = 0.5 : f64}} loc("w"))
    -> tensor<4x6xf32> {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %h = linalg.matmul ins(%xs, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%acc : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %h : tensor<4x6xf32>
}
