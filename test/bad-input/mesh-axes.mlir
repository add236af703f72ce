// Mesh axes of size 0 are rejected by the verifier; an axis of size 1 is
// valid and splits nothing: the pipeline leaves the program without a
// collective.
// RUN: tp-opt %s --split-input-file --verify-diagnostics
// RUN: tp-opt %s --split-input-file --tp-shard="mesh=m" -verify-diagnostics 2>&1 | FileCheck %s

// expected-error @below {{'tp.mesh' op axis "tp" has size 0; sizes must be at least 1}}
tp.mesh @m ["tp" = 0]

// -----

// CHECK-LABEL: func.func @one_device
// CHECK-NOT: tp.all_
// CHECK-NOT: tp.reduce_scatter
// CHECK: linalg.matmul {{.*}} -> tensor<4x16xf32>
tp.mesh @m ["tp" = 1]
func.func @one_device(%a: tensor<4x8xf32>, %w: tensor<8x16xf32> {tp.param}) -> tensor<4x16xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %0 = linalg.matmul ins(%a, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
