// RUN: tp-opt %s | tp-opt | FileCheck %s
// RUN: tp-opt %s --mlir-print-op-generic | tp-opt | FileCheck %s
// Every tp op round-trips through its custom and its generic form.

// CHECK: tp.mesh @m ["tp" = 4]
tp.mesh @m ["tp" = 4]
// CHECK: tp.mesh @grid ["dp" = 2, "tp" = 4]
tp.mesh @grid ["dp" = 2, "tp" = 4]
// A degenerate axis of size 1 is legal (nothing is split along it).
// CHECK: tp.mesh @single ["tp" = 1]
tp.mesh @single ["tp" = 1]

// The annotate op pins a layout on a value with its global shape.
// CHECK-LABEL: func.func @annotate_column_split
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
func.func @annotate_column_split(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: %[[A:.*]] = tp.annotate %[[X]] layout <@m, [-, "tp"]> : tensor<8x16xf32>
  %0 = tp.annotate %x layout <@m, [-, "tp"]> : tensor<8x16xf32>
  // CHECK: tp.annotate %[[A]] layout <@m, [-, -], partial = sum("tp")> : tensor<8x16xf32>
  %1 = tp.annotate %0 layout <@m, [-, -], partial = sum("tp")> : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// Annotations on a 2-D mesh, including a dimension split over two axes and
// a dynamic dimension left whole.
// CHECK-LABEL: func.func @annotate_2d_mesh
func.func @annotate_2d_mesh(%x: tensor<16x?xf32>) -> tensor<16x?xf32> {
  // CHECK: tp.annotate %{{.*}} layout <@grid, {{\[\[}}"dp", "tp"], -]> : tensor<16x?xf32>
  %0 = tp.annotate %x layout <@grid, [["dp", "tp"], -]> : tensor<16x?xf32>
  // CHECK: tp.annotate %{{.*}} layout <@grid, ["dp", -], partial = max("tp")> : tensor<16x?xf32>
  %1 = tp.annotate %0 layout <@grid, ["dp", -], partial = max("tp")> : tensor<16x?xf32>
  return %1 : tensor<16x?xf32>
}

// A partial scalar (rank 0) with a min combiner.
// CHECK-LABEL: func.func @annotate_scalar
func.func @annotate_scalar(%x: tensor<f32>) -> tensor<f32> {
  // CHECK: tp.annotate %{{.*}} layout <@m, [], partial = min("tp")> : tensor<f32>
  %0 = tp.annotate %x layout <@m, [], partial = min("tp")> : tensor<f32>
  return %0 : tensor<f32>
}

// All three reduction kinds of all_reduce.
// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[X:.*]]: tensor<16x1024xf32>)
func.func @all_reduce(%x: tensor<16x1024xf32>) -> (tensor<16x1024xf32>, tensor<16x1024xf32>, tensor<16x1024xf32>) {
  // CHECK: tp.all_reduce sum %[[X]] over @m ["tp"] : tensor<16x1024xf32>
  %0 = tp.all_reduce sum %x over @m ["tp"] : tensor<16x1024xf32>
  // CHECK: tp.all_reduce max %[[X]] over @m ["tp"] : tensor<16x1024xf32>
  %1 = tp.all_reduce max %x over @m ["tp"] : tensor<16x1024xf32>
  // CHECK: tp.all_reduce min %[[X]] over @grid ["dp", "tp"] : tensor<16x1024xf32>
  %2 = tp.all_reduce min %x over @grid ["dp", "tp"] : tensor<16x1024xf32>
  return %0, %1, %2 : tensor<16x1024xf32>, tensor<16x1024xf32>, tensor<16x1024xf32>
}

// all_gather multiplies the gathered dimension by the group size.
// CHECK-LABEL: func.func @all_gather
func.func @all_gather(%x: tensor<16x256xbf16>) -> (tensor<16x1024xbf16>, tensor<128x256xbf16>) {
  // CHECK: tp.all_gather %{{.*}} over @m ["tp"] dim = 1 : tensor<16x256xbf16> -> tensor<16x1024xbf16>
  %0 = tp.all_gather %x over @m ["tp"] dim = 1 : tensor<16x256xbf16> -> tensor<16x1024xbf16>
  // CHECK: tp.all_gather %{{.*}} over @grid ["dp", "tp"] dim = 0 : tensor<16x256xbf16> -> tensor<128x256xbf16>
  %1 = tp.all_gather %x over @grid ["dp", "tp"] dim = 0 : tensor<16x256xbf16> -> tensor<128x256xbf16>
  return %0, %1 : tensor<16x1024xbf16>, tensor<128x256xbf16>
}

// reduce_scatter divides the scattered dimension by the group size.
// CHECK-LABEL: func.func @reduce_scatter
func.func @reduce_scatter(%x: tensor<16x1024xf16>) -> (tensor<4x1024xf16>, tensor<16x512xf16>) {
  // CHECK: tp.reduce_scatter sum %{{.*}} over @m ["tp"] dim = 0 : tensor<16x1024xf16> -> tensor<4x1024xf16>
  %0 = tp.reduce_scatter sum %x over @m ["tp"] dim = 0 : tensor<16x1024xf16> -> tensor<4x1024xf16>
  // CHECK: tp.reduce_scatter max %{{.*}} over @grid ["dp"] dim = 1 : tensor<16x1024xf16> -> tensor<16x512xf16>
  %1 = tp.reduce_scatter max %x over @grid ["dp"] dim = 1 : tensor<16x1024xf16> -> tensor<16x512xf16>
  return %0, %1 : tensor<4x1024xf16>, tensor<16x512xf16>
}

// all_to_all moves the split from concat_dim to split_dim.
// CHECK-LABEL: func.func @all_to_all
func.func @all_to_all(%x: tensor<4x1024xf32>) -> tensor<16x256xf32> {
  // CHECK: tp.all_to_all %{{.*}} over @m ["tp"] split_dim = 1 concat_dim = 0 : tensor<4x1024xf32> -> tensor<16x256xf32>
  %0 = tp.all_to_all %x over @m ["tp"] split_dim = 1 concat_dim = 0 : tensor<4x1024xf32> -> tensor<16x256xf32>
  return %0 : tensor<16x256xf32>
}

// slice keeps this device's block without communication.
// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<16x1024xf32>) -> (tensor<16x256xf32>, tensor<16x1024xf32>) {
  // CHECK: tp.slice %{{.*}} over @m ["tp"] dim = 1 : tensor<16x1024xf32> -> tensor<16x256xf32>
  %0 = tp.slice %x over @m ["tp"] dim = 1 : tensor<16x1024xf32> -> tensor<16x256xf32>
  // A size-1 axis leaves the shape as it is.
  // CHECK: tp.slice %{{.*}} over @single ["tp"] dim = 0 : tensor<16x1024xf32> -> tensor<16x1024xf32>
  %1 = tp.slice %x over @single ["tp"] dim = 0 : tensor<16x1024xf32> -> tensor<16x1024xf32>
  return %0, %1 : tensor<16x256xf32>, tensor<16x1024xf32>
}

// Collectives accept dynamic sizes in the dimensions they do not touch.
// CHECK-LABEL: func.func @dynamic_untouched_dims
func.func @dynamic_untouched_dims(%x: tensor<?x256xf32>) -> tensor<?x1024xf32> {
  // CHECK: tp.all_gather %{{.*}} over @m ["tp"] dim = 1 : tensor<?x256xf32> -> tensor<?x1024xf32>
  %0 = tp.all_gather %x over @m ["tp"] dim = 1 : tensor<?x256xf32> -> tensor<?x1024xf32>
  return %0 : tensor<?x1024xf32>
}

// axis_index yields this device's (linearised) coordinate.
// CHECK-LABEL: func.func @axis_index
func.func @axis_index() -> (index, index) {
  // CHECK: tp.axis_index @m ["tp"] : index
  %0 = tp.axis_index @m ["tp"] : index
  // CHECK: tp.axis_index @grid ["dp", "tp"] : index
  %1 = tp.axis_index @grid ["dp", "tp"] : index
  return %0, %1 : index, index
}
