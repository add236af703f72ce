// A tiny language model written as a front end (torch-mlir) writes one: no
// tp.init, buffers named by tp.name after the PyTorch parameters, the token
// embedding tied to the output projection (two arguments named
// "wte.weight"), a transposed [out, in] weight before the matmul. The
// weights and the token ids come from a checkpoint (run-hub-checkpoint.test).
#gather_in = affine_map<(b, s, d) -> (b, s)>
#gather_out = affine_map<(b, s, d) -> (b, s, d)>
#scale = affine_map<(b, s, d) -> (d)>
func.func @forward(%ids: tensor<1x4xi64> {tp.name = "input_ids"},
                   %wte: tensor<16x8xf32> {tp.param, tp.name = "wte.weight"},
                   %ln: tensor<8xf32> {tp.param, tp.name = "ln_f.weight"},
                   %head: tensor<16x8xf32> {tp.param, tp.name = "wte.weight"})
    -> (tensor<1x4x16xf32> {tp.name = "logits"}) {
  %e = tensor.empty() : tensor<1x4x8xf32>
  %h = linalg.generic {indexing_maps = [#gather_in, #gather_out],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<1x4xi64>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%id: i64, %out: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 2 : index
    %v = tensor.extract %wte[%row, %col] : tensor<16x8xf32>
    linalg.yield %v : f32
  } -> tensor<1x4x8xf32>
  %scaled = linalg.generic {indexing_maps = [#gather_out, #scale, #gather_out],
                            iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%h, %ln : tensor<1x4x8xf32>, tensor<8xf32>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%a: f32, %g: f32, %out: f32):
    %m = arith.mulf %a, %g : f32
    linalg.yield %m : f32
  } -> tensor<1x4x8xf32>
  %flat = tensor.collapse_shape %scaled [[0, 1], [2]] : tensor<1x4x8xf32> into tensor<4x8xf32>
  %te = tensor.empty() : tensor<8x16xf32>
  %headT = linalg.transpose ins(%head : tensor<16x8xf32>) outs(%te : tensor<8x16xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %me = tensor.empty() : tensor<4x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%me : tensor<4x16xf32>) -> tensor<4x16xf32>
  %logits = linalg.matmul ins(%flat, %headT : tensor<4x8xf32>, tensor<8x16xf32>)
                          outs(%acc : tensor<4x16xf32>) -> tensor<4x16xf32>
  %out = tensor.expand_shape %logits [[0, 1], [2]] output_shape [1, 4, 16] : tensor<4x16xf32> into tensor<1x4x16xf32>
  return %out : tensor<1x4x16xf32>
}
