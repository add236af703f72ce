// Contractions over K = 50257 split with padding (lower-gpu-padded-gemm.test).
tp.mesh @tp ["tp" = 4]
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @padded_k(%a: tensor<4x50257xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>},
                    %b: tensor<50257x8xf32> {tp.layout = #tp.layout<@tp, ["tp", -]>},
                    %qa: tensor<2x4x50257xf32> {tp.layout = #tp.layout<@tp, [-, -, "tp"]>},
                    %qb: tensor<2x50257x8xf32> {tp.layout = #tp.layout<@tp, [-, "tp", -]>},
                    %bt: tensor<8x50257xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>})
    -> (tensor<4x8xf32> {tp.layout = #tp.layout<@tp, [-, -]>},
        tensor<2x4x8xf32> {tp.layout = #tp.layout<@tp, [-, -, -], partial = sum("tp")>},
        tensor<4x8xf32> {tp.layout = #tp.layout<@tp, [-, -], partial = sum("tp")>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x50257xf32>, tensor<50257x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<2x4x8xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %bm = linalg.batch_matmul ins(%qa, %qb : tensor<2x4x50257xf32>, tensor<2x50257x8xf32>) outs(%f3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // tp-gen's spelling: a generic contraction (here reading b transposed).
  %g = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %bt : tensor<4x50257xf32>, tensor<8x50257xf32>) outs(%f : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %m, %bm, %g : tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>
}
