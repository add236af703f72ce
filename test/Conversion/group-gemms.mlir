// RUN: tp-opt %s --tp-gemm-to-runtime --tp-group-gemms | FileCheck %s
// RUN: tp-opt %s --tp-gemm-to-runtime | FileCheck %s --check-prefix=BEFORE
// GEMM calls that multiply the same operand A, with the same transposes and
// operand and result types, become one shared-A call at the first call's
// place: (trans_a, trans_b, A, B_0..B_N-1, C_0..C_N-1), at most 4 products
// per call.

// BEFORE-LABEL: func.func @qkv
// BEFORE-COUNT-3: call @tprt_mlir_gemm_f32(

// Q, K and V of one input: one call of three products.
// CHECK-LABEL: func.func @qkv
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf32>, %[[WQ:.*]]: tensor<64x32xf32>, %[[WK:.*]]: tensor<64x32xf32>, %[[WV:.*]]: tensor<64x32xf32>)
// CHECK: %[[A:.*]] = bufferization.to_buffer %[[X]] read_only
// CHECK: %[[BQ:.*]] = bufferization.to_buffer %[[WQ]] read_only
// CHECK: %[[Q:.*]] = memref.alloc() : memref<16x32xf32>
// CHECK: %[[BK:.*]] = bufferization.to_buffer %[[WK]] read_only
// CHECK: %[[K:.*]] = memref.alloc() : memref<16x32xf32>
// CHECK: %[[BV:.*]] = bufferization.to_buffer %[[WV]] read_only
// CHECK: %[[V:.*]] = memref.alloc() : memref<16x32xf32>
// CHECK: call @tprt_mlir_gemm_shared_a3_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>) -> ()
// CHECK-DAG: bufferization.to_tensor %[[K]] restrict writable
// CHECK-DAG: bufferization.to_tensor %[[V]] restrict writable
// CHECK-DAG: bufferization.to_tensor %[[Q]] restrict writable
// CHECK-NOT: call @tprt_mlir_gemm_f32
// CHECK: return
func.func @qkv(%x: tensor<16x64xf32>, %wq: tensor<64x32xf32>, %wk: tensor<64x32xf32>, %wv: tensor<64x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %v = linalg.matmul ins(%x, %wv : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %q, %k, %v : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>
}

// Grouped-query attention: K and V (16 columns each) are one call, Q (64
// columns) stays its own.
// CHECK-LABEL: func.func @gqa
// CHECK: call @tprt_mlir_gemm_f32(
// CHECK: call @tprt_mlir_gemm_shared_a2_f32(
// CHECK-NOT: call @tprt_mlir_gemm
// CHECK: return
func.func @gqa(%x: tensor<16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x16xf32>, %wv: tensor<64x16xf32>) -> (tensor<16x64xf32>, tensor<16x16xf32>, tensor<16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %e2 = tensor.empty() : tensor<16x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<16x64xf32>, tensor<64x64xf32>) outs(%z : tensor<16x64xf32>) -> tensor<16x64xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<16x64xf32>, tensor<64x16xf32>) outs(%z2 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %v = linalg.matmul ins(%x, %wv : tensor<16x64xf32>, tensor<64x16xf32>) outs(%z2 : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %q, %k, %v : tensor<16x64xf32>, tensor<16x16xf32>, tensor<16x16xf32>
}

// Five products of one operand: four in one call, the fifth on its own.
// CHECK-LABEL: func.func @five
// CHECK: call @tprt_mlir_gemm_shared_a4_f32(
// CHECK: call @tprt_mlir_gemm_f32(
// CHECK-NOT: call @tprt_mlir_gemm
// CHECK: return
func.func @five(%x: tensor<8x8xf32>, %w: tensor<5x8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %w0 = tensor.extract_slice %w[0, 0, 0] [1, 8, 8] [1, 1, 1] : tensor<5x8x8xf32> to tensor<8x8xf32>
  %w1 = tensor.extract_slice %w[1, 0, 0] [1, 8, 8] [1, 1, 1] : tensor<5x8x8xf32> to tensor<8x8xf32>
  %w2 = tensor.extract_slice %w[2, 0, 0] [1, 8, 8] [1, 1, 1] : tensor<5x8x8xf32> to tensor<8x8xf32>
  %w3 = tensor.extract_slice %w[3, 0, 0] [1, 8, 8] [1, 1, 1] : tensor<5x8x8xf32> to tensor<8x8xf32>
  %w4 = tensor.extract_slice %w[4, 0, 0] [1, 8, 8] [1, 1, 1] : tensor<5x8x8xf32> to tensor<8x8xf32>
  %r0 = linalg.matmul ins(%x, %w0 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r1 = linalg.matmul ins(%x, %w1 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r2 = linalg.matmul ins(%x, %w2 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r3 = linalg.matmul ins(%x, %w3 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r4 = linalg.matmul ins(%x, %w4 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r0, %r1, %r2, %r3, %r4 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// The second product's B is the first one's result: it cannot run with
// it, so both stay plain calls.
// CHECK-LABEL: func.func @dependent
// CHECK-COUNT-2: call @tprt_mlir_gemm_f32(
// CHECK-NOT: shared_a
// CHECK: return
func.func @dependent(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r0 = linalg.matmul ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r1 = linalg.matmul ins(%x, %r0 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r1 : tensor<8x8xf32>
}

// Other transposes of B: two plain calls.
// CHECK-LABEL: func.func @transposes
// CHECK-COUNT-2: call @tprt_mlir_gemm_f32(
// CHECK-NOT: shared_a
// CHECK: return
func.func @transposes(%x: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r0 = linalg.matmul ins(%x, %w1 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r1 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w2 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r0, %r1 : tensor<8x8xf32>, tensor<8x8xf32>
}
