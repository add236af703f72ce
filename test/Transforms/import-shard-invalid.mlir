// RUN: tp-opt %s --split-input-file --tp-import-shard --verify-diagnostics
// RUN: tp-opt %s --split-input-file --tp-shard --verify-diagnostics
// Every diagnostic of tp-import-shard (also as the first step of tp-shard):
// upstream features with no tp counterpart name the op.

// expected-error @below {{'shard.grid' op has a dynamic axis size; tp-import-shard imports static grids only}}
shard.grid @g(shape = 4x?)

// -----

shard.grid @g(shape = 4)
func.func @halo(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'shard.sharding' op has halo sizes, which tp-import-shard does not support}}
  %s = shard.sharding @g split_axes = [[0]] halo_sizes = [1, 2] : !shard.sharding
  %y = shard.shard %x to %s : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

shard.grid @g(shape = 4)
func.func @offsets(%x: tensor<4x14xf32>) -> tensor<4x14xf32> {
  // expected-error @below {{'shard.sharding' op has sharded dims offsets, which tp-import-shard does not support (tp layouts split into equal blocks)}}
  %s = shard.sharding @g split_axes = [[], [0]] sharded_dims_offsets = [0, 2, 5, 9, 14] : !shard.sharding
  %y = shard.shard %x to %s : tensor<4x14xf32>
  return %y : tensor<4x14xf32>
}

// -----

shard.grid @g(shape = 4)
func.func @collective(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'shard.all_reduce' op is not supported by tp-import-shard (it imports shard.grid, shard.sharding and shard.shard only)}}
  %y = shard.all_reduce %x on @g grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

shard.grid @g(shape = 4)
func.func @sharding_argument(%x: tensor<8xf32>, %s: !shard.sharding) -> tensor<8xf32> {
  // expected-error @below {{'shard.shard' op takes a sharding that no shard.sharding op defines; tp-import-shard imports only static shard.sharding ops}}
  %y = shard.shard %x to %s : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

shard.grid @g(shape = 4)
func.func @sharding_escapes() -> !shard.sharding {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  // expected-error @below {{'func.return' op uses a shard.sharding; tp-import-shard imports shardings used by shard.shard only}}
  return %s : !shard.sharding
}

// -----

shard.grid @g(shape = 4)
func.func @dynamic_dim(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  // expected-error @below {{'shard.shard' op imports as #tp.layout<@g, ["axis0", -]>: dynamic dimension 0 cannot be split over mesh axes}}
  %y = shard.shard %x to %s : tensor<?x8xf32>
  %z = arith.addf %y, %y : tensor<?x8xf32>
  return %z : tensor<?x8xf32>
}

// -----

shard.grid @g(shape = 4)
func.func @two_argument_shardings(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s0 = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %s1 = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %a = shard.shard %x to %s0 : tensor<8x8xf32>
  // expected-error @below {{'shard.shard' op gives argument #0 of 'two_argument_shardings' the layout #tp.layout<@g, [-, "axis0"]>, but it already has #tp.layout<@g, ["axis0", -]>}}
  %b = shard.shard %x to %s1 : tensor<8x8xf32>
  %c = arith.addf %a, %b : tensor<8x8xf32>
  return %c : tensor<8x8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
shard.grid @g(shape = 4)
func.func @result_layout(%x: tensor<8xf32>) -> (tensor<8xf32> {tp.layout = #tp.layout<@m, ["tp"]>}) {
  %y = arith.negf %x : tensor<8xf32>
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  // expected-error @below {{'shard.shard' op gives result #0 of 'result_layout' the layout #tp.layout<@g, ["axis0"]>, but it already has #tp.layout<@m, ["tp"]>}}
  %ys = shard.shard %y to %s : tensor<8xf32>
  return %ys : tensor<8xf32>
}

// -----

shard.grid @g(shape = 4)
func.func @reshard_for_users(%x: tensor<8xf32>) -> tensor<8xf32> {
  %s0 = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %s1 = shard.sharding @g split_axes = [[]] : !shard.sharding
  %a = shard.shard %x to %s0 : tensor<8xf32>
  // expected-error @below {{'shard.shard' op asks for #tp.layout<@g, [-]> for the users of a value sharded #tp.layout<@g, ["axis0"]>; tp-import-shard does not import resharding annotations (the planner chooses where to reshard)}}
  %b = shard.shard %a to %s1 annotate_for_users : tensor<8xf32>
  %c = arith.negf %b : tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

shard.grid @g(shape = 4)
func.func @too_many_dims(%x: tensor<8xf32>) -> tensor<8xf32> {
  %s = shard.sharding @g split_axes = [[0], [], []] : !shard.sharding
  // expected-error @below {{'shard.shard' op splits 3 dimensions of a rank-1 tensor}}
  %y = shard.shard %x to %s : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// expected-note @below {{mesh declared here}}
shard.grid @g(shape = 4)
func.func @no_such_axis(%x: tensor<8xf32>) -> tensor<8xf32> {
  %s = shard.sharding @g split_axes = [[3]] : !shard.sharding
  // expected-error @below {{'shard.shard' op imports as #tp.layout<@g, ["axis3"]>: mesh axis "axis3" in the layout does not exist in @g}}
  %y = shard.shard %x to %s : tensor<8xf32>
  return %y : tensor<8xf32>
}
