// RUN: tp-opt %s | tp-opt | FileCheck %s
// #tp.layout in every form, and the tp.* argument/result attributes.

tp.mesh @m ["tp" = 4]
tp.mesh @grid ["dp" = 2, "tp" = 4]

// A weight with a free layout, an input pinned split on its batch dim over
// "dp", and a result that keeps its global shape after partitioning.
// CHECK-LABEL: func.func @arg_and_result_attrs
// CHECK-SAME: %{{.*}}: tensor<64x32xf32> {tp.param}
// CHECK-SAME: %{{.*}}: tensor<8x64xf32> {tp.layout = #tp.layout<@grid, ["dp", -]>}
// CHECK-SAME: -> (tensor<8x8xf32> {tp.global_shape = array<i64: 8, 32>, tp.layout = #tp.layout<@m, [-, "tp"]>})
func.func @arg_and_result_attrs(
    %w: tensor<64x32xf32> {tp.param},
    %x: tensor<8x64xf32> {tp.layout = #tp.layout<@grid, ["dp", -]>})
    -> (tensor<8x8xf32> {tp.layout = #tp.layout<@m, [-, "tp"]>,
                         tp.global_shape = array<i64: 8, 32>}) {
  %0 = tensor.empty() : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// Initialisation descriptors of every kind.
// CHECK-LABEL: func.func @init_descriptors
// CHECK-SAME: tp.init = {kind = "normal", seed = 7 : i64, std = 2.000000e-02 : f64}
// CHECK-SAME: tp.init = {kind = "uniform", scale = 5.000000e-01 : f64, seed = 8 : i64}
// CHECK-SAME: tp.init = {kind = "zeros"}
// CHECK-SAME: tp.init = {kind = "ones"}
// CHECK-SAME: tp.init = {high = 50257 : i64, kind = "integers", seed = 9 : i64}
func.func @init_descriptors(
    %a: tensor<4x4xf32> {tp.param, tp.init = {kind = "normal", seed = 7 : i64, std = 0.02 : f64}},
    %b: tensor<4xf32> {tp.param, tp.init = {kind = "uniform", seed = 8 : i64, scale = 0.5 : f64}},
    %c: tensor<4xf32> {tp.param, tp.init = {kind = "zeros"}},
    %d: tensor<4xf32> {tp.param, tp.init = {kind = "ones"}},
    %e: tensor<4xi64> {tp.init = {kind = "integers", seed = 9 : i64, high = 50257 : i64}}) {
  return
}

// Buffer names for the runtime: two arguments may share one (tied weights).
// CHECK-LABEL: func.func @named_buffers
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<4x2xf32> {tp.name = "wte.weight", tp.param}
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<4x2xf32> {tp.name = "wte.weight", tp.param}
// CHECK-SAME: -> (tensor<4x2xf32> {tp.name = "logits"})
func.func @named_buffers(
    %a: tensor<4x2xf32> {tp.param, tp.name = "wte.weight"},
    %b: tensor<4x2xf32> {tp.param, tp.name = "wte.weight"})
    -> (tensor<4x2xf32> {tp.name = "logits"}) {
  return %a : tensor<4x2xf32>
}

// A training step: optimizer state is marked tp.state, and each result that
// replaces an argument on the next call names it with tp.updates.
// CHECK-LABEL: func.func @training_state
// CHECK-SAME: %{{.*}}: tensor<4xf32> {tp.init = {kind = "zeros"}, tp.param, tp.state}
// CHECK-SAME: -> (tensor<4xf32> {tp.param, tp.updates = 1 : i64})
func.func @training_state(
    %w: tensor<4xf32> {tp.param},
    %m: tensor<4xf32> {tp.param, tp.state, tp.init = {kind = "zeros"}})
    -> (tensor<4xf32> {tp.param, tp.updates = 1 : i64}) {
  return %m : tensor<4xf32>
}

// After partitioning, tp.updates relates the global types: a result may
// replace an argument of another local type with the same global shape.
// CHECK-LABEL: func.func @training_state_partitioned
// CHECK-SAME: -> (tensor<2x8xf32> {tp.global_shape = array<i64: 8, 8>, tp.param, tp.updates = 0 : i64})
func.func @training_state_partitioned(
    %w: tensor<8x2xf32> {tp.param, tp.global_shape = array<i64: 8, 8>})
    -> (tensor<2x8xf32> {tp.param, tp.global_shape = array<i64: 8, 8>,
                         tp.updates = 0 : i64}) {
  %0 = tensor.empty() : tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// A parameter may also carry a pin.
// CHECK-LABEL: func.func @pinned_param
// CHECK-SAME: {tp.layout = #tp.layout<@m, ["tp", -]>, tp.param}
func.func @pinned_param(%w: tensor<64x32xf32> {tp.param, tp.layout = #tp.layout<@m, ["tp", -]>}) {
  return
}

// Layouts in an attribute dictionary, printed in canonical compact form:
// one axis as a bare string, several as a list, the partial clause last.
// CHECK-LABEL: func.func @layout_forms
// CHECK-SAME: l0 = #tp.layout<@m, []>
// CHECK-SAME: l1 = #tp.layout<@m, [-, -]>
// CHECK-SAME: l2 = #tp.layout<@grid, ["tp", "dp"]>
// CHECK-SAME: l3 = #tp.layout<@grid, {{\[\[}}"tp", "dp"], -]>
// CHECK-SAME: l4 = #tp.layout<@grid, ["dp", -], partial = sum("tp")>
// CHECK-SAME: l5 = #tp.layout<@grid, [-], partial = max("tp", "dp")>
// CHECK-SAME: l6 = #tp.layout<@m, ["tp"]>
func.func @layout_forms() attributes {
    l0 = #tp.layout<@m, []>,
    l1 = #tp.layout<@m, [-, -]>,
    l2 = #tp.layout<@grid, ["tp", "dp"]>,
    l3 = #tp.layout<@grid, [["tp", "dp"], -]>,
    l4 = #tp.layout<@grid, ["dp", -], partial = sum("tp")>,
    l5 = #tp.layout<@grid, [-], partial = max("tp", "dp")>,
    l6 = #tp.layout<@m, [["tp"]]>} {
  return
}

// The reduction-kind attribute on its own.
// CHECK-LABEL: func.func @reduction_kinds
// CHECK-SAME: k0 = #tp<reduction sum>, k1 = #tp<reduction max>, k2 = #tp<reduction min>
func.func @reduction_kinds() attributes {
    k0 = #tp<reduction sum>, k1 = #tp<reduction max>, k2 = #tp<reduction min>} {
  return
}

// The planner's per-op decisions: one layout per tensor operand and result,
// unit for the others.
// CHECK-LABEL: func.func @op_layouts
// CHECK: linalg.fill {tp.operand_layouts = [unit, #tp.layout<@m, [-, "tp"]>], tp.result_layouts = [#tp.layout<@m, [-, "tp"]>]}
func.func @op_layouts(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill {tp.operand_layouts = [unit, #tp.layout<@m, [-, "tp"]>], tp.result_layouts = [#tp.layout<@m, [-, "tp"]>]} ins(%zero : f32) outs(%x : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %f : tensor<8x16xf32>
}
