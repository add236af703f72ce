// Pending sums flow through linear elementwise ops (Planner.cpp,
// isSumLinear): Megatron's backward adds the partial input gradients of
// separate column-parallel projections (Llama's q, k, v; gate, up) before
// one all-reduce. Each function below has two row-split contractions whose
// results are partial sums, combined elementwise and returned replicated.
// RUN: tp-opt %s --split-input-file --tp-propagate="tp=4" | FileCheck %s
// The partitioned program of the first function has one all-reduce.
// RUN: tp-opt %s --split-input-file --tp-shard="tp=4" | FileCheck %s --check-prefix=SHARD

#id = affine_map<(i, j) -> (i, j)>
// The weights are large enough that the default budget splits them; the
// input is pinned split on the contracted dimension.
tp.mesh @tp ["tp" = 4]

// A sum of two partial sums is the partial sum of the sums: one all-reduce,
// after the add.
// CHECK-LABEL: func.func @sum_of_partials
// CHECK: linalg.generic {{.*}}tp.operand_layouts = [#tp.layout<@tp, [-, -], partial = sum("tp")>, #tp.layout<@tp, [-, -], partial = sum("tp")>, {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, -], partial = sum("tp")>]
// CHECK: return {{.*}}tp.operand_layouts = [#tp.layout<@tp, [-, -]>]
// SHARD-LABEL: func.func @sum_of_partials
// SHARD: linalg.generic
// SHARD: arith.subf
// SHARD-NEXT: arith.mulf
// SHARD: tp.all_reduce sum
// SHARD-NOT: tp.all_reduce
// SHARD-LABEL: func.func @not_linear
func.func @sum_of_partials(%a: tensor<64x4096xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>},
                           %w1: tensor<4096x1024xf32> {tp.param},
                           %w2: tensor<4096x1024xf32> {tp.param}) -> tensor<64x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<64x1024xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %p1 = linalg.matmul ins(%a, %w1 : tensor<64x4096xf32>, tensor<4096x1024xf32>) outs(%z : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %p2 = linalg.matmul ins(%a, %w2 : tensor<64x4096xf32>, tensor<4096x1024xf32>) outs(%z : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  // 0.5 * (p1 - p2): linear, no constant term.
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p1, %p2 : tensor<64x1024xf32>, tensor<64x1024xf32>) outs(%e : tensor<64x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.subf %x, %y : f32
    %r = arith.mulf %half, %d : f32
    linalg.yield %r : f32
  } -> tensor<64x1024xf32>
  return %s : tensor<64x1024xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
tp.mesh @tp ["tp" = 4]

// A product is not linear, and neither is a sum plus a constant (each
// device would add it once): the inputs are reduced first.
// CHECK-LABEL: func.func @not_linear
// CHECK: linalg.generic {{.*}}tp.operand_layouts = [#tp.layout<@tp, [-, -]>, #tp.layout<@tp, [-, -]>, #tp.layout<@tp, [-, -]>], tp.result_layouts = [#tp.layout<@tp, [-, -]>]
// CHECK: linalg.generic {{.*}}tp.operand_layouts = [#tp.layout<@tp, [-, -]>, #tp.layout<@tp, [-, -]>, #tp.layout<@tp, [-, -]>], tp.result_layouts = [#tp.layout<@tp, [-, -]>]
func.func @not_linear(%a: tensor<64x4096xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>},
                      %w1: tensor<4096x1024xf32> {tp.param},
                      %w2: tensor<4096x1024xf32> {tp.param}) -> (tensor<64x1024xf32>, tensor<64x1024xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<64x1024xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %p1 = linalg.matmul ins(%a, %w1 : tensor<64x4096xf32>, tensor<4096x1024xf32>) outs(%z : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %p2 = linalg.matmul ins(%a, %w2 : tensor<64x4096xf32>, tensor<4096x1024xf32>) outs(%z : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %prod = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p1, %p2 : tensor<64x1024xf32>, tensor<64x1024xf32>) outs(%e : tensor<64x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.mulf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<64x1024xf32>
  %affine = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p1, %p2 : tensor<64x1024xf32>, tensor<64x1024xf32>) outs(%e : tensor<64x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %r = arith.addf %s, %one : f32
    linalg.yield %r : f32
  } -> tensor<64x1024xf32>
  return %prod, %affine : tensor<64x1024xf32>, tensor<64x1024xf32>
}
