// RUN: tp-opt %s --tp-hoist-constants="file=%t.safetensors weight-constant-bytes=64" -verify-diagnostics
// RUN: %expect-exit 1 tp-opt %s --tp-hoist-constants 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: %expect-exit 1 tp-opt %s --tp-hoist-constants="file=%t/no/such/dir/w.safetensors" 2>&1 | FileCheck %s --check-prefix=UNWRITABLE
// --tp-hoist-constants errors, each naming what is wrong: a weight whose
// value the module does not hold (an elided resource); no file; a file
// that cannot be written.

// NOFILE: error: tp-hoist-constants needs file=PATH, the safetensors file the values are written to
// UNWRITABLE: error: tp-hoist-constants: cannot write '{{.*}}/no/such/dir/w.safetensors': {{.+}}

func.func @elided(%x: tensor<16x4xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{tp-hoist-constants: cannot write the value of this 'tensor<4x8xf32>' constant to a safetensors file (its data is elided or packed)}}
  %w = arith.constant dense_resource<__elided__> : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x4xf32>, tensor<4x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}
