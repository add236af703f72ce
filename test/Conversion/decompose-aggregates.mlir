// RUN: tp-opt %s --tp-decompose-aggregates | FileCheck %s
// RUN: tp-opt %s --tp-lower-cpu -o /dev/null
// linalg.softmax (which front ends and the planner keep whole) and
// elementwise ops on tensors become linalg generics that both lowerings
// handle; the CPU lowering then goes through (second RUN line).

// CHECK-LABEL: func.func @softmax_then_tanh
// CHECK-NOT: linalg.softmax
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.maxnumf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: arith.divf
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK-NOT: math.tanh {{.*}}: tensor
func.func @softmax_then_tanh(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %e = tensor.empty() : tensor<2x16xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<2x16xf32>) outs(%e : tensor<2x16xf32>) -> tensor<2x16xf32>
  %t = math.tanh %s : tensor<2x16xf32>
  return %t : tensor<2x16xf32>
}
