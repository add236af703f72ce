// RUN: tp-opt %s --convert-tp-to-runtime | FileCheck %s
// Each collective becomes a call of the runtime entry point for its element
// type, on a read-only buffer of its input (no copy: the runtime never
// writes a collective's input) and a new result buffer; mesh axes
// become a bit mask over the mesh's axes; the mesh and the tp.* boundary
// attributes are gone.

// CHECK-NOT: tp.mesh
tp.mesh @m ["dp" = 2, "tp" = 4]

// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK-NOT: alloc_tensor
// CHECK: %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<8x16xf32> to memref<8x16xf32>
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<8x16xf32>
// CHECK: %[[UIN:.*]] = memref.cast %[[IN]] : memref<8x16xf32> to memref<*xf32>
// CHECK: %[[UOUT:.*]] = memref.cast %[[OUT]] : memref<8x16xf32> to memref<*xf32>
// CHECK: %[[KIND:.*]] = arith.constant 1 : i32
// CHECK: %[[AXES:.*]] = arith.constant 2 : i64
// CHECK: call @tprt_mlir_all_reduce_f32(%[[KIND]], %[[AXES]], %[[UIN]], %[[UOUT]]) : (i32, i64, memref<*xf32>, memref<*xf32>) -> ()
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<8x16xf32> to tensor<8x16xf32>
// CHECK: return %[[R]]
func.func @all_reduce(%x: tensor<8x16xf32> {tp.layout = #tp.layout<@m, [-, -], partial = max("tp")>, tp.global_shape = array<i64: 8, 16>})
    -> (tensor<8x16xf32> {tp.layout = #tp.layout<@m, [-, -]>, tp.global_shape = array<i64: 8, 16>}) {
  %r = tp.all_reduce max %x over @m ["tp"] : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// Dimensions and kinds are passed as constants; both axes give mask 3.
// CHECK-LABEL: func.func @others
// CHECK: %[[D1:.*]] = arith.constant 1 : i64
// CHECK: %[[M3:.*]] = arith.constant 3 : i64
// CHECK: call @tprt_mlir_all_gather_bf16(%[[D1]], %[[M3]], %{{.*}}, %{{.*}}) : (i64, i64, memref<*xbf16>, memref<*xbf16>) -> ()
// CHECK: call @tprt_mlir_reduce_scatter_bf16(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i64, i64, memref<*xbf16>, memref<*xbf16>) -> ()
// CHECK: call @tprt_mlir_all_to_all_bf16(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i64, memref<*xbf16>, memref<*xbf16>) -> ()
// CHECK: call @tprt_mlir_slice_bf16
// CHECK: %[[MASK:.*]] = arith.constant 2 : i64
// CHECK: %[[I:.*]] = call @tprt_mlir_axis_index(%[[MASK]]) : (i64) -> i64
// CHECK: arith.index_cast %[[I]] : i64 to index
func.func @others(%x: tensor<2x16xbf16>) -> (tensor<2x128xbf16>, tensor<1x16xbf16>, tensor<8x4xbf16>, tensor<2x4xbf16>, index) {
  %g = tp.all_gather %x over @m ["dp", "tp"] dim = 1 : tensor<2x16xbf16> -> tensor<2x128xbf16>
  %s = tp.reduce_scatter sum %x over @m ["dp"] dim = 0 : tensor<2x16xbf16> -> tensor<1x16xbf16>
  %a = tp.all_to_all %x over @m ["tp"] split_dim = 1 concat_dim = 0 : tensor<2x16xbf16> -> tensor<8x4xbf16>
  %l = tp.slice %x over @m ["tp"] dim = 1 : tensor<2x16xbf16> -> tensor<2x4xbf16>
  %i = tp.axis_index @m ["tp"] : index
  return %g, %s, %a, %l, %i : tensor<2x128xbf16>, tensor<1x16xbf16>, tensor<8x4xbf16>, tensor<2x4xbf16>, index
}

// Integers narrower than 32 bits travel as i32: i8 sign-extended, i1
// zero-extended (a bool), each truncated back after the call.
// CHECK-LABEL: func.func @narrow_integers
// CHECK-SAME: (%[[B:.*]]: tensor<8xi1>, %[[C:.*]]: tensor<2x4xi8>)
// CHECK: %[[BW:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<8xi1>)
// CHECK: arith.extui %{{.*}} : i1 to i32
// CHECK: call @tprt_mlir_all_reduce_i32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i64, memref<*xi32>, memref<*xi32>) -> ()
// CHECK: %[[BR:.*]] = bufferization.to_tensor %{{.*}} : memref<8xi32> to tensor<8xi32>
// CHECK: %[[BN:.*]] = linalg.generic {{.*}} ins(%[[BR]] : tensor<8xi32>)
// CHECK: arith.trunci %{{.*}} : i32 to i1
// CHECK: linalg.generic {{.*}} ins(%[[C]] : tensor<2x4xi8>)
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: call @tprt_mlir_all_gather_i32
// CHECK: bufferization.to_tensor %{{.*}} : memref<2x16xi32> to tensor<2x16xi32>
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK: return %[[BN]], %{{.*}} : tensor<8xi1>, tensor<2x16xi8>
func.func @narrow_integers(%b: tensor<8xi1>, %c: tensor<2x4xi8>) -> (tensor<8xi1>, tensor<2x16xi8>) {
  %r = tp.all_reduce sum %b over @m ["tp"] : tensor<8xi1>
  %g = tp.all_gather %c over @m ["tp"] dim = 1 : tensor<2x4xi8> -> tensor<2x16xi8>
  return %r, %g : tensor<8xi1>, tensor<2x16xi8>
}

// The runtime entry points are declared once each.
// CHECK-DAG: func.func private @tprt_mlir_all_reduce_f32(i32, i64, memref<*xf32>, memref<*xf32>)
// CHECK-DAG: func.func private @tprt_mlir_axis_index(i64) -> i64
