// A top-level tensor.extract (after bufferization a memref.load on the
// host, of a device buffer) is lowered: a one-thread kernel copies the
// element into a one-element device buffer, gpu.memcpy brings it into a
// host alloca, and the host reads it there, with a remark (it waits for
// the stream: the runtime's mgpuMemcpy into host memory synchronizes,
// test/runtime/cuda-mock.test). The element then reaches a later kernel as
// an argument, and a function result.
// RUN: tp-opt %s --tp-linalg-to-gpu --verify-diagnostics | FileCheck %s --check-prefix=KERNEL
// The same on tensors through the whole pipeline:
// lower-gpu-extract-pipeline.mlir.

// KERNEL-LABEL: func.func @host_load
// KERNEL: %[[DEV:.*]] = gpu.alloc () : memref<1xf32>
// KERNEL: gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c1{{[_0-9]*}}, %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c1{{[_0-9]*}}, %{{.*}})
// KERNEL: %[[V:.*]] = memref.load %arg0[%arg1] : memref<16xf32>
// KERNEL: memref.store %[[V]], %[[DEV]][%{{.*}}] : memref<1xf32>
// KERNEL: gpu.terminator
// KERNEL: %[[HOST:.*]] = memref.alloca() : memref<1xf32>
// KERNEL: gpu.memcpy %[[HOST]], %[[DEV]] : memref<1xf32>, memref<1xf32>
// KERNEL: %[[R:.*]] = memref.load %[[HOST]][%{{.*}}] : memref<1xf32>
// KERNEL: gpu.dealloc %[[DEV]] : memref<1xf32>
// KERNEL: return %[[R]] : f32
func.func @host_load(%x: memref<16xf32>, %i: index) -> f32 {
  // expected-remark @below {{reads one element of a device buffer on the host: a one-thread kernel and a device-to-host copy, which waits for the stream}}
  %v = memref.load %x[%i] : memref<16xf32>
  return %v : f32
}

