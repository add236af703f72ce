// Pins that split a dimension its devices cannot share. Without pins the
// planner never picks such a split (it pads, or keeps the dimension whole:
// see test/Transforms/shard-uneven.test).
// RUN: tp-opt %s --split-input-file --tp-shard="allow-padding=false memory-budget=none" --verify-diagnostics

tp.mesh @m ["tp" = 4]
// expected-error @below {{argument #1: pinned layout #tp.layout<@m, [-, "tp"]> splits dimension 1 of size 6 over 4 devices: the devices do not divide it and allow-padding=false}}
func.func @remainder(%a: tensor<4x8xf32>, %w: tensor<8x6xf32> {tp.param, tp.layout = #tp.layout<@m, [-, "tp"]>}) -> tensor<4x6xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %0 = linalg.matmul ins(%a, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%z : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

tp.mesh @m ["tp" = 8]
func.func @too_few(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{pinned layout #tp.layout<@m, ["tp", -]> splits dimension 0 of size 4 over 8 devices: fewer elements than devices}}
  %p = tp.annotate %a layout <@m, ["tp", -]> : tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}

// -----

tp.mesh @m ["a" = 2, "b" = 2]
// expected-error @below {{result #0: pinned layout #tp.layout<@m, [-, ["a", "b"]]> splits dimension 1 of size 6 over 4 devices}}
func.func @two_axes(%a: tensor<4x6xf32>) -> (tensor<4x6xf32> {tp.layout = #tp.layout<@m, [-, ["a", "b"]]>}) {
  return %a : tensor<4x6xf32>
}
