// A top-level tensor.extract through the whole of tp-lower-gpu (see
// lower-gpu-extract.mlir for the kernel lowering alone).
// RUN: tp-opt %s --tp-lower-gpu="chip=sm_90 format=isa stop-after=kernels" 2>&1 | FileCheck %s --check-prefix=OUTLINED
// RUN: tp-opt %s --tp-lower-gpu="chip=sm_90 format=isa" -o %t.llvm.mlir
// RUN: FileCheck %s --check-prefix=LLVM < %t.llvm.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.llvm.mlir -o /dev/null
// On tensors through the whole pipeline: x² computed by a kernel, its
// element 3 extracted on the host, then added to every element of y by a
// second kernel; the element is also returned.
// OUTLINED: remark: reads one element of a device buffer on the host
// OUTLINED-LABEL: func.func @forward
// OUTLINED: gpu.launch_func @tp_kernels::@[[SQ:forward_kernel]] blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
// OUTLINED: %[[DEV:.*]] = gpu.alloc () : memref<1xf32>
// OUTLINED: gpu.launch_func @tp_kernels::@[[ONE:forward_kernel_[0-9]+]] blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%{{.*}} : memref<16xf32>, %[[DEV]] : memref<1xf32>)
// OUTLINED: %[[HOST:.*]] = memref.alloca() : memref<1xf32>
// OUTLINED: gpu.memcpy %[[HOST]], %[[DEV]]
// OUTLINED: %[[S:.*]] = memref.load %[[HOST]]
// OUTLINED: gpu.launch_func @tp_kernels::@{{forward_kernel_[0-9]+}} {{.*}} args(%{{.*}} : memref<16xf32>, %[[S]] : f32, %{{.*}} : memref<16xf32>)
// OUTLINED: return %[[S]] : f32
// OUTLINED: gpu.func @[[ONE]](%[[SRC:.*]]: memref<16xf32>, %[[DST:.*]]: memref<1xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>, known_grid_size = array<i32: 1, 1, 1>}
// OUTLINED: %[[E:.*]] = memref.load %[[SRC]][%c3] : memref<16xf32>
// OUTLINED: memref.store %[[E]], %[[DST]][%c0] : memref<1xf32>

// The host code: the copy into the alloca, then the host load.
// LLVM: llvm.func @forward(
// LLVM: llvm.alloca
// LLVM: llvm.call @mgpuMemcpy(
// LLVM: %[[S:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// LLVM: gpu.launch_func <%{{.*}} : !llvm.ptr> @tp_kernels::@{{.*}} args({{.*}}, %[[S]] : f32,
// LLVM: gpu.binary @tp_kernels
func.func @forward(%x: tensor<16xf32>, %y: tensor<16xf32>) -> (tensor<16xf32>, f32) {
  %c3 = arith.constant 3 : index
  %e = tensor.empty() : tensor<16xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<16xf32>
  %s = tensor.extract %sq[%c3] : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%y : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %s : f32
    linalg.yield %a : f32
  } -> tensor<16xf32>
  return %r, %s : tensor<16xf32>, f32
}
