// Products for lower-gpu-gemm-numerics.test: each @case_* is compiled once
// through --tp-gemm-to-runtime (GEMM calls) and once as loops (renamed
// @ref_*), and the driver compares the two.

#id2 = affine_map<(d0, d1) -> (d0, d1)>

func.func @case_transposed_a(%a: tensor<8x4xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<8x4xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}

func.func @case_result_transposed(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<16x4xf32> attributes {llvm.emit_c_interface} {
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

func.func @case_batch_transposed_b(%a: tensor<3x4x8xf32>, %b: tensor<3x16x8xf32>) -> tensor<3x4x16xf32> attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x4x16xf32>) -> tensor<3x4x16xf32>
  %c = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%a, %b : tensor<3x4x8xf32>, tensor<3x16x8xf32>) outs(%f : tensor<3x4x16xf32>) -> tensor<3x4x16xf32>
  return %c : tensor<3x4x16xf32>
}

func.func @case_qkv(%x: tensor<16x64xf32>, %w: tensor<64x3x32xf32>) -> tensor<16x3x32xf32> attributes {llvm.emit_c_interface} {
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

// q, k as [batch, seq, heads, dim] (tp-gen's attention scores).
func.func @case_scores(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>) -> tensor<2x4x8x8xf32> attributes {llvm.emit_c_interface} {
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

// probabilities [batch, heads, query, key] times v [batch, key, heads, dim]
// into [batch, query, heads, dim] (tp-gen's attention output).
func.func @case_pv(%p: tensor<2x4x8x8xf32>, %v: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x8x8xf32>, tensor<2x8x4x16xf32>) outs(%f : tensor<2x8x4x16xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %m = arith.mulf %in, %in_0 : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x4x16xf32>
  return %r : tensor<2x8x4x16xf32>
}

func.func @case_accumulate(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> attributes {llvm.emit_c_interface} {
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

func.func @case_matvec(%a: tensor<4x8xf32>, %x: tensor<8xf32>) -> tensor<4xf32> attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.matvec ins(%a, %x : tensor<4x8xf32>, tensor<8xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// Q, K and V of one input (tp-group-gemms makes them one shared-A call),
// returned as q + 2k + 3v so that every product shows in the one result.
func.func @case_shared_a(%x: tensor<16x64xf32>, %wq: tensor<64x32xf32>, %wk: tensor<64x32xf32>, %wv: tensor<64x32xf32>) -> tensor<16x32xf32> attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %v = linalg.matmul ins(%x, %wv : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%q, %k, %v : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %b2 = arith.mulf %b, %two : f32
    %c3 = arith.mulf %c, %three : f32
    %s = arith.addf %a, %b2 : f32
    %t = arith.addf %s, %c3 : f32
    linalg.yield %t : f32
  } -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// torch-mlir's nn.Linear: the weight transposed by a linalg.transpose, then
// a plain matmul (tp-gemm-to-runtime folds the transpose into trans_b).
func.func @case_linear_wt(%x: tensor<16x64xf32>, %w: tensor<32x64xf32>) -> tensor<16x32xf32> attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<64x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x64xf32>) outs(%et : tensor<64x32xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<16x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %c = linalg.matmul ins(%x, %wt : tensor<16x64xf32>, tensor<64x32xf32>) outs(%f : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %c : tensor<16x32xf32>
}
