// Token ids into a 16-row table: the ids' bound is 16 (IndexBounds.h).
func.func @f(%ids: tensor<1x4xi64> loc("ids"),
             %t: tensor<16x8xf32> {tp.param, tp.init = {kind = "normal", seed = 1 : i64, std = 1.0 : f64}} loc("t")) -> tensor<1x4x8xf32> {
  %e = tensor.empty() : tensor<1x4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b)>, affine_map<(a, b, c) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<1x4xi64>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%id: i64, %o: f32):
    %i = arith.index_cast %id : i64 to index
    %c = linalg.index 2 : index
    %v = tensor.extract %t[%i, %c] : tensor<16x8xf32>
    linalg.yield %v : f32
  } -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}
