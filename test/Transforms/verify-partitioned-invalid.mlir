// RUN: tp-opt %s --split-input-file --tp-verify-partitioned --verify-diagnostics
// The partitioned-program contract, one violation per case.

tp.mesh @m ["tp" = 4]
func.func @annotation_left(%x: tensor<8xf32> {tp.layout = #tp.layout<@m, [-]>, tp.global_shape = array<i64: 8>}) -> tensor<8xf32> {
  // expected-error @below {{tp-verify-partitioned: tp.annotate left in a partitioned program}}
  %a = tp.annotate %x layout <@m, [-]> : tensor<8xf32>
  return %a : tensor<8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @plan_left(%x: tensor<8xf32> {tp.layout = #tp.layout<@m, [-]>, tp.global_shape = array<i64: 8>}) -> tensor<8xf32> {
  // expected-error @below {{tp-verify-partitioned: planner attribute 'tp.result_layouts' left in a partitioned program}}
  %y = math.exp %x {tp.result_layouts = [#tp.layout<@m, [-]>]} : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
// expected-error @below {{tp-verify-partitioned: argument #0 of 'no_global_shape' lacks 'tp.layout' or 'tp.global_shape'}}
func.func @no_global_shape(%x: tensor<8xf32> {tp.layout = #tp.layout<@m, ["tp"]>}) {
  return
}

// -----

tp.mesh @m ["tp" = 4]
// expected-error @below {{tp-verify-partitioned: argument #0 has type 'tensor<8xf32>' but its global shape array<i64: 8> under #tp.layout<@m, ["tp"]> is local shape 'tensor<2xf32>'}}
func.func @global_type(%x: tensor<8xf32> {tp.layout = #tp.layout<@m, ["tp"]>, tp.global_shape = array<i64: 8>}) {
  return
}

// -----

tp.mesh @m ["tp" = 4]
// expected-error @below {{tp-verify-partitioned: result #0 of 'result_without_layout' lacks 'tp.layout' or 'tp.global_shape'}}
func.func @result_without_layout(%x: tensor<2xf32> {tp.layout = #tp.layout<@m, ["tp"]>, tp.global_shape = array<i64: 8>}) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
