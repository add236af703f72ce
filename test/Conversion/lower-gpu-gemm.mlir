// RUN: tp-opt %s --tp-gemm-to-runtime --verify-diagnostics | FileCheck %s
// Every matmul-family op becomes one call of the runtime's GEMM, with the
// transposes expressed as flags where the operand layout allows it.

// A linalg.matmul reading A transposed: trans_a = 1, no copy.
// CHECK-LABEL: func.func @matmul_transposed_a
// CHECK-NOT: linalg.transpose
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: call @tprt_mlir_gemm_f32(%[[ONE]], %[[ZERO]], %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, memref<*xf32>, memref<*xf32>, memref<*xf32>) -> ()
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @matmul_transposed_a(%a: tensor<8x4xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<8x4xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}

// torch-mlir's nn.Linear: x @ W^T spelled as a linalg.transpose of the
// weight and a plain matmul. The transpose becomes trans_b = 1 on W itself:
// no transpose kernel (a copy of the weight every step).
// CHECK-LABEL: func.func @linear_transposed_weight
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>, %[[W:.*]]: tensor<32x64xf32>)
// CHECK-NOT: linalg.transpose
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[WB:.*]] = bufferization.to_buffer %[[W]] read_only : tensor<32x64xf32> to memref<32x64xf32>
// CHECK: call @tprt_mlir_gemm_f32(%[[ZERO]], %[[ONE]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @linear_transposed_weight(%x: tensor<8x64xf32>, %w: tensor<32x64xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<64x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x64xf32>) outs(%et : tensor<64x32xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %c = linalg.matmul ins(%x, %wt : tensor<8x64xf32>, tensor<64x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %c : tensor<8x32xf32>
}

// linalg.batch_matmul: the rank-3 entry point.
// CHECK-LABEL: func.func @batch_matmul
// CHECK: %[[A:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<3x4x8xbf16> to memref<3x4x8xbf16>
// CHECK: %[[B:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<3x8x16xbf16> to memref<3x8x16xbf16>
// CHECK: %[[C:.*]] = memref.alloc() : memref<3x4x16xbf16>
// CHECK: call @tprt_mlir_batched_gemm_bf16(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>) -> ()
// CHECK: bufferization.to_tensor %[[C]] restrict writable
func.func @batch_matmul(%a: tensor<3x4x8xbf16>, %b: tensor<3x8x16xbf16>) -> tensor<3x4x16xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<3x4x16xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<3x4x16xbf16>) -> tensor<3x4x16xbf16>
  %c = linalg.batch_matmul ins(%a, %b : tensor<3x4x8xbf16>, tensor<3x8x16xbf16>) outs(%f : tensor<3x4x16xbf16>) -> tensor<3x4x16xbf16>
  return %c : tensor<3x4x16xbf16>
}

// A batch_matmul with B transposed ([batch, N, K]): trans_b = 1.
// CHECK-LABEL: func.func @batch_matmul_transposed_b
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: call @tprt_mlir_batched_gemm_f16(%[[ZERO]], %[[ONE]],
func.func @batch_matmul_transposed_b(%a: tensor<3x4x8xf16>, %b: tensor<3x16x8xf16>) -> tensor<3x4x16xf16> {
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<3x4x16xf16>
  %f = linalg.fill ins(%zero : f16) outs(%e : tensor<3x4x16xf16>) -> tensor<3x4x16xf16>
  %c = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%a, %b : tensor<3x4x8xf16>, tensor<3x16x8xf16>) outs(%f : tensor<3x4x16xf16>) -> tensor<3x4x16xf16>
  return %c : tensor<3x4x16xf16>
}

// A fused projection (tp-gen's QKV): N spans two loop dimensions, which
// collapse into one; a 2-D GEMM.
// CHECK-LABEL: func.func @generic_two_n_dims
// CHECK: %[[W:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] : tensor<64x3x32xf32> into tensor<64x96xf32>
// CHECK: bufferization.to_buffer %[[W]]
// CHECK: call @tprt_mlir_gemm_f32
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [16, 3, 32] : tensor<16x96xf32> into tensor<16x3x32xf32>
func.func @generic_two_n_dims(%x: tensor<16x64xf32>, %w: tensor<64x3x32xf32>) -> tensor<16x3x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x3x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x3x32xf32>) -> tensor<16x3x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<16x64xf32>, tensor<64x3x32xf32>) outs(%f : tensor<16x3x32xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %m = arith.mulf %in, %in_0 : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x3x32xf32>
  return %r : tensor<16x3x32xf32>
}

