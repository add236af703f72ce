// RUN: tp-opt %s --tp-propagate="tp=4 large-constant-bytes=64 report=%t.json" | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// A non-splat constant at or above large-constant-bytes is a weight: it
// counts against the parameter budget and is split, here by columns like
// the weight it is (the partitioner keeps the whole value in the program and
// each device slices its block: partition-constants.mlir).

// CHECK-LABEL: func.func @constant_weight
// CHECK: arith.constant {tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]} dense
// REPORT: "param_bytes_per_device": 16
// REPORT: "param_bytes_total": 64
func.func @constant_weight(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]> : tensor<4x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  %g = math.tanh %y : tensor<4x4xf32>
  return %g : tensor<4x4xf32>
}
