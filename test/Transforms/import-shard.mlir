// RUN: tp-opt %s --split-input-file --tp-import-shard | FileCheck %s
// RUN: tp-opt %s --split-input-file --tp-shard | FileCheck %s --check-prefix=SHARD
// Upstream shard annotations become tp pins (--tp-import-shard), and
// --tp-shard, which runs the import first, shards the program as the
// annotations say. Without them the planner would keep these plain (non
// tp.param) arguments replicated and insert no collective at all.

// A Megatron MLP annotated in upstream syntax: W1 column-split, W2 row-split,
// the output replicated.
// CHECK-LABEL: tp.mesh @grid ["axis0" = 4]
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: %{{.*}}: tensor<8x16xf32>,
// CHECK-SAME: %{{.*}}: tensor<16x64xf32> {tp.layout = #tp.layout<@grid, [-, "axis0"]>}
// CHECK-SAME: %{{.*}}: tensor<64x16xf32> {tp.layout = #tp.layout<@grid, ["axis0", -]>})
// CHECK-SAME: -> (tensor<8x16xf32> {tp.layout = #tp.layout<@grid, [-, -]>})
// CHECK-NOT: shard.
// CHECK-NOT: tp.annotate
// CHECK: return

// SHARD-LABEL: tp.mesh @grid ["axis0" = 4]
// SHARD-LABEL: func.func @mlp(
// SHARD-SAME: %{{.*}}: tensor<8x16xf32> {tp.global_shape = array<i64: 8, 16>, tp.layout = #tp.layout<@grid, [-, -]>}
// SHARD-SAME: %{{.*}}: tensor<16x16xf32> {tp.global_shape = array<i64: 16, 64>, tp.layout = #tp.layout<@grid, [-, "axis0"]>}
// SHARD-SAME: %{{.*}}: tensor<16x16xf32> {tp.global_shape = array<i64: 64, 16>, tp.layout = #tp.layout<@grid, ["axis0", -]>}
// SHARD-NOT: tp.all_gather
// SHARD-NOT: tp.slice
// SHARD: linalg.matmul {{.*}} -> tensor<8x16xf32>
// SHARD: math.tanh
// SHARD: %[[Y:.*]] = linalg.matmul {{.*}} -> tensor<8x16xf32>
// SHARD-NEXT: %[[R:.*]] = tp.all_reduce sum %[[Y]] over @grid ["axis0"] : tensor<8x16xf32>
// SHARD-NEXT: return %[[R]]
// SHARD-NOT: shard.
#id = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid(shape = 4)
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x64xf32>, %w2: tensor<64x16xf32>) -> tensor<8x16xf32> {
  %s1 = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %w1s = shard.shard %w1 to %s1 : tensor<16x64xf32>
  %s2 = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %w2s = shard.shard %w2 to %s2 : tensor<64x16xf32>
  %c0 = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %z1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1s : tensor<8x16xf32>, tensor<16x64xf32>) outs(%z1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<8x64xf32>) outs(%e1 : tensor<8x64xf32>) {
  ^bb0(%a: f32, %b: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%g, %w2s : tensor<8x64xf32>, tensor<64x16xf32>) outs(%z2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %sr = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %ys = shard.shard %y to %sr : tensor<8x16xf32>
  return %ys : tensor<8x16xf32>
}

// -----

// A 2-D grid: axes named by position; a dimension split over two axes; inner
// annotations (of a result, and for users) become tp.annotate pins; an
// annotated value that is returned and also used gives the function result
// its layout and keeps a pin for the other use.
// CHECK-LABEL: tp.mesh @g2 ["axis0" = 2, "axis1" = 4]
// CHECK-LABEL: func.func @inner(
// CHECK-SAME: %[[X:.*]]: tensor<16x8xf32> {tp.layout = #tp.layout<@g2, {{\[}}["axis0", "axis1"], -]>})
// CHECK-SAME: -> (tensor<16x8xf32> {tp.layout = #tp.layout<@g2, [-, "axis1"]>}, tensor<16x8xf32>)
// CHECK-NEXT: %[[U:.*]] = tp.annotate %[[X]] layout <@g2, {{\[}}["axis0", "axis1"], -]> : tensor<16x8xf32>
// CHECK-NEXT: %[[A:.*]] = arith.addf %[[U]], %[[U]]
// CHECK-NEXT: %[[AU:.*]] = tp.annotate %[[A]] layout <@g2, ["axis0", -]> : tensor<16x8xf32>
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[AU]], %[[AU]]
// CHECK-NEXT: %[[MP:.*]] = tp.annotate %[[M]] layout <@g2, [-, "axis1"]> : tensor<16x8xf32>
// CHECK-NEXT: %[[N:.*]] = arith.negf %[[MP]]
// CHECK-NEXT: return %[[M]], %[[N]]
// SHARD-LABEL: func.func @inner(
// SHARD-SAME: tensor<2x8xf32> {tp.global_shape = array<i64: 16, 8>, tp.layout = #tp.layout<@g2, {{\[}}["axis0", "axis1"], -]>}
// SHARD-SAME: -> (tensor<16x2xf32> {tp.global_shape = array<i64: 16, 8>, tp.layout = #tp.layout<@g2, [-, "axis1"]>}
// SHARD: arith.addf {{.*}} : tensor<8x8xf32>
// SHARD: arith.mulf {{.*}} : tensor<16x2xf32>
shard.grid @g2(shape = 2x4)
func.func @inner(%x: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  %s0 = shard.sharding @g2 split_axes = [[0, 1]] : !shard.sharding
  %xs = shard.shard %x to %s0 : tensor<16x8xf32>
  %xu = shard.shard %xs to %s0 annotate_for_users : tensor<16x8xf32>
  %a = arith.addf %xu, %xu : tensor<16x8xf32>
  %s1 = shard.sharding @g2 split_axes = [[0]] : !shard.sharding
  %au = shard.shard %a to %s1 annotate_for_users : tensor<16x8xf32>
  %m = arith.mulf %au, %au : tensor<16x8xf32>
  %s2 = shard.sharding @g2 split_axes = [[], [1]] : !shard.sharding
  %ms = shard.shard %m to %s2 : tensor<16x8xf32>
  %n = arith.negf %ms : tensor<16x8xf32>
  return %ms, %n : tensor<16x8xf32>, tensor<16x8xf32>
}

// -----

// No shard op: unchanged.
// CHECK-LABEL: tp.mesh @m ["tp" = 2]
// CHECK-LABEL: func.func @plain(%{{.*}}: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return
tp.mesh @m ["tp" = 2]
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
