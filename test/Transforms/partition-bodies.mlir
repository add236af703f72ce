// RUN: tp-opt %s --tp-propagate --tp-partition --tp-verify-partitioned | FileCheck %s
// RUN: tp-opt %s --tp-propagate --tp-partition | tp-opt --tp-verify-partitioned -o /dev/null
// Rank-dependent bodies after partitioning: index offsets, masked lookups,
// padded reductions, and sharing of a resharding between consumers.

tp.mesh @tp ["tp" = 4]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// A loop split over "tp" sees its global index: linalg.index 1 is offset by
// tp.axis_index x 16 (the local size), so a causal mask stays causal.
// CHECK-LABEL: func.func @index_offset
// CHECK: %[[RANK:.*]] = tp.axis_index @tp ["tp"] : index
// CHECK: %[[SIZE:.*]] = arith.constant 16 : index
// CHECK: %[[OFF:.*]] = arith.muli %[[RANK]], %[[SIZE]] : index
// CHECK: linalg.generic
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: %[[GJ:.*]] = arith.addi %[[J]], %[[OFF]] : index
// CHECK: arith.cmpi ugt, %[[GJ]], %[[I]] : index
func.func @index_offset(%x: tensor<8x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>})
    -> (tensor<8x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>}) {
  %e = tensor.empty() : tensor<8x64xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%in: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %future = arith.cmpi ugt, %j, %i : index
    %zero = arith.constant 0.0 : f32
    %v = arith.select %future, %zero, %in : f32
    linalg.yield %v : f32
  } -> tensor<8x64xf32>
  return %m : tensor<8x64xf32>
}
// A lookup into a table split by rows: each device subtracts its first row,
// reads row 0 for ids it does not hold and yields 0 for them; the partial
// results are all-reduced.
// CHECK-LABEL: func.func @masked_lookup
// CHECK-SAME: %[[TABLE:[a-z0-9]+]]: tensor<16x8xf32> {tp.global_shape = array<i64: 64, 8>, tp.layout = #tp.layout<@tp, ["tp", -]>, tp.param}
// CHECK: %[[RANK:.*]] = tp.axis_index @tp ["tp"] : index
// CHECK: %[[FIRST:.*]] = arith.muli %[[RANK]], %{{.*}} : index
// CHECK: linalg.generic
// CHECK: %[[ROW:.*]] = arith.index_cast
// CHECK: %[[LOCAL:.*]] = arith.subi %[[ROW]], %[[FIRST]] : index
// CHECK: %[[MINE:.*]] = arith.cmpi ult, %[[LOCAL]], %{{.*}} : index
// CHECK: %[[SAFE:.*]] = arith.select %[[MINE]], %[[LOCAL]], %{{.*}} : index
// CHECK: %[[V:.*]] = tensor.extract %[[TABLE]][%[[SAFE]], %{{.*}}] : tensor<16x8xf32>
// CHECK: %[[M:.*]] = arith.select %[[MINE]], %[[V]], %{{.*}} : f32
// CHECK: linalg.yield %[[M]] : f32
// CHECK: tp.all_reduce sum %{{.*}} over @tp ["tp"] : tensor<4x8xf32>
func.func @masked_lookup(%ids: tensor<4xi64>, %table: tensor<64x8xf32> {tp.param, tp.layout = #tp.layout<@tp, ["tp", -]>})
    -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%id: i64, %o: f32):
    %r = arith.index_cast %id : i64 to index
    %c = linalg.index 1 : index
    %v = tensor.extract %table[%r, %c] : tensor<64x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}
// 10 columns over 4 devices (blocks of 3, the last padded): the partial sum
// skips the padding by yielding the accumulator where the global column is
// 10 or more.
// CHECK-LABEL: func.func @padded_sum
// CHECK-SAME: tensor<4x3xf32> {tp.global_shape = array<i64: 4, 10>
// CHECK: linalg.generic
// CHECK: ^bb0(%{{.*}}: f32, %[[ACC:.*]]: f32):
// CHECK: %[[SUM:.*]] = arith.addf
// CHECK: %[[COL:.*]] = arith.addi
// CHECK: %[[TEN:.*]] = arith.constant 10 : index
// CHECK: %[[REAL:.*]] = arith.cmpi ult, %[[COL]], %[[TEN]] : index
// CHECK: %[[KEEP:.*]] = arith.select %[[REAL]], %[[SUM]], %[[ACC]] : f32
// CHECK: linalg.yield %[[KEEP]] : f32
func.func @padded_sum(%x: tensor<4x10xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>})
    -> (tensor<4xf32> {tp.layout = #tp.layout<@tp, [-], partial = sum("tp")>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x10xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %s : tensor<4xf32>
}
// Two consumers wanting the same layout share one all-gather, and the
// annotation disappears.
// CHECK-LABEL: func.func @shared_gather
// CHECK-NOT: tp.annotate
// CHECK: %[[G:.*]] = tp.all_gather
// CHECK-NOT: tp.all_gather
// CHECK: math.exp %[[G]]
// CHECK: math.tanh %[[G]]
func.func @shared_gather(%x: tensor<16x64xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>}) -> (tensor<16x64xf32>, tensor<16x64xf32>) {
  %a = tp.annotate %x layout <@tp, [-, "tp"]> : tensor<16x64xf32>
  %y = math.exp %a : tensor<16x64xf32>
  %z = math.tanh %a : tensor<16x64xf32>
  return %y, %z : tensor<16x64xf32>, tensor<16x64xf32>
}
