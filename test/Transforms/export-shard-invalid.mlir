// RUN: tp-opt %s --split-input-file --tp-export-shard --verify-diagnostics
// Diagnostics of tp-export-shard: it exports planned, unpartitioned programs.
// (Layouts naming a missing mesh or axis never reach it: the tp dialect
// rejects them when the IR is verified.)

// expected-error @below {{tp-export-shard: the module has no tp.mesh; run --tp-propagate first}}
module {
  func.func @unplanned(%x: tensor<8xf32>) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}

// -----

tp.mesh @m ["tp" = 4]
func.func @partitioned(%x: tensor<2xf32> {tp.layout = #tp.layout<@m, [-]>}) -> tensor<2xf32> {
  // expected-error @below {{'tp.all_reduce' op cannot be exported: tp-export-shard expects a planned, unpartitioned program (run it after --tp-propagate, before --tp-partition)}}
  %r = tp.all_reduce sum %x over @m ["tp"] : tensor<2xf32>
  return %r : tensor<2xf32>
}
