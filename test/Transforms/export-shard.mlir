// RUN: tp-opt %s --split-input-file --tp-propagate --tp-export-shard > %t.shard
// RUN: FileCheck %s --check-prefix=EXPORT < %t.shard
// Upstream shard-partition accepts the exported plan and partitions it with
// the same collectives as tp-opt's own --tp-shard.
// RUN: mlir-opt %t.shard --split-input-file \
// RUN:   --pass-pipeline="builtin.module(func.func(shard-partition))" > %t.upstream
// RUN: FileCheck %s --check-prefix=UPSTREAM < %t.upstream
// RUN: tp-opt %s --split-input-file --tp-shard > %t.tp
// RUN: FileCheck %s --check-prefix=TP < %t.tp
// The collective kinds, in program order, of both partitioned programs.
// RUN: grep -o -E 'tp\.(all_reduce|all_gather|slice|reduce_scatter|all_to_all) ' %t.tp \
// RUN:   | sed -e 's/^tp\.//' -e 's/ $//' -e 's/^slice$/all_slice/' > %t.tp.kinds
// RUN: grep -o -E 'shard\.(all_reduce|all_gather|all_slice|reduce_scatter|all_to_all) ' %t.upstream \
// RUN:   | sed -e 's/^shard\.//' -e 's/ $//' > %t.upstream.kinds
// RUN: diff %t.tp.kinds %t.upstream.kinds
// RUN: FileCheck %s --check-prefix=KINDS < %t.upstream.kinds
// One all-reduce per MLP (column-split W1, row-split W2), nothing else.
// KINDS: {{^}}all_reduce{{$}}
// KINDS-NEXT: {{^}}all_reduce{{$}}
// KINDS-NOT: {{.}}

// A Megatron MLP on a 1-D mesh: the planner splits W1 by columns and W2 by
// rows.
// EXPORT-LABEL: shard.grid @tp(shape = 4)
// EXPORT-LABEL: func.func @mlp(
// EXPORT-SAME: %[[X:[^:]*]]: tensor<8x16xf32>, %[[W1:[^:]*]]: tensor<16x64xf32>, %[[W2:[^:]*]]: tensor<64x16xf32>) -> tensor<8x16xf32> {
// EXPORT-NEXT: %[[SX:.*]] = shard.sharding @tp split_axes = {{\[\[\]\]}} : !shard.sharding
// EXPORT-NEXT: %[[AX:.*]] = shard.shard %[[X]] to %[[SX]] : tensor<8x16xf32>
// EXPORT-NEXT: %[[S1:.*]] = shard.sharding @tp split_axes = {{\[\[\], \[0\]\]}} : !shard.sharding
// EXPORT-NEXT: %[[A1:.*]] = shard.shard %[[W1]] to %[[S1]] : tensor<16x64xf32>
// EXPORT-NEXT: %[[S2:.*]] = shard.sharding @tp split_axes = {{\[\[0\]\]}} : !shard.sharding
// EXPORT-NEXT: %[[A2:.*]] = shard.shard %[[W2]] to %[[S2]] : tensor<64x16xf32>
// EXPORT: %[[U1:.*]] = shard.shard %[[A1]] to %{{.*}} annotate_for_users : tensor<16x64xf32>
// EXPORT: %[[H:.*]] = linalg.matmul ins(%{{.*}}, %[[U1]] : tensor<8x16xf32>, tensor<16x64xf32>)
// EXPORT-NEXT: %[[SH:.*]] = shard.sharding @tp split_axes = {{\[\[\], \[0\]\]}} : !shard.sharding
// EXPORT-NEXT: shard.shard %[[H]] to %[[SH]] : tensor<8x64xf32>
// EXPORT: %[[U2:.*]] = shard.shard %[[A2]] to %{{.*}} annotate_for_users : tensor<64x16xf32>
// EXPORT: %[[Y:.*]] = linalg.matmul ins(%{{.*}}, %[[U2]] : tensor<8x64xf32>, tensor<64x16xf32>)
// EXPORT-NEXT: %[[SY:.*]] = shard.sharding @tp split_axes = {{\[\[\]\]}} : !shard.sharding
// EXPORT-NEXT: shard.shard %[[Y]] to %[[SY]] : tensor<8x16xf32>
// EXPORT: return
// EXPORT-NOT: tp.

