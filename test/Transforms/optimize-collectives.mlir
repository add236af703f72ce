// RUN: tp-opt %s --split-input-file --tp-optimize-collectives | FileCheck %s
// RUN: tp-opt %s --split-input-file --tp-optimize-collectives="merge-bytes=0" | FileCheck %s --check-prefix=NOMERGE
// Each rewrite of tp-optimize-collectives on its own.

tp.mesh @m ["tp" = 4]
// An all-reduce whose only use is a slice is a reduce-scatter.
// CHECK-LABEL: func.func @slice_of_all_reduce
// CHECK-SAME: (%[[X:.*]]: tensor<16x8xf32>)
// CHECK-NEXT: %[[S:.*]] = tp.reduce_scatter sum %[[X]] over @m ["tp"] dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[S]]
func.func @slice_of_all_reduce(%x: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %r = tp.all_reduce sum %x over @m ["tp"] : tensor<16x8xf32>
  %s = tp.slice %r over @m ["tp"] dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
// With another use the all-reduce stays (a reduce-scatter would add one).
// CHECK-LABEL: func.func @slice_of_shared_all_reduce
// CHECK: tp.all_reduce
// CHECK: tp.slice
// CHECK-NOT: tp.reduce_scatter
func.func @slice_of_shared_all_reduce(%x: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>) {
  %r = tp.all_reduce sum %x over @m ["tp"] : tensor<16x8xf32>
  %s = tp.slice %r over @m ["tp"] dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s, %r : tensor<4x8xf32>, tensor<16x8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
// Gathering a dimension and slicing it back gives the original block.
// CHECK-LABEL: func.func @slice_of_all_gather
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @slice_of_all_gather(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %g = tp.all_gather %x over @m ["tp"] dim = 0 : tensor<4x8xf32> -> tensor<16x8xf32>
  %s = tp.slice %g over @m ["tp"] dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
// Slicing a replicated value and gathering it back gives the value.
// CHECK-LABEL: func.func @all_gather_of_slice
// CHECK-SAME: (%[[X:.*]]: tensor<16x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @all_gather_of_slice(%x: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %s = tp.slice %x over @m ["tp"] dim = 1 : tensor<16x8xf32> -> tensor<16x2xf32>
  %g = tp.all_gather %s over @m ["tp"] dim = 1 : tensor<16x2xf32> -> tensor<16x8xf32>
  return %g : tensor<16x8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
// Moving a split there and back cancels.
// CHECK-LABEL: func.func @all_to_all_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @all_to_all_round_trip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = tp.all_to_all %x over @m ["tp"] split_dim = 1 concat_dim = 0 : tensor<4x8xf32> -> tensor<16x2xf32>
  %b = tp.all_to_all %a over @m ["tp"] split_dim = 0 concat_dim = 1 : tensor<16x2xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
tp.mesh @other ["tp" = 4]
// Different meshes (or dimensions) do not cancel.
// CHECK-LABEL: func.func @different_mesh
// CHECK: tp.all_gather
// CHECK: tp.slice
func.func @different_mesh(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %g = tp.all_gather %x over @m ["tp"] dim = 0 : tensor<4x8xf32> -> tensor<16x8xf32>
  %s = tp.slice %g over @other ["tp"] dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
// Two independent small sums (a cross-entropy's sum of exponentials and
// target logit) travel in one all-reduce: flattened, concatenated, reduced,
// split and reshaped back.
// CHECK-LABEL: func.func @merge_independent_sums
// CHECK-SAME: (%[[A:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<2x4xf32>)
// CHECK: %[[FB:.*]] = tensor.collapse_shape %[[B]] {{\[\[}}0, 1]] : tensor<2x4xf32> into tensor<8xf32>
// CHECK: %[[CAT:.*]] = tensor.concat dim(0) %[[A]], %[[FB]] : (tensor<8xf32>, tensor<8xf32>) -> tensor<16xf32>
// CHECK: %[[R:.*]] = tp.all_reduce sum %[[CAT]] over @m ["tp"] : tensor<16xf32>
// CHECK: %[[RA:.*]] = tensor.extract_slice %[[R]][0] [8] [1] : tensor<16xf32> to tensor<8xf32>
// CHECK: %[[RB:.*]] = tensor.extract_slice %[[R]][8] [8] [1] : tensor<16xf32> to tensor<8xf32>
// CHECK: %[[EB:.*]] = tensor.expand_shape %[[RB]] {{\[\[}}0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
// CHECK-NOT: tp.all_reduce
// CHECK: return %[[RA]], %[[EB]]
// NOMERGE-LABEL: func.func @merge_independent_sums
// NOMERGE-COUNT-2: tp.all_reduce sum
func.func @merge_independent_sums(%a: tensor<8xf32>, %b: tensor<2x4xf32>) -> (tensor<8xf32>, tensor<2x4xf32>) {
  %ra = tp.all_reduce sum %a over @m ["tp"] : tensor<8xf32>
  %rb = tp.all_reduce sum %b over @m ["tp"] : tensor<2x4xf32>
  return %ra, %rb : tensor<8xf32>, tensor<2x4xf32>
}

// -----

tp.mesh @m ["tp" = 4]
// A reduction that needs the other's result, or a different kind, is not
// merged.
// CHECK-LABEL: func.func @no_merge_dependent
// CHECK-COUNT-3: tp.all_reduce
func.func @no_merge_dependent(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %m = tp.all_reduce max %a over @m ["tp"] : tensor<8xf32>
  %d = arith.subf %a, %m : tensor<8xf32>
  %s = tp.all_reduce sum %d over @m ["tp"] : tensor<8xf32>
  %t = tp.all_reduce max %s over @m ["tp"] : tensor<8xf32>
  return %s, %t : tensor<8xf32>, tensor<8xf32>
}
