// Token ids into a 16-row table, spelled as torch-mlir exports an embedding
// (the lookup checks its index with cf.assert): the ids' bound is 16
// (tools/tp-run/IndexBounds.h).
func.func @f(%ids: tensor<1x4xi64> loc("ids"),
             %t: tensor<16x8xf32> {tp.param, tp.init = {kind = "normal", seed = 1 : i64, std = 1.0 : f64}} loc("t")) -> tensor<1x4x8xf32> {
  %c16 = arith.constant 16 : index
  %c0_i64 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<1x4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b)>, affine_map<(a, b, c) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<1x4xi64>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%id: i64, %o: f32):
    %i = arith.index_cast %id : i64 to index
    %c = linalg.index 2 : index
    %lt = arith.cmpi slt, %i, %c16 : index
    cf.assert %lt, "index must be smaller than dim size"
    %ge = arith.cmpi sge, %id, %c0_i64 : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %v = tensor.extract %t[%i, %c] : tensor<16x8xf32>
    linalg.yield %v : f32
  } -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}
