// torch-mlir's spellings of a bf16 model's products (utils/tp-import
// --dtype bf16), for lower-gemm-mixed.test: a linear (the weight
// transposed, a linalg.matmul of bf16 into a zero-filled f32, a truncf back
// to bf16), attention scores (linalg.batch_matmul of bf16 into f32, read
// in f32 by a softmax-like scale), and a head whose f32 product is the
// result (a linalg.generic that widens both operands with arith.extf).
func.func @main(%x: tensor<8x64xbf16> {tp.name = "x"},
                %w: tensor<64x64xbf16> {tp.param, tp.name = "w"},
                %head: tensor<32x64xbf16> {tp.param, tp.name = "head"})
    -> (tensor<2x8x8xf32> {tp.name = "scores"}, tensor<8x32xf32> {tp.name = "logits"}) {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.125 : f32
  %et = tensor.empty() : tensor<64x64xbf16>
  %wt = linalg.transpose ins(%w : tensor<64x64xbf16>) outs(%et : tensor<64x64xbf16>) permutation = [1, 0]
  %e = tensor.empty() : tensor<8x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
  %p = linalg.matmul ins(%x, %wt : tensor<8x64xbf16>, tensor<64x64xbf16>) outs(%f : tensor<8x64xf32>) -> tensor<8x64xf32>
  %e16 = tensor.empty() : tensor<8x64xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<8x64xf32>) outs(%e16 : tensor<8x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x64xbf16>
  %q = tensor.expand_shape %h [[0], [1, 2]] output_shape [8, 2, 32] : tensor<8x64xbf16> into tensor<8x2x32xbf16>
  %eq = tensor.empty() : tensor<2x8x32xbf16>
  %qt = linalg.transpose ins(%q : tensor<8x2x32xbf16>) outs(%eq : tensor<2x8x32xbf16>) permutation = [1, 0, 2]
  %ek = tensor.empty() : tensor<2x32x8xbf16>
  %kt = linalg.transpose ins(%q : tensor<8x2x32xbf16>) outs(%ek : tensor<2x32x8xbf16>) permutation = [1, 2, 0]
  %es = tensor.empty() : tensor<2x8x8xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%qt, %kt : tensor<2x8x32xbf16>, tensor<2x32x8xbf16>) outs(%fs : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %scores = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%es : tensor<2x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    linalg.yield %m : f32
  } -> tensor<2x8x8xf32>
  %el = tensor.empty() : tensor<8x32xf32>
  %fl = linalg.fill ins(%zero : f32) outs(%el : tensor<8x32xf32>) -> tensor<8x32xf32>
  %logits = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                            iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%h, %head : tensor<8x64xbf16>, tensor<32x64xbf16>) outs(%fl : tensor<8x32xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %ea = arith.extf %a : bf16 to f32
    %eb = arith.extf %b : bf16 to f32
    %pr = arith.mulf %ea, %eb : f32
    %sum = arith.addf %acc, %pr : f32
    linalg.yield %sum : f32
  } -> tensor<8x32xf32>
  return %scores, %logits : tensor<2x8x8xf32>, tensor<8x32xf32>
}
