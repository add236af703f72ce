// RUN: tp-opt %s --split-input-file --convert-tp-to-runtime --verify-diagnostics
// Collectives the runtime cannot carry are located errors.

tp.mesh @m ["tp" = 4]
func.func @i1_elements(%x: tensor<8xi1>) -> tensor<8xi1> {
  // expected-error @below {{'tp.all_reduce' op has element type 'i1', which the runtime cannot communicate}}
  %r = tp.all_reduce max %x over @m ["tp"] : tensor<8xi1>
  return %r : tensor<8xi1>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @below {{'tp.all_reduce' op needs static shapes to be lowered}}
  %r = tp.all_reduce sum %x over @m ["tp"] : tensor<?xf32>
  return %r : tensor<?xf32>
}
