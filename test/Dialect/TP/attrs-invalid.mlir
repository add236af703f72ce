// RUN: tp-opt %s -split-input-file -verify-diagnostics
// Every diagnostic of #tp.layout, #tp.reduction and the tp.* argument and
// result attributes.

tp.mesh @m ["tp" = 4]
// An empty axis list is not a way to say "unsplit".
// expected-error @+1 {{expected '-', a mesh axis name or a non-empty list of mesh axis names for dimension 1}}
func.func @empty_dim_list() attributes {l = #tp.layout<@m, [-, []]>} {
  return
}

// -----

tp.mesh @m ["tp" = 4]
// expected-error @+1 {{expected '-', a mesh axis name or a non-empty list of mesh axis names for dimension 0}}
func.func @number_as_dim() attributes {l = #tp.layout<@m, [4]>} {
  return
}

// -----

tp.mesh @m ["tp" = 4]
// expected-error @+1 {{unknown reduction kind 'avg'; expected 'sum', 'max' or 'min'}}
func.func @unknown_kind() attributes {l = #tp.layout<@m, [-], partial = avg("tp")>} {
  return
}

// -----

tp.mesh @m ["tp" = 4]
// expected-error @+1 {{expected at least one mesh axis in 'partial'}}
func.func @empty_partial() attributes {l = #tp.layout<@m, [-], partial = sum()>} {
  return
}

// -----

tp.mesh @m ["tp" = 4]
// expected-error @+1 {{mesh axis "tp" appears more than once in the layout}}
func.func @axis_twice() attributes {l = #tp.layout<@m, ["tp", "tp"]>} {
  return
}

// -----

tp.mesh @m ["tp" = 4]
// An axis cannot both split a dimension and be partial.
// expected-error @+1 {{mesh axis "tp" appears more than once in the layout}}
func.func @split_and_partial() attributes {l = #tp.layout<@m, ["tp"], partial = sum("tp")>} {
  return
}

// -----

tp.mesh @m ["tp" = 4]
// expected-error @+1 {{mesh axis names in a layout must not be empty}}
func.func @empty_axis_name() attributes {l = #tp.layout<@m, [""]>} {
  return
}

// -----

// expected-error @+2 {{expected ::mlir::tp::ReductionKind to be one of: sum, max, min}}
// expected-error @+1 {{failed to parse TP_ReductionKindAttr parameter 'value' which is to be a `::mlir::tp::ReductionKind`}}
func.func @bad_reduction_attr() attributes {k = #tp<reduction avg>} {
  return
}

// -----

