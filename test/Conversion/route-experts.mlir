// RUN: tp-opt %s --tp-route-experts -split-input-file -verify-diagnostics | FileCheck %s
// A contraction whose weight operand is gathered per (token, choice) row
// from a stack of experts becomes a routed grouped GEMM: the gathered
// [rows, O, K] copy is gone, the rows are counting-sorted by expert and one
// tprt_mlir_gemm_grouped call multiplies them by each expert's weight.
// Anything that reads a gather but does not fit stays, with a remark.

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0)>

// Hugging Face's batched_mm experts as torch-mlir exports them: ids with
// the negative-index wrap, the expert's [O, K] weight per row, a batched
// product with the row as a [K, 1] matrix. Stack dimension 1 is the
// output: trans_b = 1.
// CHECK-LABEL: func.func @batched_mm
// CHECK-SAME: (%[[IDS:.*]]: tensor<6xi64>, %[[X:.*]]: tensor<6x8x1xf32>, %[[W:.*]]: tensor<3x5x8xf32>)
// CHECK-NOT: tensor<6x5x8xf32>
// CHECK-NOT: linalg.batch_matmul
// The ids, as i64, clamped to the experts.
// CHECK: %[[ID:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<6xi64>) outs(%{{.*}} : tensor<6xi64>)
// CHECK: arith.select
// CHECK: arith.maxsi
// CHECK: arith.minsi
// Counts per expert, offsets, places and their inverse.
// CHECK: %[[COUNTS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[ID]] : tensor<6xi64>) outs(%{{.*}} : tensor<3xi64>)
// CHECK: linalg.generic {{.*}} ins(%[[COUNTS]] : tensor<3xi64>) outs(%{{.*}} : tensor<3xi64>)
// CHECK: linalg.generic {{.*}} ins(%[[ID]], %[[ID]] : tensor<6xi64>, tensor<6xi64>) outs(%{{.*}} : tensor<6xi64>)
// CHECK: %[[DEST:.*]] = linalg.generic
// CHECK: %[[SRC:.*]] = linalg.generic {{.*}} ins(%[[DEST]] : tensor<6xi64>)
// The rows in expert order, [rows, K].
// CHECK: %[[SORTED:.*]] = linalg.generic {{.*}} ins(%[[SRC]] : tensor<6xi64>) outs(%{{.*}} : tensor<6x1x8xf32>)
// CHECK: tensor.extract %[[X]]
// CHECK: %[[A:.*]] = tensor.collapse_shape %[[SORTED]] {{\[}}[0, 1], [2]] : tensor<6x1x8xf32> into tensor<6x8xf32>
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<6x5xf32>
// CHECK: %[[T:.*]] = arith.constant 1 : i32
// CHECK: bufferization.to_buffer %[[A]]
// CHECK: bufferization.to_buffer %[[W]]
// CHECK: bufferization.to_buffer %[[COUNTS]]
// CHECK: call @tprt_mlir_gemm_grouped_f32(%[[T]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, memref<*xf32>, memref<*xf32>, memref<*xi64>, memref<*xf32>) -> ()
// CHECK: %[[YS:.*]] = bufferization.to_tensor %[[OUT]]
// Back in row order: y[p, o, t] = ys[dest[p], o].
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[DEST]] : tensor<6xi64>) outs(%{{.*}} : tensor<6x5x1xf32>)
// CHECK: tensor.extract %[[YS]]
// CHECK: return %[[Y]]
func.func @batched_mm(%ids: tensor<6xi64>, %x: tensor<6x8x1xf32>, %w: tensor<3x5x8xf32>) -> tensor<6x5x1xf32> {
  %c0 = arith.constant 0 : i64
  %c3 = arith.constant 3 : i64
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x5x8xf32>
  %g = linalg.generic {indexing_maps = [#row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<6xi64>) outs(%e : tensor<6x5x8xf32>) {
  ^bb0(%in: i64, %out: f32):
    %neg = arith.cmpi slt, %in, %c0 : i64
    %wrapped = arith.addi %in, %c3 : i64
    %id = arith.select %neg, %wrapped, %in : i64
    %i = arith.index_cast %id : i64 to index
    %o = linalg.index 1 : index
    %k = linalg.index 2 : index
    %v = tensor.extract %w[%i, %o, %k] : tensor<3x5x8xf32>
    linalg.yield %v : f32
  } -> tensor<6x5x8xf32>
  %ye = tensor.empty() : tensor<6x5x1xf32>
  %yf = linalg.fill ins(%zero : f32) outs(%ye : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  %y = linalg.batch_matmul ins(%g, %x : tensor<6x5x8xf32>, tensor<6x8x1xf32>) outs(%yf : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  return %y : tensor<6x5x1xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0)>

// Two products routed by the same ids (an expert MLP's up and down
// projections) share one routing: one counting sort, two grouped GEMMs.
// The stack [E, K, O] is read untransposed (trans_b = 0); the rows are the
// right operand, x [rows, 2 tokens, K], so T = 2 rows of A per row and the
// counts are scaled by 2.
// CHECK-LABEL: func.func @shared_routing
// CHECK-COUNT-1: iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4xi64>) outs(%{{.*}} : tensor<2xi64>)
// CHECK: arith.muli
// CHECK: %[[NO:.*]] = arith.constant 0 : i32
// CHECK: call @tprt_mlir_gemm_grouped_bf16(%[[NO]],
// CHECK-NOT: iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4xi64>) outs(%{{.*}} : tensor<2xi64>)
// CHECK: call @tprt_mlir_gemm_grouped_bf16(
// CHECK-NOT: linalg.batch_matmul
// CHECK: return
func.func @shared_routing(%ids: tensor<4xi32>, %x: tensor<4x2x3xbf16>, %up: tensor<2x3x6xbf16>, %down: tensor<2x6x3xbf16>) -> tensor<4x2x3xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e1 = tensor.empty() : tensor<4x3x6xbf16>
  %g1 = linalg.generic {indexing_maps = [#row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<4xi32>) outs(%e1 : tensor<4x3x6xbf16>) {
  ^bb0(%in: i32, %out: bf16):
    %i = arith.index_cast %in : i32 to index
    %a = linalg.index 1 : index
    %b = linalg.index 2 : index
    %v = tensor.extract %up[%i, %a, %b] : tensor<2x3x6xbf16>
    linalg.yield %v : bf16
  } -> tensor<4x3x6xbf16>
  %he = tensor.empty() : tensor<4x2x6xbf16>
  %hf = linalg.fill ins(%zero : bf16) outs(%he : tensor<4x2x6xbf16>) -> tensor<4x2x6xbf16>
  %h = linalg.batch_matmul ins(%x, %g1 : tensor<4x2x3xbf16>, tensor<4x3x6xbf16>) outs(%hf : tensor<4x2x6xbf16>) -> tensor<4x2x6xbf16>
  %e2 = tensor.empty() : tensor<4x6x3xbf16>
  %g2 = linalg.generic {indexing_maps = [#row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<4xi32>) outs(%e2 : tensor<4x6x3xbf16>) {
  ^bb0(%in: i32, %out: bf16):
    %i = arith.index_cast %in : i32 to index
    %a = linalg.index 1 : index
    %b = linalg.index 2 : index
    %v = tensor.extract %down[%i, %a, %b] : tensor<2x6x3xbf16>
    linalg.yield %v : bf16
  } -> tensor<4x6x3xbf16>
  %ye = tensor.empty() : tensor<4x2x3xbf16>
  %yf = linalg.fill ins(%zero : bf16) outs(%ye : tensor<4x2x3xbf16>) -> tensor<4x2x3xbf16>
  %y = linalg.batch_matmul ins(%h, %g2 : tensor<4x2x6xbf16>, tensor<4x6x3xbf16>) outs(%yf : tensor<4x2x3xbf16>) -> tensor<4x2x3xbf16>
  return %y : tensor<4x2x3xbf16>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0)>

// Expert parallelism's masked gather (experts held elsewhere read as
// zero): the yield is a select, not an extract, so it is no routed form
// and stays as it is, silently (nothing reads a per-row stack copy).
// CHECK-LABEL: func.func @masked_gather
// CHECK: linalg.batch_matmul
// CHECK-NOT: tprt_mlir_gemm_grouped
func.func @masked_gather(%ids: tensor<6xi64>, %x: tensor<6x8x1xf32>, %w: tensor<2x5x8xf32>) -> tensor<6x5x1xf32> {
  %c2 = arith.constant 2 : i64
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x5x8xf32>
  %g = linalg.generic {indexing_maps = [#row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<6xi64>) outs(%e : tensor<6x5x8xf32>) {
  ^bb0(%in: i64, %out: f32):
    %mine = arith.cmpi slt, %in, %c2 : i64
    %i = arith.index_cast %in : i64 to index
    %o = linalg.index 1 : index
    %k = linalg.index 2 : index
    %v = tensor.extract %w[%i, %o, %k] : tensor<2x5x8xf32>
    %r = arith.select %mine, %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<6x5x8xf32>
  %ye = tensor.empty() : tensor<6x5x1xf32>
  %yf = linalg.fill ins(%zero : f32) outs(%ye : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  %y = linalg.batch_matmul ins(%g, %x : tensor<6x5x8xf32>, tensor<6x8x1xf32>) outs(%yf : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  return %y : tensor<6x5x1xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0)>

// The expert is the stack's last dimension: the grouped GEMM's B would
// need a transpose of the whole stack; left alone with a remark.
func.func @expert_last(%ids: tensor<6xi64>, %x: tensor<6x8x1xf32>, %w: tensor<5x8x3xf32>) -> tensor<6x5x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x5x8xf32>
  %g = linalg.generic {indexing_maps = [#row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<6xi64>) outs(%e : tensor<6x5x8xf32>) {
  ^bb0(%in: i64, %out: f32):
    %i = arith.index_cast %in : i64 to index
    %o = linalg.index 1 : index
    %k = linalg.index 2 : index
    %v = tensor.extract %w[%o, %k, %i] : tensor<5x8x3xf32>
    linalg.yield %v : f32
  } -> tensor<6x5x8xf32>
  %ye = tensor.empty() : tensor<6x5x1xf32>
  %yf = linalg.fill ins(%zero : f32) outs(%ye : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  // expected-remark @+1 {{not routed: its gather does not read a 3-D stack [experts, a, b] by its first dimension}}
  %y = linalg.batch_matmul ins(%g, %x : tensor<6x5x8xf32>, tensor<6x8x1xf32>) outs(%yf : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  return %y : tensor<6x5x1xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0)>

// The expert id depends on a loop index (a different expert per output
// row of the weight): not one expert per row; left alone with a remark.
func.func @index_from_loop(%ids: tensor<6xi64>, %x: tensor<6x8x1xf32>, %w: tensor<3x5x8xf32>) -> tensor<6x5x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x5x8xf32>
  %g = linalg.generic {indexing_maps = [#row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<6xi64>) outs(%e : tensor<6x5x8xf32>) {
  ^bb0(%in: i64, %out: f32):
    %o = linalg.index 1 : index
    %k = linalg.index 2 : index
    %i0 = arith.index_cast %in : i64 to index
    %i = arith.addi %i0, %o : index
    %v = tensor.extract %w[%i, %o, %k] : tensor<3x5x8xf32>
    linalg.yield %v : f32
  } -> tensor<6x5x8xf32>
  %ye = tensor.empty() : tensor<6x5x1xf32>
  %yf = linalg.fill ins(%zero : f32) outs(%ye : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  // expected-remark @+1 {{not routed: index 0 of its gather is neither a loop index nor one expert id computed from the gather's inputs}}
  %y = linalg.batch_matmul ins(%g, %x : tensor<6x5x8xf32>, tensor<6x8x1xf32>) outs(%yf : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  return %y : tensor<6x5x1xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0)>

// Operands of two types (a bf16 stack times f32 rows into f32): the
// grouped GEMM takes one type for A and B; left alone with a remark.
func.func @mixed_types(%ids: tensor<6xi64>, %x: tensor<6x8x1xf32>, %w: tensor<3x5x8xbf16>) -> tensor<6x5x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x5x8xbf16>
  %g = linalg.generic {indexing_maps = [#row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<6xi64>) outs(%e : tensor<6x5x8xbf16>) {
  ^bb0(%in: i64, %out: bf16):
    %i = arith.index_cast %in : i64 to index
    %o = linalg.index 1 : index
    %k = linalg.index 2 : index
    %v = tensor.extract %w[%i, %o, %k] : tensor<3x5x8xbf16>
    linalg.yield %v : bf16
  } -> tensor<6x5x8xbf16>
  %ye = tensor.empty() : tensor<6x5x1xf32>
  %yf = linalg.fill ins(%zero : f32) outs(%ye : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  // expected-remark @+1 {{not routed: its operands are not of one float type}}
  %y = linalg.batch_matmul ins(%g, %x : tensor<6x5x8xbf16>, tensor<6x8x1xf32>) outs(%yf : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  return %y : tensor<6x5x1xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0)>

// torch-mlir's bf16 export: bf16 operands into an f32 accumulator from a
// zero fill, rounded back to bf16 by the product's only use. The bf16
// grouped GEMM (f32 sums, rounded once) computes exactly that: the
// rounding generic goes, and the rows put back are bf16.
// CHECK-LABEL: func.func @bf16_rounded_back
// CHECK-NOT: linalg.batch_matmul
// CHECK: call @tprt_mlir_gemm_grouped_bf16(
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<6x5x1xbf16>)
// CHECK-NOT: arith.truncf
// CHECK: return %[[Y]] : tensor<6x5x1xbf16>
func.func @bf16_rounded_back(%ids: tensor<6xi64>, %x: tensor<6x8x1xbf16>, %w: tensor<3x5x8xbf16>) -> tensor<6x5x1xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x5x8xbf16>
  %g = linalg.generic {indexing_maps = [#row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<6xi64>) outs(%e : tensor<6x5x8xbf16>) {
  ^bb0(%in: i64, %out: bf16):
    %i = arith.index_cast %in : i64 to index
    %o = linalg.index 1 : index
    %k = linalg.index 2 : index
    %v = tensor.extract %w[%i, %o, %k] : tensor<3x5x8xbf16>
    linalg.yield %v : bf16
  } -> tensor<6x5x8xbf16>
  %ye = tensor.empty() : tensor<6x5x1xf32>
  %yf = linalg.fill ins(%zero : f32) outs(%ye : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  %y = linalg.batch_matmul ins(%g, %x : tensor<6x5x8xbf16>, tensor<6x8x1xbf16>) outs(%yf : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  %re = tensor.empty() : tensor<6x5x1xbf16>
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%y : tensor<6x5x1xf32>) outs(%re : tensor<6x5x1xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<6x5x1xbf16>
  return %r : tensor<6x5x1xbf16>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0)>

// The same bf16 product kept in f32 (its f32 sums are read): no 16-bit
// grouped GEMM computes that; left alone with a remark.
func.func @bf16_into_f32(%ids: tensor<6xi64>, %x: tensor<6x8x1xbf16>, %w: tensor<3x5x8xbf16>) -> tensor<6x5x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x5x8xbf16>
  %g = linalg.generic {indexing_maps = [#row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<6xi64>) outs(%e : tensor<6x5x8xbf16>) {
  ^bb0(%in: i64, %out: bf16):
    %i = arith.index_cast %in : i64 to index
    %o = linalg.index 1 : index
    %k = linalg.index 2 : index
    %v = tensor.extract %w[%i, %o, %k] : tensor<3x5x8xbf16>
    linalg.yield %v : bf16
  } -> tensor<6x5x8xbf16>
  %ye = tensor.empty() : tensor<6x5x1xf32>
  %yf = linalg.fill ins(%zero : f32) outs(%ye : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  // expected-remark @+1 {{not routed: its operands and result are not of one float type (and it is not a 16-bit product from zero rounded back by its only use)}}
  %y = linalg.batch_matmul ins(%g, %x : tensor<6x5x8xbf16>, tensor<6x8x1xbf16>) outs(%yf : tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  return %y : tensor<6x5x1xf32>
}