// Attention scores with q and k as [batch, seq, heads, dim]: batch spans
// (batch, heads), which are not leading in q and k, so both are transposed
// to [batch, heads, seq, dim]; k is then read with trans_b = 1.
// CHECK-LABEL: func.func @attention_scores
// CHECK-DAG: %[[NO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[YES:.*]] = arith.constant 1 : i32
// CHECK: %[[Q:.*]] = linalg.transpose ins(%{{.*}} : tensor<2x8x4x16xf32>) outs(%{{.*}} : tensor<2x4x8x16xf32>) permutation = [0, 2, 1, 3]
// CHECK: tensor.collapse_shape %[[Q]] {{\[\[}}0, 1], [2], [3]] : tensor<2x4x8x16xf32> into tensor<8x8x16xf32>
// CHECK: %[[K:.*]] = linalg.transpose ins(%{{.*}} : tensor<2x8x4x16xf32>) outs(%{{.*}} : tensor<2x4x8x16xf32>) permutation = [0, 2, 1, 3]
// CHECK: tensor.collapse_shape %[[K]]
// CHECK: call @tprt_mlir_batched_gemm_f32(%[[NO]], %[[YES]], %{{.*}}, %{{.*}}, %{{.*}}) :
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] output_shape [2, 4, 8, 8] : tensor<8x8x8xf32> into tensor<2x4x8x8xf32>
func.func @attention_scores(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>) -> tensor<2x4x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) outs(%f : tensor<2x4x8x8xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %m = arith.mulf %in, %in_0 : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x8x8xf32>
  return %r : tensor<2x4x8x8xf32>
}

// A product whose result is [N, M]: computed as C^T = B^T A^T by swapping
// the operands, no transpose of the result.
// CHECK-LABEL: func.func @result_transposed
// CHECK-NOT: linalg.transpose
// CHECK: %[[B:.*]] = bufferization.to_buffer %arg1
// CHECK: %[[UB:.*]] = memref.cast %[[B]]
// CHECK: %[[A:.*]] = bufferization.to_buffer %arg0
// CHECK: %[[UA:.*]] = memref.cast %[[A]]
// CHECK: call @tprt_mlir_gemm_f32(%{{.*}}, %{{.*}}, %[[UB]], %[[UA]], %{{.*}})
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @result_transposed(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<16x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x4xf32>) -> tensor<16x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (n, m)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<16x4xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %m = arith.mulf %in, %in_0 : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x4xf32>
  return %r : tensor<16x4xf32>
}

// Accumulating into a non-zero init: the product goes into a fresh buffer,
// then an elementwise add with the init.
// CHECK-LABEL: func.func @accumulate
// CHECK: call @tprt_mlir_gemm_f32
// CHECK: %[[P:.*]] = bufferization.to_tensor
// CHECK: linalg.generic {{.*}} ins(%[[P]] : tensor<4x16xf32>) outs(%arg2 : tensor<4x16xf32>)
// CHECK: arith.addf
// CHECK-NOT: linalg.matmul
func.func @accumulate(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// A matrix-vector product: N is empty, a GEMM with one column; the vector
// is read as a [1, K] row with trans_b = 1.
// CHECK-LABEL: func.func @matvec
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
// CHECK: call @tprt_mlir_gemm_f32(%{{.*}}, %[[ONE]], %{{.*}}, %{{.*}}, %{{.*}})
func.func @matvec(%a: tensor<4x8xf32>, %x: tensor<8xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.matvec ins(%a, %x : tensor<4x8xf32>, tensor<8xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// Integer products stay linalg, with a remark.
// CHECK-LABEL: func.func @integer
// CHECK: linalg.matmul
// CHECK-NOT: call @tprt_mlir_gemm
func.func @integer(%a: tensor<4x8xi32>, %b: tensor<8x16xi32>, %c: tensor<4x16xi32>) -> tensor<4x16xi32> {
  // expected-remark @below {{contraction on 'i32' stays a kernel: the runtime's GEMM takes f32, f16, bf16 or f64}}
  %r = linalg.matmul ins(%a, %b : tensor<4x8xi32>, tensor<8x16xi32>) outs(%c : tensor<4x16xi32>) -> tensor<4x16xi32>
  return %r : tensor<4x16xi32>
}

// Mixed precision (bf16 inputs, an f32 accumulator that is not a zero
// fill): the mixed-precision call with an f32 C, the init added in f32
// (more cases in lower-gpu-gemm-mixed.mlir).
// CHECK-LABEL: func.func @mixed
// CHECK-SAME: %[[ACC:[^:]*]]: tensor<4x16xf32>
// CHECK: call @tprt_mlir_gemm_bf16_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, memref<*xbf16>, memref<*xbf16>, memref<*xf32>) -> ()
// CHECK: linalg.generic {{.*}} outs(%[[ACC]] : tensor<4x16xf32>)
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: linalg.matmul
func.func @mixed(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// A dot product has neither M nor N.
// CHECK-LABEL: func.func @dot
// CHECK: linalg.dot
func.func @dot(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<f32>) -> tensor<f32> {
  // expected-remark @below {{contraction with no M and no N dimension (a dot product) stays a kernel}}
  %r = linalg.dot ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%c : tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}
