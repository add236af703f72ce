// Attention that tp-fuse-attention cannot fuse keeps its unfused ops, with a
// remark that says why; contractions that are not attention get no remark.
// RUN: tp-opt %s --tp-fuse-attention -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tp-opt %s --split-input-file --tp-lower-gpu="chip=sm_90 format=isa stop-after=kernels" 2>&1 | FileCheck %s --check-prefix=PIPE

// -----

// The probabilities are also a result (attention weights returned): the
// scores must exist, nothing is fused.
// CHECK-LABEL: func.func @probabilities_returned(
// CHECK-NOT: tp_fused_attention
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: return
// PIPE-LABEL: func.func @probabilities_returned(
// PIPE: call @tprt_mlir_batched_gemm_f32(
// PIPE: call @tprt_mlir_batched_gemm_f32(
// PIPE-NOT: tp_fused_attention
#q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
#mask = affine_map<(b, h, i, j) -> (i, j)>
#p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
func.func @probabilities_returned(%q: tensor<1x2x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %mask: tensor<64x64xf32>) -> (tensor<1x2x64x32xf32>, tensor<1x2x64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<1x2x64x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>
  %sc = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>) outs(%z : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %c, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x64xf32>
  %x = linalg.generic {indexing_maps = [#id, #mask, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc, %mask : tensor<1x2x64x64xf32>, tensor<64x64xf32>) outs(%e0 : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %m: f32, %c: f32):
    %cst = arith.constant 0.125 : f32
    %0 = arith.mulf %a, %cst : f32
    %1 = arith.addf %0, %m : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x64xf32>
  %r0 = tensor.empty() : tensor<1x2x64xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<1x2x64xf32>) -> tensor<1x2x64xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<1x2x64x64xf32>) outs(%mi : tensor<1x2x64xf32>) {
  ^bb0(%a: f32, %c: f32):
    %0 = arith.maximumf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<1x2x64xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>) outs(%e0 : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %m: f32, %c: f32):
    %0 = arith.subf %a, %m : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x64xf32>
  %si = linalg.fill ins(%zero : f32) outs(%r0 : tensor<1x2x64xf32>) -> tensor<1x2x64xf32>
  %sm = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x64x64xf32>) outs(%si : tensor<1x2x64xf32>) {
  ^bb0(%a: f32, %c: f32):
    %0 = arith.addf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<1x2x64xf32>
  %pr = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>) outs(%e0 : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %s: f32, %c: f32):
    %0 = arith.divf %a, %s : f32
    linalg.yield %0 : f32
  } -> tensor<1x2x64x64xf32>
  %o0 = tensor.empty() : tensor<1x2x64x32xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<1x2x64x32xf32>) -> tensor<1x2x64x32xf32>
  // expected-remark @+1 {{attention not fused: an intermediate (scores, softmax statistics or probabilities) has another use}}
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%pr, %v : tensor<1x2x64x64xf32>, tensor<1x2x64x32xf32>) outs(%oz : tensor<1x2x64x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %c, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x32xf32>
  return %o, %pr : tensor<1x2x64x32xf32>, tensor<1x2x64x64xf32>
}

// -----

