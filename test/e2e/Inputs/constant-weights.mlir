// A two-layer MLP whose weights are baked in as constants (as TF-derived
// and torch-mlir default imports write them). Used by run-constant-weights.
func.func @mlp(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %w1 = arith.constant dense<[[0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8], [0.5, -0.6, 0.7, 0.8, 0.1, 0.2, 0.3, -0.4], [0.9, 0.1, -0.11, 0.12, 0.15, 0.25, -0.35, 0.45], [0.13, 0.14, 0.15, -0.16, 0.5, 0.25, 0.125, 1.0]]> : tensor<4x8xf32>
  %w2 = arith.constant dense<[[0.3, -0.1, 0.2, 0.7], [0.5, 0.4, -0.3, 0.2], [0.1, 0.9, 0.8, -0.6], [-0.2, 0.3, 0.4, 0.5], [0.6, -0.7, 0.1, 0.2], [0.25, 0.35, -0.45, 0.55], [0.05, 0.15, 0.25, -0.35], [0.9, -0.8, 0.7, 0.6]]> : tensor<8x4xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<4x4xf32>, tensor<4x8xf32>) outs(%f1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = math.tanh %h : tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%a, %w2 : tensor<4x8xf32>, tensor<8x4xf32>) outs(%f2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
