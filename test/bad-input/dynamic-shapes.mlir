// RUN: tp-opt %s --split-input-file --tp-shard=tp=2 --verify-diagnostics=only-expected

// expected-error @below {{tp-partition: argument #0 of 'dynamic_arg' has the dynamic shape 'tensor<?x8xf32>'; tp-opt plans static shapes only}}
func.func @dynamic_arg(%a: tensor<?x8xf32>, %w: tensor<8x16xf32> {tp.param}) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %a, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%d) : tensor<?x16xf32>
  %0 = linalg.matmul ins(%a, %w : tensor<?x8xf32>, tensor<8x16xf32>) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @dynamic_value(%a: tensor<4x8xf32>, %n: index) -> tensor<4x8xf32> {
  // expected-error @below {{tp-partition: result #0 has the dynamic shape 'tensor<?x8xf32>'; tp-opt plans static shapes only}}
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %c = tensor.cast %e : tensor<?x8xf32> to tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----

// expected-error @below {{tp-partition: argument #0 of 'unranked' has the dynamic shape 'tensor<*xf32>'}}
func.func @unranked(%a: tensor<*xf32>) -> tensor<*xf32> {
  return %a : tensor<*xf32>
}
