// RUN: tp-opt %s --tp-gemm-to-runtime --verify-diagnostics | FileCheck %s
// 16-bit contractions into an f32 accumulator, as torch-mlir exports every
// matmul of a --dtype bf16 or f16 model: the mixed-precision GEMM call
// (16-bit A and B, an f32 C), or the 16-bit GEMM when the only use of the
// product rounds it back to the operands' type. The body is judged by value;
// any other body or mix of types keeps its remark and stays linalg.

// torch-mlir's linear in bf16: a generic whose body widens both operands and
// multiplies and adds in f32 (here in the other operand orders), the f32
// product returned unrounded: one call with an f32 C, the weight read with
// trans_b = 1.
// CHECK-LABEL: func.func @generic_extf_into_f32
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xbf16>, %[[W:.*]]: tensor<32x64xbf16>)
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: bufferization.to_buffer %[[X]] read_only : tensor<8x64xbf16> to memref<8x64xbf16>
// CHECK-DAG: bufferization.to_buffer %[[W]] read_only : tensor<32x64xbf16> to memref<32x64xbf16>
// CHECK: %[[C:.*]] = memref.alloc() : memref<8x32xf32>
// CHECK: call @tprt_mlir_gemm_bf16_f32(%[[ZERO]], %[[ONE]], %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, memref<*xbf16>, memref<*xbf16>, memref<*xf32>) -> ()
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[C]] restrict writable : memref<8x32xf32>
// CHECK: return %[[R]]
func.func @generic_extf_into_f32(%x: tensor<8x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<8x64xbf16>, tensor<32x64xbf16>) outs(%f : tensor<8x32xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %eb = arith.extf %b : bf16 to f32
    %ea = arith.extf %a : bf16 to f32
    %p = arith.mulf %eb, %ea : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// torch-mlir's nn.Linear in bf16 as it prints it: the weight transposed by
// linalg.transpose, a linalg.matmul of bf16 into a zero-filled f32, and an
// elementwise truncf back to bf16 as the product's only use. The rounding
// folds into the call: the 16-bit GEMM (f32 sums, rounded once) writes bf16
// directly; no f32 product, no truncf, no transpose.
// CHECK-LABEL: func.func @matmul_truncf_folds
// CHECK-NOT: linalg.transpose
// CHECK: %[[C:.*]] = memref.alloc() : memref<8x32xbf16>
// CHECK: call @tprt_mlir_gemm_bf16(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>) -> ()
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[C]] restrict writable : memref<8x32xbf16>
// CHECK-NOT: arith.truncf
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @matmul_truncf_folds(%x: tensor<8x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<8x32xbf16> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<64x32xbf16>
  %wt = linalg.transpose ins(%w : tensor<32x64xbf16>) outs(%et : tensor<64x32xbf16>) permutation = [1, 0]
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %p = linalg.matmul ins(%x, %wt : tensor<8x64xbf16>, tensor<64x32xbf16>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e16 = tensor.empty() : tensor<8x32xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<8x32xf32>) outs(%e16 : tensor<8x32xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x32xbf16>
  return %r : tensor<8x32xbf16>
}

// torch-mlir's attention scores in bf16: linalg.batch_matmul of bf16 into
// f32, read in f32 by the next op: the batched mixed call.
// CHECK-LABEL: func.func @batch_matmul_into_f32
// CHECK: %[[C:.*]] = memref.alloc() : memref<4x8x8xf32>
// CHECK: call @tprt_mlir_batched_gemm_bf16_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, memref<*xbf16>, memref<*xbf16>, memref<*xf32>) -> ()
// CHECK: bufferization.to_tensor %[[C]] restrict writable : memref<4x8x8xf32>
// CHECK: linalg.generic
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
func.func @batch_matmul_into_f32(%q: tensor<4x8x16xbf16>, %k: tensor<4x16x8xbf16>) -> tensor<4x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.25 : f32
  %e = tensor.empty() : tensor<4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %k : tensor<4x8x16xbf16>, tensor<4x16x8xbf16>) outs(%f : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<4x8x8xf32>) outs(%e : tensor<4x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    linalg.yield %m : f32
  } -> tensor<4x8x8xf32>
  return %r : tensor<4x8x8xf32>
}