// UPSTREAM-LABEL: shard.grid @tp(shape = 4)
// UPSTREAM-LABEL: func.func @mlp(%{{.*}}: tensor<8x16xf32>, %{{.*}}: tensor<16x16xf32>, %{{.*}}: tensor<16x16xf32>) -> tensor<8x16xf32>
// UPSTREAM: linalg.matmul {{.*}} -> tensor<8x16xf32>
// UPSTREAM: math.tanh
// UPSTREAM: %[[Y:.*]] = linalg.matmul {{.*}} -> tensor<8x16xf32>
// UPSTREAM-NEXT: %[[R:.*]] = shard.all_reduce %[[Y]] on @tp grid_axes = [0] : tensor<8x16xf32> -> tensor<8x16xf32>
// UPSTREAM-NEXT: return %[[R]]

// TP-LABEL: func.func @mlp(
// TP: math.tanh
// TP: %[[Y:.*]] = linalg.matmul {{.*}} -> tensor<8x16xf32>
// TP-NEXT: %[[R:.*]] = tp.all_reduce sum %[[Y]] over @tp ["tp"] : tensor<8x16xf32>
// TP-NEXT: return %[[R]]
#id = affine_map<(d0, d1) -> (d0, d1)>
tp.mesh @tp ["tp" = 4]
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x64xf32> {tp.param}, %w2: tensor<64x16xf32> {tp.param}) -> tensor<8x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %z1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>) outs(%z1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<8x64xf32>) outs(%e1 : tensor<8x64xf32>) {
  ^bb0(%a: f32, %b: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%g, %w2 : tensor<8x64xf32>, tensor<64x16xf32>) outs(%z2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A 2-D mesh: the batch pinned to "dp" (grid axis 0), the MLP split over
// "tp" (grid axis 1); a pin of the input is dropped (its layout is on the
// argument and on the consumers).
// EXPORT-LABEL: shard.grid @m(shape = 2x4)
// EXPORT-LABEL: func.func @mlp_2d(
// EXPORT: shard.sharding @m split_axes = {{\[\[0\]\]}}
// EXPORT: shard.sharding @m split_axes = {{\[\[\], \[1\]\]}}
// EXPORT: shard.sharding @m split_axes = {{\[\[1\]\]}}
// EXPORT-NOT: tp.

// UPSTREAM-LABEL: shard.grid @m(shape = 2x4)
// UPSTREAM-LABEL: func.func @mlp_2d(%{{.*}}: tensor<4x16xf32>, %{{.*}}: tensor<16x16xf32>, %{{.*}}: tensor<16x16xf32>) -> tensor<4x16xf32>
// UPSTREAM: math.tanh
// UPSTREAM: %[[Y:.*]] = linalg.matmul {{.*}} -> tensor<4x16xf32>
// UPSTREAM-NEXT: %[[R:.*]] = shard.all_reduce %[[Y]] on @m grid_axes = [1] : tensor<4x16xf32> -> tensor<4x16xf32>
// UPSTREAM-NEXT: return %[[R]]

// TP-LABEL: func.func @mlp_2d(
// TP: math.tanh
// TP: %[[Y:.*]] = linalg.matmul {{.*}} -> tensor<4x16xf32>
// TP-NEXT: %[[R:.*]] = tp.all_reduce sum %[[Y]] over @m ["tp"] : tensor<4x16xf32>
// TP-NEXT: return %[[R]]
#id = affine_map<(d0, d1) -> (d0, d1)>
tp.mesh @m ["dp" = 2, "tp" = 4]
func.func @mlp_2d(%x: tensor<8x16xf32> {tp.layout = #tp.layout<@m, ["dp", -]>}, %w1: tensor<16x64xf32> {tp.param}, %w2: tensor<64x16xf32> {tp.param}) -> (tensor<8x16xf32> {tp.layout = #tp.layout<@m, ["dp", -]>}) {
  %xp = tp.annotate %x layout <@m, ["dp", -]> : tensor<8x16xf32>
  %c0 = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %z1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%xp, %w1 : tensor<8x16xf32>, tensor<16x64xf32>) outs(%z1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<8x64xf32>) outs(%e1 : tensor<8x64xf32>) {
  ^bb0(%a: f32, %b: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%g, %w2 : tensor<8x64xf32>, tensor<64x16xf32>) outs(%z2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
