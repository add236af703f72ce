// RUN: tp-opt %s --tp-propagate="tp=4 report=%t.json" | FileCheck %s
// RUN: %plan-summary %t.json | FileCheck %s --check-prefix=PLAN
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// Regression (issue 17): torch-mlir CSEs one tensor.empty and one zero
// linalg.fill per shape and uses them as the `outs` of every op of that
// shape, in every layer. Shared, the zero init of a row-parallel matmul had
// to be whole (the column-parallel ones want it split) and joined the
// layers into one clique of the planner's graph. Each consumer now gets its
// own copy: two layers of Megatron's MLP, one all-reduce each.

// CHECK-LABEL: func.func @shared_inits
// Each matmul reads its own fill: split for the column-parallel ones, a
// partial sum for the row-parallel ones.
// CHECK: linalg.fill {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]
// CHECK: linalg.matmul {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]
// CHECK: linalg.fill {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, -], partial = sum("tp")>]
// CHECK: linalg.matmul {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, -], partial = sum("tp")>]
// CHECK: linalg.fill {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]
// CHECK: linalg.matmul {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]
// CHECK: linalg.fill {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, -], partial = sum("tp")>]
// CHECK: linalg.matmul {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, -], partial = sum("tp")>]

// PLAN: function shared_inits
// PLAN-NEXT: all_reduce sum over tp: 512x1024 f32
// PLAN-NEXT: all_reduce sum over tp: 512x1024 f32
// PLAN-NEXT: totals: collectives=2

// REPORT: "exact": true
// REPORT: "rematerialized": {{[1-9][0-9]*}}
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @shared_inits(%x: tensor<512x1024xf32>,
    %w1: tensor<1024x1024xf32> {tp.param}, %w2: tensor<1024x1024xf32> {tp.param},
    %w3: tensor<1024x1024xf32> {tp.param}, %w4: tensor<1024x1024xf32> {tp.param})
    -> tensor<512x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x1024xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  // Layer 0: column-parallel then row-parallel, both into %f.
  %h = linalg.matmul ins(%x, %w1 : tensor<512x1024xf32>, tensor<1024x1024xf32>) outs(%f : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<512x1024xf32>) outs(%e : tensor<512x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<512x1024xf32>
  %y = linalg.matmul ins(%a, %w2 : tensor<512x1024xf32>, tensor<1024x1024xf32>) outs(%f : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<512x1024xf32>, tensor<512x1024xf32>) outs(%e : tensor<512x1024xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<512x1024xf32>
  // Layer 1: the same init and empty again.
  %h1 = linalg.matmul ins(%r, %w3 : tensor<512x1024xf32>, tensor<1024x1024xf32>) outs(%f : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  %a1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h1 : tensor<512x1024xf32>) outs(%e : tensor<512x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<512x1024xf32>
  %y1 = linalg.matmul ins(%a1, %w4 : tensor<512x1024xf32>, tensor<1024x1024xf32>) outs(%f : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  %r1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %y1 : tensor<512x1024xf32>, tensor<512x1024xf32>) outs(%e : tensor<512x1024xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<512x1024xf32>
  return %r1 : tensor<512x1024xf32>
}
