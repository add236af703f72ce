// RUN: tp-opt %s --split-input-file --tp-partition --verify-diagnostics
// Plans the partitioner cannot realise fail with a located error.

// expected-error @below {{tp-partition: function 'unplanned' has no plan (run --tp-propagate first)}}
func.func @unplanned(%x: tensor<8xf32>) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
// A consumer that wants a partial sum of a partial max: no collective makes
// one (the planner never asks for it; a hand-edited plan might).
func.func @max_to_sum(%x: tensor<8xf32> {tp.layout = #tp.layout<@m, [-], partial = max("tp")>})
    -> (tensor<8xf32> {tp.layout = #tp.layout<@m, [-], partial = sum("tp")>}) {
  // expected-error @below {{cannot reshard a value from #tp.layout<@m, [-], partial = max("tp")> to #tp.layout<@m, [-], partial = sum("tp")>}}
  return {tp.operand_layouts = [#tp.layout<@m, [-], partial = sum("tp")>]} %x : tensor<8xf32>
}
