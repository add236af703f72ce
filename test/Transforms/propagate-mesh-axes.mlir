// RUN: tp-opt %s --tp-propagate="mesh-axes=dp=2,tp=4 batch-axis=dp report=%t.json" | FileCheck %s
// RUN: %plan-summary %t.json | FileCheck %s --check-prefix=PLAN
// RUN: tp-opt %s --tp-shard="mesh-axes=dp=2,tp=4 batch-axis=dp" | FileCheck %s --check-prefix=SHARD
// A data x tensor mesh from the command line (issue 19, item 3): mesh-axes
// declares tp.mesh @mesh with the named axes, batch-axis pins the first
// dimension of every non-parameter input over "dp"; the weights are free
// and the planner gives them Megatron's layout over "tp".

// CHECK: tp.mesh @mesh ["dp" = 2, "tp" = 4]
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: tensor<16x64xf32> {tp.layout = #tp.layout<@mesh, ["dp", -]>}
// CHECK-SAME: tensor<64x256xf32> {tp.layout = #tp.layout<@mesh, [-, "tp"]>, tp.param}
// CHECK-SAME: tensor<256x64xf32> {tp.layout = #tp.layout<@mesh, ["tp", -]>, tp.param}
// PLAN: function mlp
// PLAN-NEXT: all_reduce sum over tp: 8x64 f32
// SHARD-LABEL: func.func @mlp
// SHARD-SAME: tensor<8x64xf32>
// SHARD: tp.all_reduce sum %{{.*}} over @mesh ["tp"] : tensor<8x64xf32>
func.func @mlp(%x: tensor<16x64xf32>, %w1: tensor<64x256xf32> {tp.param}, %w2: tensor<256x64xf32> {tp.param}) -> tensor<16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x256xf32>) -> tensor<16x256xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<16x64xf32>, tensor<64x256xf32>) outs(%f : tensor<16x256xf32>) -> tensor<16x256xf32>
  %a = math.tanh %h : tensor<16x256xf32>
  %e2 = tensor.empty() : tensor<16x64xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %y = linalg.matmul ins(%a, %w2 : tensor<16x256xf32>, tensor<256x64xf32>) outs(%f2 : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
