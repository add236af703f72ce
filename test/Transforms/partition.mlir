// RUN: tp-opt %s --tp-partition --tp-verify-partitioned | FileCheck %s
// RUN: tp-opt %s --tp-partition | tp-opt --tp-verify-partitioned -o /dev/null
// Every resharding case: a function whose argument has one layout and whose
// result is wanted in another; the partitioner emits the collectives (with
// padding for uneven splits) and the function boundary keeps the global
// meaning. The second RUN re-parses the output and verifies it again.

tp.mesh @m ["tp" = 4]
tp.mesh @g ["dp" = 2, "tp" = 4]

// Partial -> replicated: an all-reduce.
// CHECK-LABEL: func.func @partial_to_replicated
// CHECK-SAME: (%[[X:.*]]: tensor<16x8xf32> {tp.global_shape = array<i64: 16, 8>, tp.layout = #tp.layout<@m, [-, -], partial = sum("tp")>})
// CHECK-SAME: -> (tensor<16x8xf32> {tp.global_shape = array<i64: 16, 8>, tp.layout = #tp.layout<@m, [-, -]>})
// CHECK-NEXT: %[[R:.*]] = tp.all_reduce sum %[[X]] over @m ["tp"] : tensor<16x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @partial_to_replicated(%x: tensor<16x8xf32> {tp.layout = #tp.layout<@m, [-, -], partial = sum("tp")>})
    -> (tensor<16x8xf32> {tp.layout = #tp.layout<@m, [-, -]>}) {
  return {tp.operand_layouts = [#tp.layout<@m, [-, -]>]} %x : tensor<16x8xf32>
}
// Split -> replicated: an all-gather; the argument is local.
// CHECK-LABEL: func.func @split_to_replicated
// CHECK-SAME: (%[[X:.*]]: tensor<16x2xf32> {tp.global_shape = array<i64: 16, 8>, tp.layout = #tp.layout<@m, [-, "tp"]>})
// CHECK-NEXT: %[[G:.*]] = tp.all_gather %[[X]] over @m ["tp"] dim = 1 : tensor<16x2xf32> -> tensor<16x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @split_to_replicated(%x: tensor<16x8xf32> {tp.layout = #tp.layout<@m, [-, "tp"]>})
    -> (tensor<16x8xf32> {tp.layout = #tp.layout<@m, [-, -]>}) {
  return {tp.operand_layouts = [#tp.layout<@m, [-, -]>]} %x : tensor<16x8xf32>
}
// Partial -> split: a reduce-scatter.
// CHECK-LABEL: func.func @partial_to_split
// CHECK-NEXT: %[[S:.*]] = tp.reduce_scatter sum %{{.*}} over @m ["tp"] dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[S]] : tensor<4x8xf32>
func.func @partial_to_split(%x: tensor<16x8xf32> {tp.layout = #tp.layout<@m, [-, -], partial = sum("tp")>})
    -> (tensor<16x8xf32> {tp.layout = #tp.layout<@m, ["tp", -]>}) {
  return {tp.operand_layouts = [#tp.layout<@m, ["tp", -]>]} %x : tensor<16x8xf32>
}
// Split on one dimension -> split on another: an all-to-all.
// CHECK-LABEL: func.func @split_to_split
// CHECK-NEXT: %[[T:.*]] = tp.all_to_all %{{.*}} over @m ["tp"] split_dim = 0 concat_dim = 1 : tensor<16x2xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[T]] : tensor<4x8xf32>
func.func @split_to_split(%x: tensor<16x8xf32> {tp.layout = #tp.layout<@m, [-, "tp"]>})
    -> (tensor<16x8xf32> {tp.layout = #tp.layout<@m, ["tp", -]>}) {
  return {tp.operand_layouts = [#tp.layout<@m, ["tp", -]>]} %x : tensor<16x8xf32>
}
// Replicated -> split: a slice, no communication.
// CHECK-LABEL: func.func @replicated_to_split
// CHECK-NEXT: %[[S:.*]] = tp.slice %{{.*}} over @m ["tp"] dim = 1 : tensor<16x8xf32> -> tensor<16x2xf32>
// CHECK-NEXT: return %[[S]] : tensor<16x2xf32>
func.func @replicated_to_split(%x: tensor<16x8xf32> {tp.layout = #tp.layout<@m, [-, -]>})
    -> (tensor<16x8xf32> {tp.layout = #tp.layout<@m, [-, "tp"]>}) {
  return {tp.operand_layouts = [#tp.layout<@m, [-, "tp"]>]} %x : tensor<16x8xf32>
}
// A partial max is reduced with max.
// CHECK-LABEL: func.func @partial_max
// CHECK-NEXT: tp.all_reduce max %{{.*}} over @m ["tp"] : tensor<16xf32>
func.func @partial_max(%x: tensor<16xf32> {tp.layout = #tp.layout<@m, [-], partial = max("tp")>})
    -> (tensor<16xf32> {tp.layout = #tp.layout<@m, [-]>}) {
  return {tp.operand_layouts = [#tp.layout<@m, [-]>]} %x : tensor<16xf32>
}
// 10 rows over 4 devices: blocks of 3, the last padded; gathering gives
// 12 rows and the padding is cut off.
// CHECK-LABEL: func.func @padded_gather
// CHECK-SAME: tensor<3x8xf32> {tp.global_shape = array<i64: 10, 8>
// CHECK-NEXT: %[[G:.*]] = tp.all_gather %{{.*}} over @m ["tp"] dim = 0 : tensor<3x8xf32> -> tensor<12x8xf32>
// CHECK-NEXT: %[[C:.*]] = tensor.extract_slice %[[G]][0, 0] [10, 8] [1, 1] : tensor<12x8xf32> to tensor<10x8xf32>
// CHECK-NEXT: return %[[C]] : tensor<10x8xf32>
func.func @padded_gather(%x: tensor<10x8xf32> {tp.layout = #tp.layout<@m, ["tp", -]>})
    -> (tensor<10x8xf32> {tp.layout = #tp.layout<@m, [-, -]>}) {
  return {tp.operand_layouts = [#tp.layout<@m, [-, -]>]} %x : tensor<10x8xf32>
}
// Splitting 10 rows pads them to 12 first.
// CHECK-LABEL: func.func @padded_slice
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0] high[2, 0]
// CHECK: tensor.yield %[[ZERO]]
// CHECK: } : tensor<10x8xf32> to tensor<12x8xf32>
// CHECK-NEXT: tp.slice %[[P]] over @m ["tp"] dim = 0 : tensor<12x8xf32> -> tensor<3x8xf32>
func.func @padded_slice(%x: tensor<10x8xf32> {tp.layout = #tp.layout<@m, [-, -]>})
    -> (tensor<10x8xf32> {tp.layout = #tp.layout<@m, ["tp", -]>}) {
  return {tp.operand_layouts = [#tp.layout<@m, ["tp", -]>]} %x : tensor<10x8xf32>
}
// A partial max is padded with -inf (the identity of max) before scattering.
// CHECK-LABEL: func.func @padded_reduce_scatter
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[P:.*]] = tensor.pad
// CHECK: tensor.yield %[[NINF]]
// CHECK: tp.reduce_scatter max %[[P]] over @m ["tp"] dim = 0 : tensor<12x8xf32> -> tensor<3x8xf32>
func.func @padded_reduce_scatter(%x: tensor<10x8xf32> {tp.layout = #tp.layout<@m, [-, -], partial = max("tp")>})
    -> (tensor<10x8xf32> {tp.layout = #tp.layout<@m, ["tp", -]>}) {
  return {tp.operand_layouts = [#tp.layout<@m, ["tp", -]>]} %x : tensor<10x8xf32>
}
// A dimension split over two axes is gathered minor axis first.
// CHECK-LABEL: func.func @two_axes
// CHECK-SAME: tensor<2x8xf32>
// CHECK-NEXT: %[[A:.*]] = tp.all_gather %{{.*}} over @g ["tp"] dim = 0 : tensor<2x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[B:.*]] = tp.all_gather %[[A]] over @g ["dp"] dim = 0 : tensor<8x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT: return %[[B]]
func.func @two_axes(%x: tensor<16x8xf32> {tp.layout = #tp.layout<@g, [["dp", "tp"], -]>})
    -> (tensor<16x8xf32> {tp.layout = #tp.layout<@g, [-, -]>}) {
  return {tp.operand_layouts = [#tp.layout<@g, [-, -]>]} %x : tensor<16x8xf32>
}
// A whole value made a partial sum: kept on the axis' first device, zeros
// on the others (no communication).
// CHECK-LABEL: func.func @whole_to_partial_sum
// CHECK: %[[I:.*]] = tp.axis_index @m ["tp"] : index
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[I]], %c0
// CHECK: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : tensor<8xf32>
// CHECK: %[[R:.*]] = arith.select %[[FIRST]], %{{.*}}, %[[ZEROS]] : tensor<8xf32>
// CHECK: return %[[R]]
func.func @whole_to_partial_sum(%x: tensor<8xf32> {tp.layout = #tp.layout<@m, [-]>})
    -> (tensor<8xf32> {tp.layout = #tp.layout<@m, [-], partial = sum("tp")>}) {
  return {tp.operand_layouts = [#tp.layout<@m, [-], partial = sum("tp")>]} %x : tensor<8xf32>
}
// A whole value is already a partial max (max is idempotent).
// CHECK-LABEL: func.func @whole_to_partial_max
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>
// CHECK-NEXT: return %[[X]]
func.func @whole_to_partial_max(%x: tensor<8xf32> {tp.layout = #tp.layout<@m, [-]>})
    -> (tensor<8xf32> {tp.layout = #tp.layout<@m, [-], partial = max("tp")>}) {
  return {tp.operand_layouts = [#tp.layout<@m, [-], partial = max("tp")>]} %x : tensor<8xf32>
}
