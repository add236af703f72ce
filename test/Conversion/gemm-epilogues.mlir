// RUN: tp-opt %s --tp-gemm-to-runtime --tp-group-gemms --tp-gemm-epilogues 2>/dev/null | FileCheck %s
// RUN: tp-opt %s --tp-gemm-to-runtime --tp-group-gemms --tp-gemm-epilogues -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// A GEMM whose product's one use is an elementwise generic computing
// act(product + addend + bias), act in none, relu, gelu_tanh (judged by
// evaluating the body, not by its spelling), becomes one
// tprt_mlir_gemm_epilogue_<t>(trans_a, trans_b, activation, A, B, addend,
// bias, C) call; a memref<0xT> stands for an absent addend or bias.
// Generics that read the product but compute something else keep their
// kernel, with a remark saying what did not match.

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>

// GPT-2's c_fc: bias, then tanh-GELU spelled with powf.
// CHECK-LABEL: func.func @bias_gelu
// CHECK: %[[NONE:.*]] = memref.alloca() : memref<0xf32>
// CHECK: %[[NOADD:.*]] = memref.cast %[[NONE]] : memref<0xf32> to memref<*xf32>
// CHECK: %[[BIAS:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<32xf32> to memref<32xf32>
// CHECK: %[[BIASC:.*]] = memref.cast %[[BIAS]]
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<16x32xf32>
// CHECK: %[[OUTC:.*]] = memref.cast %[[OUT]]
// CHECK: %[[GELU:.*]] = arith.constant 2 : i32
// CHECK-NEXT: call @tprt_mlir_gemm_epilogue_f32(%{{[^,]*}}, %{{[^,]*}}, %[[GELU]], %{{[^,]*}}, %{{[^,]*}}, %[[NOADD]], %[[BIASC]], %[[OUTC]]) : (i32, i32, i32, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>) -> ()
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NOT: linalg.generic
// CHECK-NOT: call @tprt_mlir_gemm_f32
// CHECK: return
func.func @bias_gelu(%x: tensor<16x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %b : tensor<16x32xf32>, tensor<32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %v = arith.addf %in, %bias : f32
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %three = arith.constant 3.0 : f32
    %c = arith.constant 0.044715 : f32
    %s = arith.constant 0.7978845608 : f32
    %cube = math.powf %v, %three : f32
    %t0 = arith.mulf %c, %cube : f32
    %t1 = arith.addf %v, %t0 : f32
    %t2 = arith.mulf %s, %t1 : f32
    %t3 = math.tanh %t2 : f32
    %t4 = arith.addf %one, %t3 : f32
    %t5 = arith.mulf %half, %v : f32
    %r = arith.mulf %t5, %t4 : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// Llama's o_proj on [1, 16, 32]: the residual add after the product's
// expand_shape; the residual is collapsed to the product's 2-D shape.
// CHECK-LABEL: func.func @residual_3d
// CHECK: %[[RES:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<1x16x32xbf16> into tensor<16x32xbf16>
// CHECK: %[[RESB:.*]] = bufferization.to_buffer %[[RES]] read_only
// CHECK: %[[RESC:.*]] = memref.cast %[[RESB]]
// CHECK: memref.alloca() : memref<0xbf16>
// CHECK: %[[ACT:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @tprt_mlir_gemm_epilogue_bf16(%{{[^,]*}}, %{{[^,]*}}, %[[ACT]], %{{[^,]*}}, %{{[^,]*}}, %[[RESC]],
// CHECK: %[[T:.*]] = bufferization.to_tensor
// CHECK: %[[E:.*]] = tensor.expand_shape %[[T]] {{\[}}[0, 1], [2]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[E]]
func.func @residual_3d(%x: tensor<1x16x64xbf16>, %w: tensor<64x32xbf16>, %res: tensor<1x16x32xbf16>) -> tensor<1x16x32xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<1x16x32xbf16>
  %z = linalg.fill ins(%zero : bf16) outs(%e : tensor<1x16x32xbf16>) -> tensor<1x16x32xbf16>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j, k) -> (b, i, k)>, affine_map<(b, i, j, k) -> (k, j)>, affine_map<(b, i, j, k) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<1x16x64xbf16>, tensor<64x32xbf16>) outs(%z : tensor<1x16x32xbf16>) {
  ^bb0(%a: bf16, %bb: bf16, %acc: bf16):
    %m = arith.mulf %a, %bb : bf16
    %s = arith.addf %acc, %m : bf16
    linalg.yield %s : bf16
  } -> tensor<1x16x32xbf16>
  %y = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%res, %p : tensor<1x16x32xbf16>, tensor<1x16x32xbf16>) outs(%e : tensor<1x16x32xbf16>) {
  ^bb0(%r: bf16, %in: bf16, %out: bf16):
    %v = arith.addf %r, %in : bf16
    linalg.yield %v : bf16
  } -> tensor<1x16x32xbf16>
  return %y : tensor<1x16x32xbf16>
}

