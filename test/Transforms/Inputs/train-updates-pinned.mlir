// An update pinned in another layout than the argument it updates
// (train-memory.test): the plan follows the pins, and the report remarks
// that the result cannot replace the argument without a collective.
#id = affine_map<(i, j) -> (i, j)>
tp.mesh @tp ["tp" = 2]
func.func @step(%w: tensor<8x8xf32> {tp.param, tp.layout = #tp.layout<@tp, [-, "tp"]>})
    -> (tensor<8x8xf32> {tp.updates = 0 : i64, tp.layout = #tp.layout<@tp, ["tp", -]>}) {
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %half : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  return %n : tensor<8x8xf32>
}
