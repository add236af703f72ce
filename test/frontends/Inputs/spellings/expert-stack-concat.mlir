// tp-import's spelling of Mixtral's experts (run-fused.test): one tensor
// per expert, stacked by a concat and an expand_shape, gate | up by a
// concat along the rows, gathered per (token, choice) by expert id, a
// batched matmul, and gate | up cut apart. Weights drawn by tp.init.
#gs = affine_map<(d0, d1, d2) -> (d0)>
#os = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#ms = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%h: tensor<8x16xf32>, %ids: tensor<8xi64>,
    %w1a: tensor<32x16xf32> {tp.param, tp.init = {kind = "normal", seed = 1 : i64, std = 0.5 : f64}, tp.name = "experts.0.w1"},
    %w1b: tensor<32x16xf32> {tp.param, tp.init = {kind = "normal", seed = 2 : i64, std = 0.5 : f64}, tp.name = "experts.1.w1"},
    %w3a: tensor<32x16xf32> {tp.param, tp.init = {kind = "normal", seed = 3 : i64, std = 0.5 : f64}, tp.name = "experts.0.w3"},
    %w3b: tensor<32x16xf32> {tp.param, tp.init = {kind = "normal", seed = 4 : i64, std = 0.5 : f64}, tp.name = "experts.1.w3"})
    -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %c1 = tensor.concat dim(0) %w1a, %w1b : (tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
  %s1 = tensor.expand_shape %c1 [[0, 1], [2]] output_shape [2, 32, 16] : tensor<64x16xf32> into tensor<2x32x16xf32>
  %c3 = tensor.concat dim(0) %w3a, %w3b : (tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
  %s3 = tensor.expand_shape %c3 [[0, 1], [2]] output_shape [2, 32, 16] : tensor<64x16xf32> into tensor<2x32x16xf32>
  %w = tensor.concat dim(1) %s1, %s3 : (tensor<2x32x16xf32>, tensor<2x32x16xf32>) -> tensor<2x64x16xf32>
  %e = tensor.empty() : tensor<8x64x16xf32>
  %sel = linalg.generic {indexing_maps = [#gs, #os], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<8xi64>) outs(%e : tensor<8x64x16xf32>) {
  ^bb0(%id: i64, %out: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 1 : index
    %k = linalg.index 2 : index
    %val = tensor.extract %w[%i, %j, %k] : tensor<2x64x16xf32>
    linalg.yield %val : f32
  } -> tensor<8x64x16xf32>
  %hx = tensor.expand_shape %h [[0], [1, 2]] output_shape [8, 16, 1] : tensor<8x16xf32> into tensor<8x16x1xf32>
  %eo = tensor.empty() : tensor<8x64x1xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<8x64x1xf32>) -> tensor<8x64x1xf32>
  %bmm = linalg.batch_matmul ins(%sel, %hx : tensor<8x64x16xf32>, tensor<8x16x1xf32>) outs(%fo : tensor<8x64x1xf32>) -> tensor<8x64x1xf32>
  %out = tensor.collapse_shape %bmm [[0], [1, 2]] : tensor<8x64x1xf32> into tensor<8x64xf32>
  %gate = tensor.extract_slice %out[0, 0] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
  %up = tensor.extract_slice %out[0, 32] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
  %es = tensor.empty() : tensor<8x32xf32>
  %act = linalg.generic {indexing_maps = [#ms, #ms, #ms], iterator_types = ["parallel", "parallel"]}
      ins(%gate, %up : tensor<8x32xf32>, tensor<8x32xf32>) outs(%es : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = math.tanh %a : f32
    %p = arith.mulf %t, %b : f32
    linalg.yield %p : f32
  } -> tensor<8x32xf32>
  return %act : tensor<8x32xf32>
}