// relu as select(cmpf) on bias + residual, computed in f32 from bf16; the
// bias a 1 x N tensor read through a constant-0 result.
// CHECK-LABEL: func.func @relu_select
// CHECK: %[[B1:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1]] : tensor<1x32xbf16> into tensor<32xbf16>
// CHECK: bufferization.to_buffer %[[B1]] read_only
// CHECK: %[[RELU:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @tprt_mlir_gemm_epilogue_bf16(%{{[^,]*}}, %{{[^,]*}}, %[[RELU]],
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @relu_select(%x: tensor<16x64xbf16>, %w: tensor<64x32xbf16>, %b: tensor<1x32xbf16>, %res: tensor<16x32xbf16>) -> tensor<16x32xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<16x32xbf16>
  %z = linalg.fill ins(%zero : bf16) outs(%e : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %p = linalg.matmul ins(%x, %w : tensor<16x64xbf16>, tensor<64x32xbf16>) outs(%z : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %y = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (0, d1)>, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %b, %res : tensor<16x32xbf16>, tensor<1x32xbf16>, tensor<16x32xbf16>) outs(%e : tensor<16x32xbf16>) {
  ^bb0(%in: bf16, %bias: bf16, %r: bf16, %out: bf16):
    %a = arith.extf %in : bf16 to f32
    %bw = arith.extf %bias : bf16 to f32
    %rw = arith.extf %r : bf16 to f32
    %s0 = arith.addf %a, %bw : f32
    %s1 = arith.addf %rw, %s0 : f32
    %c0 = arith.constant 0.0 : f32
    %gt = arith.cmpf ugt, %s1, %c0 : f32
    %sel = arith.select %gt, %s1, %c0 : f32
    %t = arith.truncf %sel : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// relu as maximumf, the residual read through the output operand.
// CHECK-LABEL: func.func @relu_max_out
// CHECK: %[[RES:.*]] = bufferization.to_buffer %arg2 read_only
// CHECK: %[[RESC:.*]] = memref.cast %[[RES]]
// CHECK: %[[RELU:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @tprt_mlir_gemm_epilogue_f32(%{{[^,]*}}, %{{[^,]*}}, %[[RELU]], %{{[^,]*}}, %{{[^,]*}}, %[[RESC]],
func.func @relu_max_out(%x: tensor<16x64xf32>, %w: tensor<64x32xf32>, %res: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<16x32xf32>) outs(%res : tensor<16x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    %c0 = arith.constant 0.0 : f32
    %m = arith.maximumf %s, %c0 : f32
    linalg.yield %m : f32
  } -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// tanh-GELU as x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), x*x*x.
// CHECK-LABEL: func.func @gelu_sigmoid
// CHECK: %[[GELU:.*]] = arith.constant 2 : i32
// CHECK-NEXT: call @tprt_mlir_gemm_epilogue_f32(%{{[^,]*}}, %{{[^,]*}}, %[[GELU]],
func.func @gelu_sigmoid(%x: tensor<16x64xf32>, %w: tensor<64x32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%v: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %c = arith.constant 0.044715 : f32
    %k = arith.constant -1.5957691216 : f32
    %sq = arith.mulf %v, %v : f32
    %cube = arith.mulf %sq, %v : f32
    %t0 = arith.mulf %cube, %c : f32
    %t1 = arith.addf %t0, %v : f32
    %t2 = arith.mulf %t1, %k : f32
    %t3 = math.exp %t2 : f32
    %t4 = arith.addf %t3, %one : f32
    %r = arith.divf %v, %t4 : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// erf-GELU is not tanh-GELU (1e-1 relative apart at -3): a kernel, with a
// remark (bias + erf-GELU: GPT-2 with the exact GELU).
// CHECK-LABEL: func.func @gelu_erf
// CHECK: call @tprt_mlir_gemm_f32(
// CHECK: linalg.generic
// CHECK-NOT: gemm_epilogue
// REMARK: remark: GEMM epilogue not fused: its body is not act(product + addend + bias): it differs from none ({{.*}}), relu ({{.*}}), gelu_tanh ({{.*}} at product -5, addend 0, bias 0)
func.func @gelu_erf(%x: tensor<16x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %b : tensor<16x32xf32>, tensor<32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %v = arith.addf %in, %bias : f32
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %rs = arith.constant 0.70710678 : f32
    %t0 = arith.mulf %v, %rs : f32
    %t1 = math.erf %t0 : f32
    %t2 = arith.addf %t1, %one : f32
    %t3 = arith.mulf %v, %half : f32
    %r = arith.mulf %t3, %t2 : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// An op the evaluator does not know refuses.
// CHECK-LABEL: func.func @unknown_op
// CHECK: call @tprt_mlir_gemm_f32(
// CHECK: math.sin
// REMARK: remark: GEMM epilogue not fused: its body's 'math.sin' cannot be evaluated
func.func @unknown_op(%x: tensor<16x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %b : tensor<16x32xf32>, tensor<32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %v = arith.addf %in, %bias : f32
    %r = math.sin %v : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// SiLU(product) x up: an identity input, but the body multiplies.
// CHECK-LABEL: func.func @silu_mul
// CHECK: call @tprt_mlir_gemm_f32(
// CHECK: linalg.generic
// REMARK: remark: GEMM epilogue not fused: its body is not act(product + addend + bias)
func.func @silu_mul(%x: tensor<16x64xf32>, %w: tensor<64x32xf32>, %up: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %up : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%v: f32, %u: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %v : f32
    %ex = math.exp %n : f32
    %d = arith.addf %ex, %one : f32
    %s = arith.divf %v, %d : f32
    %r = arith.mulf %s, %u : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// A bias along the rows (map (d0, d1) -> (d0)) is not one of C's columns.
// CHECK-LABEL: func.func @row_bias
// CHECK: call @tprt_mlir_gemm_f32(
// CHECK: linalg.generic
// REMARK: remark: GEMM epilogue not fused: operand #1 (map (d0, d1) -> (d0)) is neither an addend of C's shape nor a bias of its columns
func.func @row_bias(%x: tensor<16x64xf32>, %w: tensor<64x32xf32>, %b: tensor<16xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (d0)>, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %b : tensor<16x32xf32>, tensor<16xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %r = arith.addf %v, %bias : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// A body that reads its output when the output is a tensor.empty (no
// addend there): refused.
// CHECK-LABEL: func.func @empty_out
// CHECK: call @tprt_mlir_gemm_f32(
// CHECK: linalg.generic
// REMARK: remark: GEMM epilogue not fused: its body reads its output, which is uninitialized
func.func @empty_out(%x: tensor<16x64xf32>, %w: tensor<64x32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%v: f32, %out: f32):
    %r = arith.addf %v, %out : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// A function of the product alone that is no activation (a scale): not a
// near miss, a kernel without a remark.
// CHECK-LABEL: func.func @scale
// CHECK: call @tprt_mlir_gemm_f32(
// CHECK: linalg.generic
func.func @scale(%x: tensor<16x64xf32>, %w: tensor<64x32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%v: f32, %out: f32):
    %half = arith.constant 0.5 : f32
    %r = arith.mulf %v, %half : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// The product used twice, and products of one A (grouped into a shared-A
// call): left alone, no remark.
// CHECK-LABEL: func.func @left_alone
// CHECK: call @tprt_mlir_gemm_shared_a2_f32(
// CHECK: call @tprt_mlir_gemm_f32(
// CHECK-NOT: gemm_epilogue
// CHECK: return
// REMARK-NOT: remark
func.func @left_alone(%x: tensor<16x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %x2: tensor<16x64xf32>, %b: tensor<32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %p1 = linalg.matmul ins(%x, %w1 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %p2 = linalg.matmul ins(%x, %w2 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%p1, %p2, %b : tensor<16x32xf32>, tensor<16x32xf32>, tensor<32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%v: f32, %u: f32, %bias: f32, %out: f32):
    %s = arith.addf %v, %u : f32
    %r = arith.addf %s, %bias : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  %p3 = linalg.matmul ins(%x2, %w1 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y3 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%p3, %b : tensor<16x32xf32>, tensor<32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %r = arith.addf %v, %bias : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  return %y, %p3, %y3 : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>
}
