// RUN: tp-opt %s --tp-hoist-constants="file=%t.safetensors weight-constant-bytes=64" -verify-diagnostics
// RUN: %expect-exit 1 tp-opt %s --tp-hoist-constants 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: %expect-exit 1 tp-opt %S/hoist-constants.mlir --tp-hoist-constants="file=%t/no/such/dir/w.safetensors" 2>&1 | FileCheck %s --check-prefix=UNWRITABLE
// RUN: rm -f %t.blob.safetensors
// RUN: %expect-exit 1 tp-opt %S/../bad-input/Inputs/blob-size.mlir --tp-hoist-constants="file=%t.blob.safetensors large-constant-bytes=16" 2>&1 | FileCheck %s --check-prefix=BLOB
// RUN: test ! -e %t.blob.safetensors
// --tp-hoist-constants errors, each naming what is wrong: a weight whose
// value the module does not hold (an elided resource); a blob one byte
// short of its type (was copied into the file as it was, issue 27); no
// file; a file that cannot be written.

// BLOB: blob-size.mlir:3:8: error: tp-hoist-constants: dense_resource<w> holds 31 bytes of data, but 'tensor<8xf32>' takes 32 (8 elements of 4 bytes)

// NOFILE: error: tp-hoist-constants needs file=PATH, the safetensors file the values are written to
// UNWRITABLE: error: tp-hoist-constants: cannot write '{{.*}}/no/such/dir/w.safetensors': {{.+}}

func.func @elided(%x: tensor<16x4xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{tp-hoist-constants: dense_resource<__elided__> of type 'tensor<4x8xf32>' has no data (the file's dialect_resources section lacks it)}}
  %w = arith.constant dense_resource<__elided__> : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x4xf32>, tensor<4x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}