tp.mesh @m ["tp" = 4]
// expected-error @+1 {{'func.func' op argument 0: layout has rank 1 but the type 'tensor<8x16xf32>' has rank 2}}
func.func @arg_rank_mismatch(%x: tensor<8x16xf32> {tp.layout = #tp.layout<@m, ["tp"]>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: layout refers to @nope, which is not a tp.mesh in scope}}
func.func @arg_unknown_mesh(%x: tensor<8xf32> {tp.layout = #tp.layout<@nope, ["tp"]>}) {
  return
}

// -----

// expected-note @+1 {{mesh declared here}}
tp.mesh @m ["tp" = 4]
// expected-error @+1 {{'func.func' op argument 0: mesh axis "dp" in the layout does not exist in @m}}
func.func @arg_unknown_axis(%x: tensor<8xf32> {tp.layout = #tp.layout<@m, ["dp"]>}) {
  return
}

// -----

tp.mesh @m ["tp" = 4]
// expected-error @+1 {{'func.func' op argument 0: dynamic dimension 0 cannot be split over mesh axes}}
func.func @arg_dynamic_split(%x: tensor<?x8xf32> {tp.layout = #tp.layout<@m, ["tp", -]>}) {
  return
}

// -----

tp.mesh @m ["tp" = 4]
// expected-error @+1 {{'func.func' op argument 0: a layout needs a ranked tensor, got 'f32'}}
func.func @arg_not_tensor(%x: f32 {tp.layout = #tp.layout<@m, []>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.layout' must be a #tp.layout, got "tp"}}
func.func @arg_layout_not_layout(%x: tensor<8xf32> {tp.layout = "tp"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.param' must be a unit attribute, got true}}
func.func @param_not_unit(%x: tensor<8xf32> {tp.param = true}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.param' needs a ranked tensor, got 'i32'}}
func.func @param_not_tensor(%x: i32 {tp.param}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.global_shape' must be an array<i64>, got [8]}}
func.func @global_shape_not_array(%x: tensor<8xf32> {tp.global_shape = [8]}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.global_shape' needs a ranked tensor, got 'f32'}}
func.func @global_shape_not_tensor(%x: f32 {tp.global_shape = array<i64: 8>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op result 0: 'tp.global_shape' has 1 dimensions but the type 'tensor<2x8xf32>' has 2}}
func.func @global_shape_rank(%x: tensor<2x8xf32>) -> (tensor<2x8xf32> {tp.global_shape = array<i64: 8>}) {
  return %x : tensor<2x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.global_shape' dimension 1 has negative size -4}}
func.func @global_shape_negative(%x: tensor<2x8xf32> {tp.global_shape = array<i64: 8, -4>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: unknown attribute 'tp.shard'; the tp dialect defines 'tp.layout', 'tp.param', 'tp.global_shape', 'tp.init', 'tp.name', 'tp.source', 'tp.state' and 'tp.updates'}}
func.func @unknown_tp_attr(%x: tensor<8xf32> {tp.shard}) {
  return
}

// -----

// A buffer name is a string: the tensor name a checkpoint provides.
// expected-error @+1 {{'func.func' op argument 1: 'tp.name' must be a string, got 3 : i64}}
func.func @name_not_string(%x: tensor<8xf32>, %w: tensor<8xf32> {tp.param, tp.name = 3 : i64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.name' must not be empty}}
func.func @name_empty(%x: tensor<8xf32> {tp.name = ""}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op result 0: 'tp.name' must be a string, got unit}}
func.func @result_name_unit(%x: tensor<8xf32>) -> (tensor<8xf32> {tp.name}) {
  return %x : tensor<8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
// expected-error @+1 {{'func.func' op result 0: layout has rank 2 but the type 'tensor<8xf32>' has rank 1}}
func.func @result_rank_mismatch(%x: tensor<8xf32>) -> (tensor<8xf32> {tp.layout = #tp.layout<@m, [-, -]>}) {
  return %x : tensor<8xf32>
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.init' must be a dictionary, got "normal"}}
func.func @init_not_dict(%x: tensor<8xf32> {tp.init = "normal"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.init' needs a ranked tensor, got 'f32'}}
func.func @init_not_tensor(%x: f32 {tp.init = {kind = "zeros"}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.init' needs a string 'kind'}}
func.func @init_no_kind(%x: tensor<8xf32> {tp.init = {seed = 1 : i64}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.init' of kind 'normal' needs an integer 'seed'}}
func.func @init_no_seed(%x: tensor<8xf32> {tp.init = {kind = "normal", std = 0.02 : f64}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.init' of kind 'uniform' needs a float 'scale'}}
func.func @init_no_scale(%x: tensor<8xf32> {tp.init = {kind = "uniform", seed = 3 : i64}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.init' field 'std' must not be negative}}
func.func @init_negative_std(%x: tensor<8xf32> {tp.init = {kind = "normal", seed = 3 : i64, std = -1.0 : f64}}) {
  return
}

// -----

// A NaN or inf std passed, and tp-runner then blamed its own model.json
// (issue 40).
// expected-error @+1 {{'func.func' op argument 0: 'tp.init' field 'std' must be a finite number, got 0x7FF8000000000000 : f64}}
func.func @init_nan_std(%x: tensor<8xf32> {tp.init = {kind = "normal", seed = 3 : i64, std = 0x7FF8000000000000 : f64}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.init' field 'scale' must be a finite number, got 0x7FF0000000000000 : f64}}
func.func @init_inf_scale(%x: tensor<8xf32> {tp.init = {kind = "uniform", seed = 3 : i64, scale = 0x7FF0000000000000 : f64}}) {
  return
}

// -----

// Uniform draws past f16's range would be inf.
// expected-error @+1 {{'func.func' op argument 0: 'tp.init' of kind 'uniform' draws up to 1.000000e+05, past 'f16''s largest finite value 6.550400e+04}}
func.func @init_uniform_overflow(%x: tensor<8xf16> {tp.init = {kind = "uniform", seed = 3 : i64, scale = 1.0e5 : f64}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.init' has unknown kind 'xavier'; expected 'normal', 'uniform', 'zeros', 'ones' or 'integers'}}
func.func @init_unknown_kind(%x: tensor<8xf32> {tp.init = {kind = "xavier"}}) {
  return
}

// -----

tp.mesh @m ["tp" = 4]
func.func @op_layouts_not_array(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'math.exp' op 'tp.result_layouts' must be an array, got #tp.layout<@m, [-]>}}
  %y = math.exp %x {tp.result_layouts = #tp.layout<@m, [-]>} : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @op_layouts_count(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'math.exp' op 'tp.operand_layouts' has 2 entries for 1 operands}}
  %y = math.exp %x {tp.operand_layouts = [#tp.layout<@m, [-]>, #tp.layout<@m, [-]>]} : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @op_layouts_unit_for_tensor(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'math.exp' op 'tp.result_layouts' entry 0 must be a #tp.layout for 'tensor<8xf32>'}}
  %y = math.exp %x {tp.result_layouts = [unit]} : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @op_layouts_wrong_kind(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'math.exp' op 'tp.result_layouts' entry 0 must be a #tp.layout or unit, got "tp"}}
  %y = math.exp %x {tp.result_layouts = ["tp"]} : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @op_layouts_rank(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'math.exp' op 'tp.operand_layouts' entry 0: layout has rank 2 but the type 'tensor<8xf32>' has rank 1}}
  %y = math.exp %x {tp.operand_layouts = [#tp.layout<@m, [-, -]>]} : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @value_attr_on_op(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'math.exp' op 'tp.layout' belongs on function arguments and results, not on ops}}
  %y = math.exp %x {tp.layout = #tp.layout<@m, [-]>} : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @name_on_op(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'math.exp' op 'tp.name' belongs on function arguments and results, not on ops}}
  %y = math.exp %x {tp.name = "y"} : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @unknown_op_attr(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'math.exp' op unknown attribute 'tp.strategy'; ops carry only 'tp.operand_layouts', 'tp.result_layouts' and 'tp.captured_layouts'}}
  %y = math.exp %x {tp.strategy = "column"} : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @captured_count(%t: tensor<16x8xf32>, %ids: tensor<4xindex>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @below {{'linalg.generic' op 'tp.captured_layouts' has 2 entries for 1 captured tensors}}
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xindex>) outs(%e : tensor<4x8xf32>)
      attrs = {tp.captured_layouts = [#tp.layout<@m, ["tp", -]>, #tp.layout<@m, ["tp", -]>]} {
  ^bb0(%row: index, %o: f32):
    %col = linalg.index 1 : index
    %v = tensor.extract %t[%row, %col] : tensor<16x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.init' of kind 'integers' needs 'high' >= 1}}
func.func @init_integers_high(%x: tensor<8xi64> {tp.init = {kind = "integers", seed = 3 : i64, high = 0 : i64}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.init' of kind 'integers' needs an integer 'high'}}
func.func @init_integers_no_high(%x: tensor<8xi64> {tp.init = {kind = "integers", seed = 3 : i64}}) {
  return
}

// -----

// A training step's state marker is a unit attribute.
// expected-error @+1 {{'func.func' op argument 0: 'tp.state' must be a unit attribute, got 1 : i64}}
func.func @state_not_unit(%m: tensor<8xf32> {tp.state = 1 : i64}) {
  return
}

// -----

// tp.updates names an argument, so it only makes sense on results.
// expected-error @+1 {{'func.func' op argument 0: 'tp.updates' belongs on function results, not arguments}}
func.func @updates_on_argument(%m: tensor<8xf32> {tp.updates = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op result 0: 'tp.updates' names argument 2 but the function has 1 arguments}}
func.func @updates_out_of_range(%m: tensor<8xf32>) -> (tensor<8xf32> {tp.updates = 2 : i64}) {
  return %m : tensor<8xf32>
}

// -----

// expected-error @+1 {{'func.func' op result 0: 'tp.updates' names argument 0 of type 'tensor<8xf32>' but the result has type 'tensor<4xf32>'}}
func.func @updates_type_mismatch(%m: tensor<8xf32>, %n: tensor<4xf32>) -> (tensor<4xf32> {tp.updates = 0 : i64}) {
  return %n : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result 0: 'tp.updates' must be an i64 argument index, got "m"}}
func.func @updates_not_index(%m: tensor<8xf32>) -> (tensor<8xf32> {tp.updates = "m"}) {
  return %m : tensor<8xf32>
}

// -----

// expected-error @+1 {{'func.func' op result 0: 'tp.updates' names argument 0 of type 'tensor<8x8xf32>' but the result has type 'tensor<8x4xf32>'}}
func.func @updates_global_mismatch(%m: tensor<8x2xf32> {tp.global_shape = array<i64: 8, 8>}) -> (tensor<8x2xf32> {tp.global_shape = array<i64: 8, 4>, tp.updates = 0 : i64}) {
  return %m : tensor<8x2xf32>
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.source' must be {offsets = array<i64>, shape = array<i64>}, got {offsets = [0, 4]}}}
func.func @source_not_dict(%x: tensor<4x4xf32> {tp.source = {offsets = [0, 4]}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.source' has 1 offsets and 1 dimensions for a tensor of rank 2}}
func.func @source_rank(%x: tensor<4x4xf32> {tp.source = {offsets = array<i64: 4>, shape = array<i64: 12>}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: 'tp.source': dimension 1 of size 4 at offset 10 does not fit the stored size 12}}
func.func @source_out_of_bounds(%x: tensor<4x4xf32> {tp.source = {offsets = array<i64: 0, 10>, shape = array<i64: 4, 12>}}) {
  return
}
