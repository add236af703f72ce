// RUN: tp-opt %s --tp-shard="tp=4 large-constant-bytes=64" | FileCheck %s
// RUN: tp-opt %s --tp-shard="tp=4 large-constant-bytes=64" | tp-opt --tp-verify-partitioned -o /dev/null
// Regression (issue 17): a weight baked in as a constant that the plan
// splits used to be retyped without slicing its value ('arith.constant' op
// failed to verify that all of {value, result} have same type). The
// program keeps the whole value and each device slices its block; splats
// are rebuilt at the local shape.

// CHECK-LABEL: func.func @constant_weight
// CHECK-DAG: %[[W:.*]] = arith.constant dense<{{.*}}> : tensor<4x8xf32>
// CHECK-DAG: %[[S:.*]] = tp.slice %[[W]] over @tp ["tp"] dim = 1 : tensor<4x8xf32> -> tensor<4x2xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %[[S]] : tensor<4x4xf32>, tensor<4x2xf32>)
func.func @constant_weight(%x: tensor<4x4xf32>) -> tensor<4x8xf32> {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [5.0, 6.0, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0], [9.0, 10.0, 11.0, 12.0, 1.5, 2.5, 3.5, 4.5], [13.0, 14.0, 15.0, 16.0, 0.5, 0.25, 0.125, 1.0]]> : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = math.tanh %y : tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}



// A dense_resource weight (how torch-mlir and TF imports bake weights in)
// is sliced the same way.
// CHECK-LABEL: func.func @resource_weight
// CHECK-DAG: %[[W:.*]] = arith.constant dense_resource<w> : tensor<4x8xf32>
// CHECK-DAG: tp.slice %[[W]] over @tp ["tp"] dim = 1 : tensor<4x8xf32> -> tensor<4x2xf32>
func.func @resource_weight(%x: tensor<4x4xf32>) -> tensor<4x8xf32> {
  %w = arith.constant dense_resource<w> : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = math.tanh %y : tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F0000004000004040000080400000A0400000C0400000E04000000041000000410000104100002041000030410000404100005041000060410000704100008041000088410000904100009841000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    }
  }
#-}
