// RUN: tp-opt %s --tp-linalg-to-gpu -split-input-file -verify-diagnostics
// What the kernel lowering cannot take, with a located error. (A host
// memref.load, a top-level tensor.extract, is lowered: lower-gpu-extract.mlir.)

func.func @dynamic(%x: memref<?x64xf32>, %y: memref<?x64xf32>) {
  // expected-error @below {{'linalg.generic' op has dynamic shapes: the GPU lowering needs static ones}}
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x64xf32>) outs(%y : memref<?x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}

// -----

func.func @host_store(%x: memref<16xf32>, %i: index, %v: f32) {
  // expected-error @below {{'memref.store' op accesses memory on the host, where every buffer is a device buffer}}
  memref.store %v, %x[%i] : memref<16xf32>
  return
}

// -----

func.func @tensors(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  // expected-error @below {{'linalg.generic' op is not bufferized: the GPU lowering runs after bufferization}}
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}
