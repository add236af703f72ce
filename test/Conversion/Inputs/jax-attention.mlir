// Attention as JAX writes it and IREE's StableHLO input pipeline converts
// it to linalg (a Llama layer's core, GQA 4 heads over 2 kv heads, head
// dimension 16, 8 tokens, f32): K and V broadcast to
// [batch, kv_heads, group, seq, head_dim] and collapsed to the heads; the
// scores a contraction generic; the scale a division by a broadcast 0-d
// tensor; the causal mask an i1 tensor of iota compares, broadcast, in a
// select against the lowest float; the row max a linalg.reduce broadcast
// back by a copy generic; the row sum a generic kept as [.., 1] and
// broadcast back with a (d0, d1, d2, 0) map; the product with V a batch
// matmul on [batch * heads, seq, head_dim].
#b4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#kv = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#qs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#ks = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
#ss = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#scalar = affine_map<(d0, d1, d2, d3) -> ()>
#m2 = affine_map<(d0, d1) -> (d0, d1)>
#mb = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#rowk = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
module {
func.func @attention(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  // GQA: K and V broadcast over the group, collapsed into the heads.
  %e5 = tensor.empty() : tensor<1x2x2x8x16xf32>
  %kb = linalg.generic {indexing_maps = [#kv, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%k : tensor<1x2x8x16xf32>) outs(%e5 : tensor<1x2x2x8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x2x2x8x16xf32>
  %kh = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x16xf32> into tensor<1x4x8x16xf32>
  %vb = linalg.generic {indexing_maps = [#kv, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%v : tensor<1x2x8x16xf32>) outs(%e5 : tensor<1x2x2x8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x2x2x8x16xf32>
  %vh = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x16xf32> into tensor<1x4x8x16xf32>
  // Scores: dot_general over the head dimension.
  %es = tensor.empty() : tensor<1x4x8x8xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %s = linalg.generic {indexing_maps = [#qs, #ks, #ss], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kh : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) outs(%fs : tensor<1x4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x8xf32>
  // The scale: a division by a broadcast 0-d tensor.
  %sqrtd = arith.constant dense<4.0> : tensor<f32>
  %scale = linalg.generic {indexing_maps = [#scalar, #b4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sqrtd : tensor<f32>) outs(%es : tensor<1x4x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x4x8x8xf32>
  %scaled = linalg.generic {indexing_maps = [#b4, #b4, #b4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %scale : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) outs(%es : tensor<1x4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x8xf32>
  // The causal mask: iota >= iota as an i1 tensor, broadcast.
  %ei = tensor.empty() : tensor<8x8xi32>
  %rows = linalg.generic {indexing_maps = [#m2], iterator_types = ["parallel", "parallel"]} outs(%ei : tensor<8x8xi32>) {
  ^bb0(%out: i32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i32
    linalg.yield %c : i32
  } -> tensor<8x8xi32>
  %cols = linalg.generic {indexing_maps = [#m2], iterator_types = ["parallel", "parallel"]} outs(%ei : tensor<8x8xi32>) {
  ^bb0(%out: i32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i32
    linalg.yield %c : i32
  } -> tensor<8x8xi32>
  %eb = tensor.empty() : tensor<8x8xi1>
  %mask = linalg.generic {indexing_maps = [#m2, #m2, #m2], iterator_types = ["parallel", "parallel"]} ins(%rows, %cols : tensor<8x8xi32>, tensor<8x8xi32>) outs(%eb : tensor<8x8xi1>) {
  ^bb0(%a: i32, %b: i32, %out: i1):
    %r = arith.cmpi sge, %a, %b : i32
    linalg.yield %r : i1
  } -> tensor<8x8xi1>
  %emb = tensor.empty() : tensor<1x4x8x8xi1>
  %maskb = linalg.generic {indexing_maps = [#mb, #b4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mask : tensor<8x8xi1>) outs(%emb : tensor<1x4x8x8xi1>) {
  ^bb0(%in: i1, %out: i1):
    linalg.yield %in : i1
  } -> tensor<1x4x8x8xi1>
  %lowest = arith.constant dense<-3.40282347E+38> : tensor<f32>
  %lowb = linalg.generic {indexing_maps = [#scalar, #b4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%lowest : tensor<f32>) outs(%es : tensor<1x4x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x4x8x8xf32>
  %masked = linalg.generic {indexing_maps = [#b4, #b4, #b4, #b4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%maskb, %scaled, %lowb : tensor<1x4x8x8xi1>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) outs(%es : tensor<1x4x8x8xf32>) {
  ^bb0(%m: i1, %x: f32, %l: f32, %out: f32):
    %r = arith.select %m, %x, %l : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x8xf32>
  // softmax: max (linalg.reduce), broadcast back by a copy generic.
  %er = tensor.empty() : tensor<1x4x8xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %max = linalg.reduce ins(%masked : tensor<1x4x8x8xf32>) outs(%fm : tensor<1x4x8xf32>) dimensions = [3]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %in, %acc : f32
      linalg.yield %r : f32
    }
  %maxb = linalg.generic {indexing_maps = [#row, #b4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%max : tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x4x8x8xf32>
  %sub = linalg.generic {indexing_maps = [#b4, #b4, #b4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%masked, %maxb : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) outs(%es : tensor<1x4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x8xf32>
  %exp = linalg.generic {indexing_maps = [#b4, #b4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<1x4x8x8xf32>) outs(%es : tensor<1x4x8x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x8xf32>
  // The row sum as a generic, kept as [.., 1], broadcast with (d0, d1, d2, 0).
  %fz = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %sum = linalg.generic {indexing_maps = [#b4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%exp : tensor<1x4x8x8xf32>) outs(%fz : tensor<1x4x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8xf32>
  %sumk = tensor.expand_shape %sum [[0], [1], [2, 3]] output_shape [1, 4, 8, 1] : tensor<1x4x8xf32> into tensor<1x4x8x1xf32>
  %sumb = linalg.generic {indexing_maps = [#rowk, #b4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sumk : tensor<1x4x8x1xf32>) outs(%es : tensor<1x4x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x4x8x8xf32>
  %probs = linalg.generic {indexing_maps = [#b4, #b4, #b4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%exp, %sumb : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) outs(%es : tensor<1x4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x8xf32>
  // The product with V: a batch matmul over batch * heads.
  %p3 = tensor.collapse_shape %probs [[0, 1], [2], [3]] : tensor<1x4x8x8xf32> into tensor<4x8x8xf32>
  %v3 = tensor.collapse_shape %vh [[0, 1], [2], [3]] : tensor<1x4x8x16xf32> into tensor<4x8x16xf32>
  %eo = tensor.empty() : tensor<4x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %o3 = linalg.batch_matmul ins(%p3, %v3 : tensor<4x8x8xf32>, tensor<4x8x16xf32>) outs(%fo : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %o = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [1, 4, 8, 16] : tensor<4x8x16xf32> into tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}
}
