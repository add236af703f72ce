// RUN: tp-opt %s --convert-tp-to-runtime | FileCheck %s
// A matmul on a zero fill (the form tp-gen and front ends emit) becomes a
// call of the runtime's GEMM, with the transposes its indexing maps say;
// other matmuls stay linalg (and become loops).

// CHECK-LABEL: func.func @plain
// CHECK-NOT: linalg.matmul
// CHECK: %[[TA:.*]] = arith.constant 0 : i32
// CHECK: %[[TB:.*]] = arith.constant 0 : i32
// CHECK: call @tprt_mlir_gemm_f32(%[[TA]], %[[TB]], %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, memref<*xf32>, memref<*xf32>, memref<*xf32>) -> ()
func.func @plain(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}

// A tied LM head reads its weight transposed: trans_b = 1.
// CHECK-LABEL: func.func @transposed_b
// CHECK: %[[NO:.*]] = arith.constant 0 : i32
// CHECK: %[[YES:.*]] = arith.constant 1 : i32
// CHECK: call @tprt_mlir_gemm_bf16(%[[NO]], %[[YES]], %{{.*}}, %{{.*}}, %{{.*}})
func.func @transposed_b(%h: tensor<4x8xbf16>, %w: tensor<32x8xbf16>) -> tensor<4x32xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<4x32xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<4x32xbf16>) -> tensor<4x32xbf16>
  %c = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%h, %w : tensor<4x8xbf16>, tensor<32x8xbf16>) outs(%f : tensor<4x32xbf16>) -> tensor<4x32xbf16>
  return %c : tensor<4x32xbf16>
}

// Accumulating into a non-zero init is left to the loops.
// CHECK-LABEL: func.func @accumulate
// CHECK-NOT: call @tprt_mlir_gemm
// CHECK: linalg.matmul
// CHECK-NOT: call @tprt_mlir_gemm
// CHECK: return
func.func @accumulate(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
