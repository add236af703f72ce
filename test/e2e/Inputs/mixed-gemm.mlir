// Two bf16 products into f32 results, as torch-mlir spells them
// (run-mixed-gemm.test; data from make-mixed-gemm.py): logits = x head^T,
// a linalg.generic that widens both operands with arith.extf and sums in
// f32 (2-D, the weight read transposed), and scores = q k, a
// linalg.batch_matmul of bf16 into f32. Both results stay f32: the mixed
// GEMM calls, whose C must hold the f32 sums unrounded.
func.func @main(%x: tensor<8x96xbf16> {tp.name = "x"},
                %head: tensor<48x96xbf16> {tp.param, tp.name = "head"},
                %q: tensor<4x8x32xbf16> {tp.name = "q"},
                %k: tensor<4x32x8xbf16> {tp.name = "k"})
    -> (tensor<8x48xf32> {tp.name = "logits"}, tensor<4x8x8xf32> {tp.name = "scores"}) {
  %zero = arith.constant 0.0 : f32
  %el = tensor.empty() : tensor<8x48xf32>
  %fl = linalg.fill ins(%zero : f32) outs(%el : tensor<8x48xf32>) -> tensor<8x48xf32>
  %logits = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                            iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %head : tensor<8x96xbf16>, tensor<48x96xbf16>) outs(%fl : tensor<8x48xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %ea = arith.extf %a : bf16 to f32
    %eb = arith.extf %b : bf16 to f32
    %p = arith.mulf %ea, %eb : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x48xf32>
  %es = tensor.empty() : tensor<4x8x8xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %scores = linalg.batch_matmul ins(%q, %k : tensor<4x8x32xbf16>, tensor<4x32x8xbf16>) outs(%fs : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  return %logits, %scores : tensor<8x48xf32>, tensor<4x8x8xf32>
}
