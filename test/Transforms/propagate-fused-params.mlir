// RUN: tp-opt %s --tp-propagate="tp=4" | FileCheck %s
// RUN: tp-opt %s --tp-shard="tp=4" | FileCheck %s --check-prefix=SHARD
// RUN: tp-opt %s --tp-propagate="tp=4 split-fused-params=false report=%t.json" -o /dev/null
// RUN: %plan-summary %t.json | FileCheck %s --check-prefix=FUSED
// Regression (issue 17): Hugging Face GPT-2's attention projection as
// torch-mlir exports it: one Conv1D weight [hidden, 3*hidden] and bias
// [3*hidden] (addmm: a matmul into a zero fill plus the broadcast bias),
// the product reshaped and sliced apart into q, k and v. Megatron's plan
// splits each of q, k and v by heads, a strided block of the fused
// dimension: the slices move up to the weight and the bias, which become
// one argument per piece (tp.source says which block of the stored tensor),
// and each piece is split by columns like a separate projection. Without
// the split (FUSED) the fused product is gathered, whole (12288 bytes).

// CHECK-LABEL: func.func @gpt2_attention
// CHECK-SAME: tensor<16x64xf32>
// CHECK-SAME: tensor<64x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>, tp.name = "c_attn.weight", tp.param, tp.source = {offsets = array<i64: 0, 0>, shape = array<i64: 64, 192>}}
// CHECK-SAME: tensor<64x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>, tp.name = "c_attn.weight", tp.param, tp.source = {offsets = array<i64: 0, 64>, shape = array<i64: 64, 192>}}
// CHECK-SAME: tensor<64x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>, tp.name = "c_attn.weight", tp.param, tp.source = {offsets = array<i64: 0, 128>, shape = array<i64: 64, 192>}}
// CHECK-SAME: tensor<64xf32> {tp.layout = #tp.layout<@tp, ["tp"]>, tp.name = "c_attn.bias", tp.param, tp.source = {offsets = array<i64: 0>, shape = array<i64: 192>}}
// CHECK-NOT: tensor.extract_slice
// CHECK: return

// No collective before the attention: each device computes its heads of
// q, k and v.
// SHARD-LABEL: func.func @gpt2_attention
// SHARD-NOT: tp.all_gather
// SHARD: return

// FUSED: all_gather over tp dim=1: 16x48 f32 message=12288 -> tensor.expand_shape
// FUSED-NEXT: totals: collectives=1
tp.mesh @tp ["tp" = 4]
func.func @gpt2_attention(%x: tensor<16x64xf32>,
    %w: tensor<64x192xf32> {tp.param, tp.name = "c_attn.weight"},
    %b: tensor<192xf32> {tp.param, tp.name = "c_attn.bias"})
    -> (tensor<1x16x4x16xf32> {tp.layout = #tp.layout<@tp, [-, -, "tp", -]>},
        tensor<1x16x4x16xf32> {tp.layout = #tp.layout<@tp, [-, -, "tp", -]>},
        tensor<1x16x4x16xf32> {tp.layout = #tp.layout<@tp, [-, -, "tp", -]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x192xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x192xf32>) -> tensor<16x192xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x192xf32>) outs(%f : tensor<16x192xf32>) -> tensor<16x192xf32>
  %bb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<192xf32>) outs(%e : tensor<16x192xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<16x192xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bb : tensor<16x192xf32>, tensor<16x192xf32>) outs(%e : tensor<16x192xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<16x192xf32>
  %qkv = tensor.expand_shape %sum [[0, 1], [2]] output_shape [1, 16, 192] : tensor<16x192xf32> into tensor<1x16x192xf32>
  %q = tensor.extract_slice %qkv[0, 0, 0] [1, 16, 64] [1, 1, 1] : tensor<1x16x192xf32> to tensor<1x16x64xf32>
  %k = tensor.extract_slice %qkv[0, 0, 64] [1, 16, 64] [1, 1, 1] : tensor<1x16x192xf32> to tensor<1x16x64xf32>
  %v = tensor.extract_slice %qkv[0, 0, 128] [1, 16, 64] [1, 1, 1] : tensor<1x16x192xf32> to tensor<1x16x64xf32>
  %qh = tensor.expand_shape %q [[0], [1], [2, 3]] output_shape [1, 16, 4, 16] : tensor<1x16x64xf32> into tensor<1x16x4x16xf32>
  %kh = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [1, 16, 4, 16] : tensor<1x16x64xf32> into tensor<1x16x4x16xf32>
  %vh = tensor.expand_shape %v [[0], [1], [2, 3]] output_shape [1, 16, 4, 16] : tensor<1x16x64xf32> into tensor<1x16x4x16xf32>
  %eq = math.exp %qh : tensor<1x16x4x16xf32>
  %ek = math.exp %kh : tensor<1x16x4x16xf32>
  %ev = math.exp %vh : tensor<1x16x4x16xf32>
  return %eq, %ek, %ev : tensor<1x16x4x16xf32>, tensor<1x16x4x16xf32>, tensor<1x16x4x16xf32>
}
