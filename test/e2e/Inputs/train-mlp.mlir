// A hand-written training step for tp-runner's training loop and the plan
// report's memory classes: a 2-layer MLP, loss = mean((tanh(x W1) W2 - y)^2),
// its backward pass and plain SGD (w <- w - 0.1 dw). Arguments: the two
// weights (tp.param), the input and the target; results: the loss, then the
// updated weights, each naming the argument it replaces (tp.updates).
#x_t = affine_map<(i, j, k) -> (k, i)>
#g_kj = affine_map<(i, j, k) -> (k, j)>
#out_ij = affine_map<(i, j, k) -> (i, j)>
#a_ik = affine_map<(i, j, k) -> (i, k)>
#w_jk = affine_map<(i, j, k) -> (j, k)>
#id2 = affine_map<(i, j) -> (i, j)>
#to_scalar = affine_map<(i, j) -> ()>
func.func @train_step(
    %w1: tensor<16x32xf32> {tp.param, tp.init = {kind = "normal", seed = 11 : i64, std = 0.3 : f64}} loc("w1"),
    %w2: tensor<32x4xf32> {tp.param, tp.init = {kind = "normal", seed = 12 : i64, std = 0.3 : f64}} loc("w2"),
    %x: tensor<8x16xf32> {tp.init = {kind = "normal", seed = 13 : i64, std = 1.0 : f64}} loc("x"),
    %y: tensor<8x4xf32> {tp.init = {kind = "normal", seed = 14 : i64, std = 1.0 : f64}} loc("y"))
    -> (tensor<f32>, tensor<16x32xf32> {tp.updates = 0 : i64},
        tensor<32x4xf32> {tp.updates = 1 : i64}) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %lr = arith.constant 0.1 : f32
  // 2 / (8 x 4): d mean(e^2) / d e.
  %scale = arith.constant 0.0625 : f32
  %inv_n = arith.constant 0.03125 : f32
  // Forward.
  %e832 = tensor.empty() : tensor<8x32xf32>
  %z832 = linalg.fill ins(%zero : f32) outs(%e832 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %pre = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>)
                       outs(%z832 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%pre : tensor<8x32xf32>) outs(%e832 : tensor<8x32xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.tanh %p : f32
    linalg.yield %t : f32
  } -> tensor<8x32xf32>
  %e84 = tensor.empty() : tensor<8x4xf32>
  %z84 = linalg.fill ins(%zero : f32) outs(%e84 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %out = linalg.matmul ins(%h, %w2 : tensor<8x32xf32>, tensor<32x4xf32>)
                       outs(%z84 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %err = linalg.sub ins(%out, %y : tensor<8x4xf32>, tensor<8x4xf32>)
                    outs(%e84 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %es = tensor.empty() : tensor<f32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
  %sq = linalg.generic {indexing_maps = [#id2, #to_scalar], iterator_types = ["reduction", "reduction"]}
      ins(%err : tensor<8x4xf32>) outs(%zs : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.mulf %v, %v : f32
    %a = arith.addf %acc, %m : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
      ins(%sq : tensor<f32>) outs(%es : tensor<f32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %inv_n : f32
    linalg.yield %m : f32
  } -> tensor<f32>
  // Backward.
  %dout = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%err : tensor<8x4xf32>) outs(%e84 : tensor<8x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %scale : f32
    linalg.yield %m : f32
  } -> tensor<8x4xf32>
  // dW2 = h^T dout: [32, 4], summed over the 8 rows.
  %e324 = tensor.empty() : tensor<32x4xf32>
  %z324 = linalg.fill ins(%zero : f32) outs(%e324 : tensor<32x4xf32>) -> tensor<32x4xf32>
  %dw2 = linalg.generic {indexing_maps = [#x_t, #g_kj, #out_ij], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%h, %dout : tensor<8x32xf32>, tensor<8x4xf32>) outs(%z324 : tensor<32x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<32x4xf32>
  // dh = dout W2^T: [8, 32].
  %dh = linalg.generic {indexing_maps = [#a_ik, #w_jk, #out_ij], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dout, %w2 : tensor<8x4xf32>, tensor<32x4xf32>) outs(%z832 : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  // dpre = dh (1 - h^2).
  %dpre = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%dh, %h : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e832 : tensor<8x32xf32>) {
  ^bb0(%g: f32, %t: f32, %o: f32):
    %t2 = arith.mulf %t, %t : f32
    %d = arith.subf %one, %t2 : f32
    %m = arith.mulf %g, %d : f32
    linalg.yield %m : f32
  } -> tensor<8x32xf32>
  // dW1 = x^T dpre: [16, 32].
  %e1632 = tensor.empty() : tensor<16x32xf32>
  %z1632 = linalg.fill ins(%zero : f32) outs(%e1632 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %dw1 = linalg.generic {indexing_maps = [#x_t, #g_kj, #out_ij], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %dpre : tensor<8x16xf32>, tensor<8x32xf32>) outs(%z1632 : tensor<16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  // SGD.
  %w1n = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%w1, %dw1 : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e1632 : tensor<16x32xf32>) {
  ^bb0(%w: f32, %g: f32, %o: f32):
    %s = arith.mulf %g, %lr : f32
    %n = arith.subf %w, %s : f32
    linalg.yield %n : f32
  } -> tensor<16x32xf32>
  %w2n = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%w2, %dw2 : tensor<32x4xf32>, tensor<32x4xf32>) outs(%e324 : tensor<32x4xf32>) {
  ^bb0(%w: f32, %g: f32, %o: f32):
    %s = arith.mulf %g, %lr : f32
    %n = arith.subf %w, %s : f32
    linalg.yield %n : f32
  } -> tensor<32x4xf32>
  return %loss, %w1n, %w2n : tensor<f32>, tensor<16x32xf32>, tensor<32x4xf32>
}
