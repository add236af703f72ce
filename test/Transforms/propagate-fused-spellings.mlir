// RUN: tp-opt %s -split-input-file --tp-propagate="tp=4" | FileCheck %s
// RUN: tp-opt %s -split-input-file --tp-shard="tp=4" | FileCheck %s --check-prefix=SHARD
// Regressions (issue 28): fused weights in the spellings front ends use
// besides the same-rank slices of propagate-fused-params.mlir. One
// mechanism covers them (FusedParams.cpp): every use that reads a block of
// a value along one dimension is a cut, whatever op spells it; cuts move up
// through the ops that compute the value until they reach the weight,
// which becomes one argument per piece (tp.source). Each piece then splits
// like a separate projection: no collective before the attention or the
// MLP.

// GPT-2's c_attn product viewed as [tokens, 3, heads, head_dim] and cut
// with rank-reducing slices (`qkv.unbind(2)`): the cut of the 3 moves up
// through the expand_shape as a block of hidden columns.
// CHECK-LABEL: func.func @rank_reducing_unbind
// CHECK-SAME: tensor<64x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>, tp.name = "c_attn.weight", tp.param, tp.source = {offsets = array<i64: 0, 0>, shape = array<i64: 64, 192>}}
// CHECK-SAME: tensor<64x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>, tp.name = "c_attn.weight", tp.param, tp.source = {offsets = array<i64: 0, 64>, shape = array<i64: 64, 192>}}
// CHECK-SAME: tensor<64x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>, tp.name = "c_attn.weight", tp.param, tp.source = {offsets = array<i64: 0, 128>, shape = array<i64: 64, 192>}}
// SHARD-LABEL: func.func @rank_reducing_unbind
// SHARD-NOT: tp.all_gather
// SHARD: return
tp.mesh @tp ["tp" = 4]
func.func @rank_reducing_unbind(%x: tensor<16x64xf32>,
    %w: tensor<64x192xf32> {tp.param, tp.name = "c_attn.weight"})
    -> (tensor<16x4x16xf32> {tp.layout = #tp.layout<@tp, [-, "tp", -]>},
        tensor<16x4x16xf32> {tp.layout = #tp.layout<@tp, [-, "tp", -]>},
        tensor<16x4x16xf32> {tp.layout = #tp.layout<@tp, [-, "tp", -]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x192xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x192xf32>) -> tensor<16x192xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x192xf32>) outs(%f : tensor<16x192xf32>) -> tensor<16x192xf32>
  %qkv = tensor.expand_shape %mm [[0], [1, 2, 3]] output_shape [16, 3, 4, 16] : tensor<16x192xf32> into tensor<16x3x4x16xf32>
  %q = tensor.extract_slice %qkv[0, 0, 0, 0] [16, 1, 4, 16] [1, 1, 1, 1] : tensor<16x3x4x16xf32> to tensor<16x4x16xf32>
  %k = tensor.extract_slice %qkv[0, 1, 0, 0] [16, 1, 4, 16] [1, 1, 1, 1] : tensor<16x3x4x16xf32> to tensor<16x4x16xf32>
  %v = tensor.extract_slice %qkv[0, 2, 0, 0] [16, 1, 4, 16] [1, 1, 1, 1] : tensor<16x3x4x16xf32> to tensor<16x4x16xf32>
  %eq = math.exp %q : tensor<16x4x16xf32>
  %ek = math.exp %k : tensor<16x4x16xf32>
  %ev = math.exp %v : tensor<16x4x16xf32>
  return %eq, %ek, %ev : tensor<16x4x16xf32>, tensor<16x4x16xf32>, tensor<16x4x16xf32>
}

// -----

// Falcon's multi-query fused QKV: one [(heads + 2) * head_dim, hidden]
// Linear weight, the product viewed as [tokens, heads + 2, head_dim]; q is
// the slice [:-2], k and v are `x[:, [-2], :]` and `x[:, [-1], :]`, which
// torch-mlir writes as gathers: a body that extracts at a wrapped constant
// index list and at iotas of the other dimensions. The gathers read blocks
// too: q, k and v of unequal widths become pieces; q splits by heads, the
// single k/v head stays whole.
// CHECK-LABEL: func.func @multi_query_gather
// CHECK-SAME: tensor<64x64xf32> {tp.layout = #tp.layout<@tp, ["tp", -]>, tp.name = "query_key_value.weight", tp.param, tp.source = {offsets = array<i64: 0, 0>, shape = array<i64: 80, 64>}}
// CHECK-SAME: tensor<8x64xf32> {tp.layout = {{.*}}, tp.name = "query_key_value.weight", tp.param, tp.source = {offsets = array<i64: 64, 0>, shape = array<i64: 80, 64>}}
// CHECK-SAME: tensor<8x64xf32> {tp.layout = {{.*}}, tp.name = "query_key_value.weight", tp.param, tp.source = {offsets = array<i64: 72, 0>, shape = array<i64: 80, 64>}}
// No fused product is left, and q is not gathered (k and v, returned
// whole, may be computed split and gathered: a cost-model choice).
// SHARD-LABEL: func.func @multi_query_gather
// SHARD-NOT: 16x80xf32
// SHARD-NOT: -> tensor<16x64xf32>
// SHARD: return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#iota = affine_map<(d0) -> (d0)>
#rows = affine_map<(d0, d1, d2) -> (d0)>
#list = affine_map<(d0, d1, d2) -> (0, 0)>
#cols = affine_map<(d0, d1, d2) -> (d2)>
tp.mesh @tp ["tp" = 4]
func.func @multi_query_gather(%x: tensor<16x64xf32>,
    %w: tensor<80x64xf32> {tp.param, tp.name = "query_key_value.weight"})
    -> (tensor<16x8x8xf32> {tp.layout = #tp.layout<@tp, [-, "tp", -]>},
        tensor<16x1x8xf32>, tensor<16x1x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : i64
  %c10 = arith.constant 10 : i64
  %minus2 = arith.constant dense<-2> : tensor<1x1xi64>
  %minus1 = arith.constant dense<-1> : tensor<1x1xi64>
  %et = tensor.empty() : tensor<64x80xf32>
  %wt = linalg.transpose ins(%w : tensor<80x64xf32>) outs(%et : tensor<64x80xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<16x80xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x80xf32>) -> tensor<16x80xf32>
  %mm = linalg.matmul ins(%x, %wt : tensor<16x64xf32>, tensor<64x80xf32>) outs(%f : tensor<16x80xf32>) -> tensor<16x80xf32>
  %qkv = tensor.expand_shape %mm [[0], [1, 2]] output_shape [16, 10, 8] : tensor<16x80xf32> into tensor<16x10x8xf32>
  %q = tensor.extract_slice %qkv[0, 0, 0] [16, 8, 8] [1, 1, 1] : tensor<16x10x8xf32> to tensor<16x8x8xf32>
  // Iotas of the token and head_dim dimensions, as torch-mlir builds them.
  %e16 = tensor.empty() : tensor<16xi64>
  %i16 = linalg.generic {indexing_maps = [#iota], iterator_types = ["parallel"]} outs(%e16 : tensor<16xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    linalg.yield %ii : i64
  } -> tensor<16xi64>
  %e8 = tensor.empty() : tensor<8xi64>
  %i8 = linalg.generic {indexing_maps = [#iota], iterator_types = ["parallel"]} outs(%e8 : tensor<8xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    linalg.yield %ii : i64
  } -> tensor<8xi64>
  %eg = tensor.empty() : tensor<16x1x8xf32>
  %k = linalg.generic {indexing_maps = [#rows, #list, #cols, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%i16, %minus2, %i8 : tensor<16xi64>, tensor<1x1xi64>, tensor<8xi64>) outs(%eg : tensor<16x1x8xf32>) {
  ^bb0(%t: i64, %h: i64, %d: i64, %out: f32):
    %neg = arith.cmpi slt, %h, %c0 : i64
    %wrap = arith.addi %h, %c10 : i64
    %hh = arith.select %neg, %wrap, %h : i64
    %ti = arith.index_cast %t : i64 to index
    %hi = arith.index_cast %hh : i64 to index
    %di = arith.index_cast %d : i64 to index
    %val = tensor.extract %qkv[%ti, %hi, %di] : tensor<16x10x8xf32>
    linalg.yield %val : f32
  } -> tensor<16x1x8xf32>
  %v = linalg.generic {indexing_maps = [#rows, #list, #cols, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%i16, %minus1, %i8 : tensor<16xi64>, tensor<1x1xi64>, tensor<8xi64>) outs(%eg : tensor<16x1x8xf32>) {
  ^bb0(%t: i64, %h: i64, %d: i64, %out: f32):
    %neg = arith.cmpi slt, %h, %c0 : i64
    %wrap = arith.addi %h, %c10 : i64
    %hh = arith.select %neg, %wrap, %h : i64
    %ti = arith.index_cast %t : i64 to index
    %hi = arith.index_cast %hh : i64 to index
    %di = arith.index_cast %d : i64 to index
    %val = tensor.extract %qkv[%ti, %hi, %di] : tensor<16x10x8xf32>
    linalg.yield %val : f32
  } -> tensor<16x1x8xf32>
  %eq = math.exp %q : tensor<16x8x8xf32>
  return %eq, %k, %v : tensor<16x8x8xf32>, tensor<16x1x8xf32>, tensor<16x1x8xf32>
}

// -----

// Mixtral's experts as transformers' batched_mm writes them: each
// (token, choice) gathers its expert's fused [2 * inter, hidden] gate_up
// weight out of the [experts, 2 * inter, hidden] stack by its expert id (a
// body reading the table at the id and at the loops of the other two
// dimensions), a batched matmul, and gate | up cut apart. The cut moves up
// through the batch matmul and the gather (which reads the same block of
// the stack) to the stack: gate and up become pieces, each split by the
// intermediate dimension (expert tensor parallelism), with no collective.
// CHECK-LABEL: func.func @expert_gate_up_gather
// CHECK-SAME: tensor<4x32x16xf32> {tp.layout = #tp.layout<@tp, [-, "tp", -]>, tp.name = "experts.gate_up_proj", tp.param, tp.source = {offsets = array<i64: 0, 0, 0>, shape = array<i64: 4, 64, 16>}}
// CHECK-SAME: tensor<4x32x16xf32> {tp.layout = #tp.layout<@tp, [-, "tp", -]>, tp.name = "experts.gate_up_proj", tp.param, tp.source = {offsets = array<i64: 0, 32, 0>, shape = array<i64: 4, 64, 16>}}
// SHARD-LABEL: func.func @expert_gate_up_gather
// SHARD-NOT: tp.all_gather
// SHARD-NOT: tp.all_reduce
// SHARD: return
#g3 = affine_map<(d0, d1, d2) -> (d0)>
#o3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#m2 = affine_map<(d0, d1) -> (d0, d1)>
tp.mesh @tp ["tp" = 4]
func.func @expert_gate_up_gather(%h: tensor<8x16xf32>, %ids: tensor<8xi64>,
    %w: tensor<4x64x16xf32> {tp.param, tp.name = "experts.gate_up_proj"})
    -> (tensor<8x32xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x64x16xf32>
  %sel = linalg.generic {indexing_maps = [#g3, #o3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<8xi64>) outs(%e : tensor<8x64x16xf32>) {
  ^bb0(%id: i64, %out: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 1 : index
    %k = linalg.index 2 : index
    %val = tensor.extract %w[%i, %j, %k] : tensor<4x64x16xf32>
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
  %act = linalg.generic {indexing_maps = [#m2, #m2, #m2], iterator_types = ["parallel", "parallel"]}
      ins(%gate, %up : tensor<8x32xf32>, tensor<8x32xf32>) outs(%es : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = math.tanh %a : f32
    %p = arith.mulf %t, %b : f32
    linalg.yield %p : f32
  } -> tensor<8x32xf32>
  return %act : tensor<8x32xf32>
}

// -----

// The same experts as tp-import writes them (the checkpoint stores one
// tensor per expert, `experts.E.w1` and `experts.E.w3`, and the module
// makes transformers' parameter itself): each half stacked by a concat of
// the experts and an expand_shape ([E * inter, hidden] to [E, inter,
// hidden]), gate | up by a concat along the rows. The stacks become
// concats of reshaped experts (the inter rows no longer a minor factor of
// the concatenated dimension), the cut of gate | up moves up through the
// concat to its halves, and every expert's w1 and w3 split by rows, with
// no collective (was: the batched products reduce-scattered in every
// layer, 1.7x Megatron's volume at tp=4 on a tp-import Mixtral).
// CHECK-LABEL: func.func @expert_stack_concat
// CHECK-SAME: tensor<32x16xf32> {tp.layout = #tp.layout<@tp, ["tp", -]>, tp.name = "experts.0.w1", tp.param}
// CHECK-SAME: tensor<32x16xf32> {tp.layout = #tp.layout<@tp, ["tp", -]>, tp.name = "experts.1.w1", tp.param}
// CHECK-SAME: tensor<32x16xf32> {tp.layout = #tp.layout<@tp, ["tp", -]>, tp.name = "experts.0.w3", tp.param}
// CHECK-SAME: tensor<32x16xf32> {tp.layout = #tp.layout<@tp, ["tp", -]>, tp.name = "experts.1.w3", tp.param}
// CHECK-NOT: tensor<2x64x16xf32>
// SHARD-LABEL: func.func @expert_stack_concat
// SHARD-NOT: tp.all_gather
// SHARD-NOT: tp.all_reduce
// SHARD-NOT: tp.reduce_scatter
// SHARD: return
#gs = affine_map<(d0, d1, d2) -> (d0)>
#os = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#ms = affine_map<(d0, d1) -> (d0, d1)>
tp.mesh @tp ["tp" = 4]
func.func @expert_stack_concat(%h: tensor<8x16xf32>, %ids: tensor<8xi64>,
    %w1a: tensor<32x16xf32> {tp.param, tp.name = "experts.0.w1"},
    %w1b: tensor<32x16xf32> {tp.param, tp.name = "experts.1.w1"},
    %w3a: tensor<32x16xf32> {tp.param, tp.name = "experts.0.w3"},
    %w3b: tensor<32x16xf32> {tp.param, tp.name = "experts.1.w3"})
    -> (tensor<8x32xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>}) {
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

// -----

// A loop over experts (`for e in range(E): w = gate_up_proj[e]`): each
// expert's weight is a rank-reducing slice of the stack, and its gate | up
// halves are cut again. The stack splits per expert, then each expert per
// half: pieces of pieces, their offsets added up.
// CHECK-LABEL: func.func @expert_loop
// CHECK-SAME: tensor<1x32x16xf32> {tp.layout = #tp.layout<@tp, [-, "tp", -]>, tp.name = "experts.gate_up_proj", tp.param, tp.source = {offsets = array<i64: 0, 0, 0>, shape = array<i64: 2, 64, 16>}}
// CHECK-SAME: tensor<1x32x16xf32> {tp.layout = #tp.layout<@tp, [-, "tp", -]>, tp.name = "experts.gate_up_proj", tp.param, tp.source = {offsets = array<i64: 0, 32, 0>, shape = array<i64: 2, 64, 16>}}
// CHECK-SAME: tensor<1x32x16xf32> {tp.layout = #tp.layout<@tp, [-, "tp", -]>, tp.name = "experts.gate_up_proj", tp.param, tp.source = {offsets = array<i64: 1, 0, 0>, shape = array<i64: 2, 64, 16>}}
// CHECK-SAME: tensor<1x32x16xf32> {tp.layout = #tp.layout<@tp, [-, "tp", -]>, tp.name = "experts.gate_up_proj", tp.param, tp.source = {offsets = array<i64: 1, 32, 0>, shape = array<i64: 2, 64, 16>}}
#t2 = affine_map<(d0, d1) -> (d1, d0)>
tp.mesh @tp ["tp" = 4]
func.func @expert_loop(%h: tensor<8x16xf32>,
    %w: tensor<2x64x16xf32> {tp.param, tp.name = "experts.gate_up_proj"})
    -> (tensor<8x32xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>},
        tensor<8x32xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>}) {
  %zero = arith.constant 0.0 : f32
  %w0 = tensor.extract_slice %w[0, 0, 0] [1, 64, 16] [1, 1, 1] : tensor<2x64x16xf32> to tensor<64x16xf32>
  %w1 = tensor.extract_slice %w[1, 0, 0] [1, 64, 16] [1, 1, 1] : tensor<2x64x16xf32> to tensor<64x16xf32>
  %et = tensor.empty() : tensor<16x64xf32>
  %t0 = linalg.transpose ins(%w0 : tensor<64x16xf32>) outs(%et : tensor<16x64xf32>) permutation = [1, 0]
  %t1 = linalg.transpose ins(%w1 : tensor<64x16xf32>) outs(%et : tensor<16x64xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<8x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
  %m0 = linalg.matmul ins(%h, %t0 : tensor<8x16xf32>, tensor<16x64xf32>) outs(%f : tensor<8x64xf32>) -> tensor<8x64xf32>
  %m1 = linalg.matmul ins(%h, %t1 : tensor<8x16xf32>, tensor<16x64xf32>) outs(%f : tensor<8x64xf32>) -> tensor<8x64xf32>
  %g0 = tensor.extract_slice %m0[0, 0] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
  %u0 = tensor.extract_slice %m0[0, 32] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
  %g1 = tensor.extract_slice %m1[0, 0] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
  %u1 = tensor.extract_slice %m1[0, 32] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
  %es = tensor.empty() : tensor<8x32xf32>
  %a0 = linalg.mul ins(%g0, %u0 : tensor<8x32xf32>, tensor<8x32xf32>) outs(%es : tensor<8x32xf32>) -> tensor<8x32xf32>
  %a1 = linalg.mul ins(%g1, %u1 : tensor<8x32xf32>, tensor<8x32xf32>) outs(%es : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %a0, %a1 : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// tp-gen's own spelling keeps q, k and v as rows of a [hidden, 3, hidden]
// weight: a stack whose rows are not cut again and whose other dimensions
// split for all rows at once. It stays one argument (and one product).
// CHECK-LABEL: func.func @stack_rows_stay
// CHECK-SAME: %{{.*}}: tensor<64x3x64xf32> {tp.layout = #tp.layout<@tp, [-, -, "tp"]>, tp.param}
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<16x64xf32>, tensor<64x3x64xf32>)
#qx = affine_map<(t, s, o, i) -> (t, i)>
#qw = affine_map<(t, s, o, i) -> (i, s, o)>
#qo = affine_map<(t, s, o, i) -> (t, s, o)>
tp.mesh @tp ["tp" = 4]
func.func @stack_rows_stay(%x: tensor<16x64xf32>,
    %w: tensor<64x3x64xf32> {tp.param})
    -> (tensor<16x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>},
        tensor<16x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>},
        tensor<16x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x3x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x3x64xf32>) -> tensor<16x3x64xf32>
  %qkv = linalg.generic {indexing_maps = [#qx, #qw, #qo], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<16x64xf32>, tensor<64x3x64xf32>) outs(%f : tensor<16x3x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x3x64xf32>
  %q = tensor.extract_slice %qkv[0, 0, 0] [16, 1, 64] [1, 1, 1] : tensor<16x3x64xf32> to tensor<16x64xf32>
  %k = tensor.extract_slice %qkv[0, 1, 0] [16, 1, 64] [1, 1, 1] : tensor<16x3x64xf32> to tensor<16x64xf32>
  %v = tensor.extract_slice %qkv[0, 2, 0] [16, 1, 64] [1, 1, 1] : tensor<16x3x64xf32> to tensor<16x64xf32>
  return %q, %k, %v : tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>
}

// -----

// Arguments without names: the pieces of a split weight name their source
// by its position in the user's function, and every argument keeps the
// name of its original position (tp.name written down before the
// signature changes), so a checkpoint keyed arg0..argK in the original
// order still fits.
// CHECK-LABEL: func.func @unnamed_arguments
// CHECK-SAME: tensor<16x64xf32> {tp.layout = #tp.layout<@tp, [-, -]>, tp.name = "arg0"}
// CHECK-SAME: tensor<64x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>, tp.name = "arg1", tp.param, tp.source = {offsets = array<i64: 0, 0>, shape = array<i64: 64, 128>}}
// CHECK-SAME: tensor<64x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>, tp.name = "arg1", tp.param, tp.source = {offsets = array<i64: 0, 64>, shape = array<i64: 64, 128>}}
// CHECK-SAME: tensor<64x16xf32> {tp.layout = #tp.layout<@tp, ["tp", -]>, tp.name = "arg2", tp.param}
// CHECK-SAME: tensor<64x16xf32> {tp.layout = #tp.layout<@tp, ["tp", -]>, tp.name = "named", tp.param}
tp.mesh @tp ["tp" = 4]
func.func @unnamed_arguments(%x: tensor<16x64xf32>,
    %w: tensor<64x128xf32> {tp.param},
    %w2: tensor<64x16xf32> {tp.param},
    %w3: tensor<64x16xf32> {tp.param} loc("named"))
    -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x128xf32>) -> tensor<16x128xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x128xf32>) outs(%f : tensor<16x128xf32>) -> tensor<16x128xf32>
  %a = tensor.extract_slice %mm[0, 0] [16, 64] [1, 1] : tensor<16x128xf32> to tensor<16x64xf32>
  %b = tensor.extract_slice %mm[0, 64] [16, 64] [1, 1] : tensor<16x128xf32> to tensor<16x64xf32>
  %ta = math.tanh %a : tensor<16x64xf32>
  %tb = math.tanh %b : tensor<16x64xf32>
  %e2 = tensor.empty() : tensor<16x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %y = linalg.matmul ins(%ta, %w2 : tensor<16x64xf32>, tensor<64x16xf32>) outs(%f2 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %z = linalg.matmul ins(%tb, %w3 : tensor<16x64xf32>, tensor<64x16xf32>) outs(%f2 : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %y, %z : tensor<16x16xf32>, tensor<16x16xf32>
}