// exp(x) / sum without the row maximum: not the softmax the online
// recurrence computes (it would differ where exp overflows).
// CHECK-LABEL: func.func @no_max_subtracted(
// CHECK-NOT: tp_fused_attention
// CHECK: math.exp
#q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
#mask = affine_map<(b, h, i, j) -> (i, j)>
#p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
func.func @no_max_subtracted(%q: tensor<1x2x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %mask: tensor<64x64xf32>) -> tensor<1x2x64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<1x2x64x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>
  %sc = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>) outs(%z : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %c, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x64xf32>
  %x = linalg.generic {indexing_maps = [#id, #mask, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc, %mask : tensor<1x2x64x64xf32>, tensor<64x64xf32>) outs(%e0 : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %m: f32, %c: f32):
    %cst = arith.constant 0.125 : f32
    %0 = arith.mulf %a, %cst : f32
    %1 = arith.addf %0, %m : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x64xf32>
  %r0 = tensor.empty() : tensor<1x2x64xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<1x2x64xf32>) -> tensor<1x2x64xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<1x2x64x64xf32>) outs(%mi : tensor<1x2x64xf32>) {
  ^bb0(%a: f32, %c: f32):
    %0 = arith.maximumf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<1x2x64xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>) outs(%e0 : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %m: f32, %c: f32):
    %1 = math.exp %a : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x64xf32>
  %si = linalg.fill ins(%zero : f32) outs(%r0 : tensor<1x2x64xf32>) -> tensor<1x2x64xf32>
  %sm = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x64x64xf32>) outs(%si : tensor<1x2x64xf32>) {
  ^bb0(%a: f32, %c: f32):
    %0 = arith.addf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<1x2x64xf32>
  %pr = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>) outs(%e0 : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %s: f32, %c: f32):
    %0 = arith.divf %a, %s : f32
    linalg.yield %0 : f32
  } -> tensor<1x2x64x64xf32>
  %o0 = tensor.empty() : tensor<1x2x64x32xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<1x2x64x32xf32>) -> tensor<1x2x64x32xf32>
  // expected-remark @+1 {{attention not fused: the softmax's numerator is not exp(x - max)}}
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%pr, %v : tensor<1x2x64x64xf32>, tensor<1x2x64x32xf32>) outs(%oz : tensor<1x2x64x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %c, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x32xf32>
  return %o : tensor<1x2x64x32xf32>
}

// -----

// The scale reads the scores transposed ([i, j] at [j, i]) while computing:
// not an elementwise op on the scores.
// CHECK-LABEL: func.func @scores_transposed_by_compute(
// CHECK-NOT: tp_fused_attention
#q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
#mask = affine_map<(b, h, i, j) -> (i, j)>
#p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#tr = affine_map<(b, h, i, j) -> (b, h, j, i)>
func.func @scores_transposed_by_compute(%q: tensor<1x2x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %mask: tensor<64x64xf32>) -> tensor<1x2x64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<1x2x64x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>
  %sc = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>) outs(%z : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %c, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x64xf32>
  %x = linalg.generic {indexing_maps = [#tr, #mask, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc, %mask : tensor<1x2x64x64xf32>, tensor<64x64xf32>) outs(%e0 : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %m: f32, %c: f32):
    %cst = arith.constant 0.125 : f32
    %0 = arith.mulf %a, %cst : f32
    %1 = arith.addf %0, %m : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x64xf32>
  %r0 = tensor.empty() : tensor<1x2x64xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<1x2x64xf32>) -> tensor<1x2x64xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<1x2x64x64xf32>) outs(%mi : tensor<1x2x64xf32>) {
  ^bb0(%a: f32, %c: f32):
    %0 = arith.maximumf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<1x2x64xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>) outs(%e0 : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %m: f32, %c: f32):
    %0 = arith.subf %a, %m : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x64xf32>
  %si = linalg.fill ins(%zero : f32) outs(%r0 : tensor<1x2x64xf32>) -> tensor<1x2x64xf32>
  %sm = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x64x64xf32>) outs(%si : tensor<1x2x64xf32>) {
  ^bb0(%a: f32, %c: f32):
    %0 = arith.addf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<1x2x64xf32>
  %pr = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>) outs(%e0 : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %s: f32, %c: f32):
    %0 = arith.divf %a, %s : f32
    linalg.yield %0 : f32
  } -> tensor<1x2x64x64xf32>
  %o0 = tensor.empty() : tensor<1x2x64x32xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<1x2x64x32xf32>) -> tensor<1x2x64x32xf32>
  // expected-remark @+1 {{attention not fused: the softmax's input does not come from a contraction over the head dimension}}
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%pr, %v : tensor<1x2x64x64xf32>, tensor<1x2x64x32xf32>) outs(%oz : tensor<1x2x64x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %c, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x32xf32>
  return %o : tensor<1x2x64x32xf32>
}

// -----

// A batched matmul that is not attention: no remark, untouched.
// CHECK-LABEL: func.func @plain_batch_matmul(
// CHECK: linalg.batch_matmul
func.func @plain_batch_matmul(%a: tensor<4x8x16xf32>, %b: tensor<4x16x8xf32>) -> tensor<4x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<4x8x16xf32>, tensor<4x16x8xf32>) outs(%z : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  return %r : tensor<4x8x8xf32>
}
