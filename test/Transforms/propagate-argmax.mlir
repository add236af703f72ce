// RUN: tp-opt %s --tp-propagate="report=%t.json" | FileCheck %s
// RUN: %plan-summary %t.json | FileCheck %s --check-prefix=PLAN
// Regression (issue 17): torch-mlir's max over a dimension is an argmax
// (max and index outputs, the index tracked with cmpf/select). When only
// the max is used, the index output and the body code feeding it are
// dropped before planning, and the reduction splits like a plain max: one
// all-reduce of the [2047] maxima instead of moving the [2047, 32000] input.

// CHECK-LABEL: func.func @argmax_max_only
// CHECK: linalg.generic {{.*}}outs(%{{.*}} : tensor<2047xf32>)
// CHECK-SAME: tp.result_layouts = [#tp.layout<@tp, [-], partial = max("tp")>]
// CHECK-NOT: arith.select
// PLAN: function argmax_max_only
// PLAN-NEXT: all_reduce max over tp: 2047 f32
// PLAN-NEXT: totals: collectives=1
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map19 = affine_map<(d0, d1) -> (d0)>
tp.mesh @tp ["tp" = 4]
func.func @argmax_max_only(%collapsed_60: tensor<2047x32000xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>}) -> tensor<2047xf32> {
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %119 = tensor.empty() : tensor<2047xi64>
    %120 = linalg.fill ins(%c0_i64 : i64) outs(%119 : tensor<2047xi64>) -> tensor<2047xi64>
    %121 = tensor.empty() : tensor<2047xf32>
    %122 = linalg.fill ins(%cst_0 : f32) outs(%121 : tensor<2047xf32>) -> tensor<2047xf32>
    %123:2 = linalg.generic {indexing_maps = [#map3, #map19, #map19], iterator_types = ["parallel", "reduction"]} ins(%collapsed_60 : tensor<2047x32000xf32>) outs(%122, %120 : tensor<2047xf32>, tensor<2047xi64>) {
    ^bb0(%in: f32, %out: f32, %out_67: i64):
      %143 = linalg.index 1 : index
      %144 = arith.index_cast %143 : index to i64
      %145 = arith.maximumf %in, %out : f32
      %146 = arith.cmpf ogt, %in, %out : f32
      %147 = arith.select %146, %144, %out_67 : i64
      linalg.yield %145, %147 : f32, i64
    } -> (tensor<2047xf32>, tensor<2047xi64>)
  return %123#0 : tensor<2047xf32>
}