// The same batch_matmul rounded to bf16 by its only use: the batched 16-bit
// GEMM.
// CHECK-LABEL: func.func @batch_matmul_truncf_folds
// CHECK: call @tprt_mlir_batched_gemm_bf16(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>) -> ()
// CHECK-NOT: arith.truncf
func.func @batch_matmul_truncf_folds(%q: tensor<4x8x16xbf16>, %k: tensor<4x16x8xbf16>) -> tensor<4x8x8xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %k : tensor<4x8x16xbf16>, tensor<4x16x8xbf16>) outs(%f : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %e16 = tensor.empty() : tensor<4x8x8xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<4x8x8xf32>) outs(%e16 : tensor<4x8x8xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8x8xbf16>
  return %r : tensor<4x8x8xbf16>
}

// f16 operands, a matmul with A transposed by its indexing maps: the f16
// mixed call with trans_a = 1.
// CHECK-LABEL: func.func @f16_transposed_a
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: call @tprt_mlir_gemm_f16_f32(%[[ONE]], %[[ZERO]], %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, memref<*xf16>, memref<*xf16>, memref<*xf32>) -> ()
func.func @f16_transposed_a(%a: tensor<16x4xf16>, %b: tensor<16x8xf16>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<16x4xf16>, tensor<16x8xf16>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// An accumulating init: the f32 init is added to the f32 product before
// the rounding, so the truncf does not fold; the mixed call, the add and the
// truncf stay, each in its own type.
// CHECK-LABEL: func.func @accumulate_then_truncf
// CHECK: call @tprt_mlir_gemm_bf16_f32(
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @accumulate_then_truncf(%x: tensor<8x64xbf16>, %w: tensor<64x32xbf16>, %acc: tensor<8x32xf32>) -> tensor<8x32xbf16> {
  %p = linalg.matmul ins(%x, %w : tensor<8x64xbf16>, tensor<64x32xbf16>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e16 = tensor.empty() : tensor<8x32xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<8x32xf32>) outs(%e16 : tensor<8x32xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x32xbf16>
  return %r : tensor<8x32xbf16>
}

// Rounded to another 16-bit type than the operands', or with a second use of
// the f32 product: no fold, the mixed call and the truncf kernel.
// CHECK-LABEL: func.func @truncf_not_folded
// CHECK: call @tprt_mlir_gemm_bf16_f32(
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: call @tprt_mlir_gemm_bf16_f32(
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @truncf_not_folded(%x: tensor<8x64xbf16>, %w: tensor<64x32xbf16>) -> (tensor<8x32xf16>, tensor<8x32xbf16>, tensor<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<8x64xbf16>, tensor<64x32xbf16>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  %eh = tensor.empty() : tensor<8x32xf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<8x32xf32>) outs(%eh : tensor<8x32xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<8x32xf16>
  %q = linalg.matmul ins(%x, %w : tensor<8x64xbf16>, tensor<64x32xbf16>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e16 = tensor.empty() : tensor<8x32xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%q : tensor<8x32xf32>) outs(%e16 : tensor<8x32xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x32xbf16>
  return %h, %r, %q : tensor<8x32xf16>, tensor<8x32xbf16>, tensor<8x32xf32>
}

// Refusals: each keeps its remark and stays linalg.

// bf16 and f16 operands: the runtime's GEMM takes A and B of one type.
// CHECK-LABEL: func.func @bf16_times_f16
// CHECK: linalg.matmul
// CHECK-NOT: call @tprt_mlir
func.func @bf16_times_f16(%a: tensor<4x8xbf16>, %b: tensor<8x16xf16>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-remark @below {{contraction of 'bf16' and 'f16' into 'f32' stays a kernel: the runtime's GEMM takes operands of one element type}}
  %r = linalg.matmul ins(%a, %b : tensor<4x8xbf16>, tensor<8x16xf16>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// f32 widened into f64: not a pair the runtime's GEMM has.
// CHECK-LABEL: func.func @f32_into_f64
// CHECK: linalg.matmul
func.func @f32_into_f64(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf64>) -> tensor<4x16xf64> {
  // expected-remark @below {{contraction of 'f32' into 'f64' stays a kernel: the runtime's GEMM takes one element type, or f16 or bf16 operands into f32}}
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf64>) -> tensor<4x16xf64>
  return %r : tensor<4x16xf64>
}

// The product rounded to bf16 before it is widened and added: not the
// widening multiply-accumulate (the GEMM would not round each product).
// CHECK-LABEL: func.func @rounded_product
// CHECK: linalg.generic
// CHECK-NOT: call @tprt_mlir
func.func @rounded_product(%x: tensor<8x64xbf16>, %w: tensor<64x32xbf16>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-remark @below {{contraction stays a kernel: its body is not the multiply-accumulate of the runtime's GEMM (it adds 'arith.extf' to the accumulator, not an arith.mulf)}}
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<8x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<8x32xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %p = arith.mulf %a, %b : bf16
    %e = arith.extf %p : bf16 to f32
    %s = arith.addf %acc, %e : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// An operand negated inside the body: linalg's contraction interface looks
// through the negf (any unary op without side effects), but the GEMM would
// drop it. Judged by value, the body is not acc + a * b.
// CHECK-LABEL: func.func @negated_operand
// CHECK: arith.negf
// CHECK-NOT: call @tprt_mlir
func.func @negated_operand(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-remark @below {{contraction stays a kernel: its body is not the multiply-accumulate of the runtime's GEMM (its product reads 'arith.negf', not an input as it is or widened by arith.extf)}}
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<8x64xf32>, tensor<64x32xf32>) outs(%c : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %n = arith.negf %a : f32
    %p = arith.mulf %n, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// The sum negated before it is yielded: not acc + a * b (the contraction
// interface looks through the negf).
// CHECK-LABEL: func.func @negated_sum
// CHECK: linalg.generic
// CHECK-NOT: call @tprt_mlir
func.func @negated_sum(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-remark @below {{contraction stays a kernel: its body is not the multiply-accumulate of the runtime's GEMM (it yields 'arith.negf', not an arith.addf)}}
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<8x64xf32>, tensor<64x32xf32>) outs(%c : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    %n = arith.negf %s : f32
    linalg.yield %n : f32
  } -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// A bf16 accumulator widened, added to in f32 and rounded back each step:
// a bf16 product summed in f32, which the 16-bit GEMM computes (rounding
// once instead of at every step, as for any bf16 matmul).
// CHECK-LABEL: func.func @widened_accumulator
// CHECK: call @tprt_mlir_gemm_bf16(
// CHECK: arith.addf %{{.*}}, %{{.*}} : bf16
// The declarations, one per entry point: 16-bit A and B, C in its type.
// CHECK-DAG: func.func private @tprt_mlir_gemm_bf16_f32(i32, i32, memref<*xbf16>, memref<*xbf16>, memref<*xf32>)
// CHECK-DAG: func.func private @tprt_mlir_batched_gemm_bf16_f32(i32, i32, memref<*xbf16>, memref<*xbf16>, memref<*xf32>)
// CHECK-DAG: func.func private @tprt_mlir_gemm_f16_f32(i32, i32, memref<*xf16>, memref<*xf16>, memref<*xf32>)
// CHECK-DAG: func.func private @tprt_mlir_gemm_bf16(i32, i32, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>)
func.func @widened_accumulator(%x: tensor<8x64xbf16>, %w: tensor<64x32xbf16>, %c: tensor<8x32xbf16>) -> tensor<8x32xbf16> {
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<8x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<8x32xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %ea = arith.extf %a : bf16 to f32
    %eb = arith.extf %b : bf16 to f32
    %eacc = arith.extf %acc : bf16 to f32
    %p = arith.mulf %ea, %eb : f32
    %s = arith.addf %eacc, %p : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x32xbf16>
  return %r : tensor<8x32xbf16>
}
