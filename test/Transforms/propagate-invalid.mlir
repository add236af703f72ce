// RUN: tp-opt %s --split-input-file --tp-propagate --verify-diagnostics
// Diagnostics of tp-propagate on its input: missing or ambiguous meshes,
// contradicting pins, pins no op can honour, plans that cannot fit.

// expected-error @below {{tp-propagate: no mesh; declare a tp.mesh or pass tp=N}}
module {
  func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}

// -----

// expected-error @below {{tp-propagate: the module declares 2 meshes; choose one with mesh=NAME}}
module {
  tp.mesh @a ["tp" = 2]
  tp.mesh @b ["tp" = 4]
}

// -----

tp.mesh @m ["tp" = 4]
func.func @two_pins(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  // expected-note @below {{earlier pin #tp.layout<@m, ["tp", -]>}}
  %a = tp.annotate %x layout <@m, ["tp", -]> : tensor<16x16xf32>
  // expected-error @below {{pin #tp.layout<@m, [-, "tp"]> contradicts an earlier pin of the same value}}
  %b = tp.annotate %x layout <@m, [-, "tp"]> : tensor<16x16xf32>
  %c = math.exp %b : tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @pin_vs_argument(%x: tensor<16x16xf32> {tp.layout = #tp.layout<@m, ["tp", -]>}) -> tensor<16x16xf32> {
  // expected-error @below {{pin #tp.layout<@m, [-, "tp"]> contradicts the layout #tp.layout<@m, ["tp", -]> of argument #0}}
  %b = tp.annotate %x layout <@m, [-, "tp"]> : tensor<16x16xf32>
  return %b : tensor<16x16xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @unproducible_pin(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  // expected-note @below {{produced here}}
  %y = math.exp %x : tensor<16x16xf32>
  // An elementwise op never produces a partial value.
  // expected-error @below {{pinned layout #tp.layout<@m, [-, -], partial = sum("tp")> cannot be produced by result #0 of 'math.exp'}}
  %p = tp.annotate %y layout <@m, [-, -], partial = sum("tp")> : tensor<16x16xf32>
  return %p : tensor<16x16xf32>
}

// -----

tp.mesh @m ["tp" = 4]
// Splitting the tokens of a matmul means reading its weight whole, which
// the default memory budget forbids; parameters are never gathered.
// expected-error @below {{no layout assignment of 'rows_need_whole_weight' satisfies the pins within the memory budget of 2253 bytes per device (parameters need 8192 bytes in all)}}
// expected-note @below {{the parameters take at least 2048 bytes per device in their smallest layouts; allow more with param-share=F, memory-budget=BYTES or memory-budget=none}}
func.func @rows_need_whole_weight(%x: tensor<64x32xf32>, %w: tensor<32x64xf32> {tp.param}) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %h = linalg.matmul ins(%x, %w : tensor<64x32xf32>, tensor<32x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  // expected-note @below {{this value is pinned to #tp.layout<@m, ["tp", -]>}}
  %p = tp.annotate %h layout <@m, ["tp", -]> : tensor<64x64xf32>
  return %p : tensor<64x64xf32>
}

// -----

tp.mesh @m ["tp" = 4]
// expected-error @below {{tp-propagate supports functions with a single block; 'two_blocks' has 2}}
func.func @two_blocks(%x: tensor<8xf32>) -> tensor<8xf32> {
  cf.br ^bb1
^bb1:
  return %x : tensor<8xf32>
}
