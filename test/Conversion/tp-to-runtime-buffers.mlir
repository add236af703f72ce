// RUN: tp-opt %s --convert-tp-to-runtime --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --canonicalize | FileCheck %s
// After bufferization a collective reads its input in place: an argument or
// a contiguous result goes to the runtime as it is (no memref.copy, which
// on GPUs is a gpu.memcpy reading and writing the whole input once more);
// only an input that is not contiguous (a strided slice) is copied, into a
// buffer of the identity layout the runtime requires.

tp.mesh @m ["tp" = 4]

// CHECK-LABEL: func.func @argument
// CHECK-SAME: (%[[X:.*]]: memref<8x16xf32>)
// CHECK-NOT: memref.copy
// CHECK: %[[OUT:.*]] = memref.alloc() {{.*}}: memref<32x16xf32>
// CHECK-DAG: %[[UIN:.*]] = memref.cast %[[X]] : memref<8x16xf32> to memref<*xf32>
// CHECK-DAG: %[[UOUT:.*]] = memref.cast %[[OUT]] : memref<32x16xf32> to memref<*xf32>
// CHECK: call @tprt_mlir_all_gather_f32(%{{.*}}, %{{.*}}, %[[UIN]], %[[UOUT]])
// CHECK-NOT: memref.copy
// CHECK: return %[[OUT]]
func.func @argument(%x: tensor<8x16xf32>) -> tensor<32x16xf32> {
  %g = tp.all_gather %x over @m ["tp"] dim = 0 : tensor<8x16xf32> -> tensor<32x16xf32>
  return %g : tensor<32x16xf32>
}

// The result of an elementwise op is read where it was written.
// CHECK-LABEL: func.func @computed
// CHECK: %[[H:.*]] = memref.alloc() {{.*}}: memref<8x16xf32>
// CHECK: linalg.generic {{.*}} outs(%[[H]] : memref<8x16xf32>)
// CHECK-NOT: memref.copy
// CHECK: %[[UH:.*]] = memref.cast %[[H]] : memref<8x16xf32> to memref<*xf32>
// CHECK: call @tprt_mlir_reduce_scatter_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[UH]], %{{.*}})
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @computed(%x: tensor<8x16xf32>) -> tensor<2x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %d = arith.addf %in, %in : f32
    linalg.yield %d : f32
  } -> tensor<8x16xf32>
  %s = tp.reduce_scatter sum %h over @m ["tp"] dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  return %s : tensor<2x16xf32>
}

// A strided slice is copied into a contiguous buffer first, and only it.
// CHECK-LABEL: func.func @strided
// CHECK-SAME: (%[[X:.*]]: memref<8x16xf32>)
// CHECK: %[[VIEW:.*]] = memref.subview %[[X]][0, 0] [8, 8] [1, 2]
// CHECK: %[[COPY:.*]] = memref.alloc() {{.*}}: memref<8x8xf32>
// CHECK: memref.copy %[[VIEW]], %[[COPY]]
// CHECK: %[[UC:.*]] = memref.cast %[[COPY]] : memref<8x8xf32> to memref<*xf32>
// CHECK: call @tprt_mlir_all_reduce_f32(%{{.*}}, %{{.*}}, %[[UC]], %{{.*}})
// CHECK-NOT: memref.copy
// CHECK: return
func.func @strided(%x: tensor<8x16xf32>) -> tensor<8x8xf32> {
  %v = tensor.extract_slice %x[0, 0] [8, 8] [1, 2] : tensor<8x16xf32> to tensor<8x8xf32>
  %r = tp.all_reduce sum %v over @m ["tp"] : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
