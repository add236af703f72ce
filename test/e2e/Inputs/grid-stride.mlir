// An elementwise op over 4100 x 4096 = 16,793,600 points, more than the
// 65535 blocks x 256 threads of one elementwise launch: the GPU kernel's
// grid-stride loop runs its second round on some threads
// (test/e2e/run-cuda-emu-mid.test). y = x * sigmoid(x) * w, w broadcast
// along the rows.
#row = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
func.func @main(
    %x: tensor<4100x4096xf32> {tp.init = {kind = "normal", seed = 3 : i64, std = 1.0 : f64}} loc("x"),
    %w: tensor<4096xf32> {tp.param, tp.init = {kind = "normal", seed = 4 : i64, std = 1.0 : f64}} loc("w"))
    -> (tensor<4100x4096xf32> {tp.name = "y"}) {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4100x4096xf32>
  %y = linalg.generic {indexing_maps = [#row, #col, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x, %w : tensor<4100x4096xf32>, tensor<4096xf32>) outs(%e : tensor<4100x4096xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %d = arith.addf %one, %ex : f32
    %s = arith.divf %a, %d : f32
    %r = arith.mulf %s, %b : f32
    linalg.yield %r : f32
  } -> tensor<4100x4096xf32>
  return %y : tensor<4100x4096xf32>
}
