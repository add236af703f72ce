// RUN: tp-opt %s -split-input-file -verify-diagnostics
// Every verifier diagnostic of the tp ops.

// expected-error @+1 {{'tp.mesh' op needs at least one axis}}
tp.mesh @m []

// -----

// expected-error @+1 {{'tp.mesh' op has 2 axis names but 1 axis sizes}}
"tp.mesh"() <{sym_name = "m", axis_names = ["dp", "tp"], shape = array<i64: 4>}> : () -> ()

// -----

// expected-error @+1 {{'tp.mesh' op axis names must not be empty}}
tp.mesh @m ["" = 4]

// -----

// expected-error @+1 {{'tp.mesh' op axis "tp" is declared twice}}
tp.mesh @m ["tp" = 2, "tp" = 4]

// -----

// expected-error @+1 {{'tp.mesh' op axis "tp" has size 0; sizes must be at least 1}}
tp.mesh @m ["tp" = 0]

// -----

// expected-error @+1 {{'tp.mesh' op axis "dp" has size -2; sizes must be at least 1}}
tp.mesh @m ["dp" = -2]

// -----

// A mesh is capped as mesh-axes= is: sizes whose product overflows 64 bits
// used to divide by zero in the planner.
// expected-error @+1 {{'tp.mesh' op axis "x" has size 4294967296; a mesh has at most 1048576 devices}}
tp.mesh @m ["x" = 4294967296, "y" = 4294967296]

// -----

// expected-error @+1 {{'tp.mesh' op has 1048578 devices up to axis "y"; a mesh has at most 1048576}}
tp.mesh @m ["x" = 524289, "y" = 2]

// -----

// expected-error @+1 {{'tp.mesh' op has 2097152 devices up to axis "z"; a mesh has at most 1048576}}
tp.mesh @m ["x" = 1024, "y" = 1024, "z" = 2]

// -----

tp.mesh @m ["tp" = 4]
func.func @annotate_rank(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tp.annotate' op layout has rank 1 but the type 'tensor<8x16xf32>' has rank 2}}
  %0 = tp.annotate %x layout <@m, ["tp"]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @annotate_no_mesh(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tp.annotate' op layout refers to @m, which is not a tp.mesh in scope}}
  %0 = tp.annotate %x layout <@m, ["tp"]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A symbol that is not a mesh does not count as one.
func.func @m() {
  return
}
func.func @annotate_symbol_not_mesh(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tp.annotate' op layout refers to @m, which is not a tp.mesh in scope}}
  %0 = tp.annotate %x layout <@m, ["tp"]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// expected-note @+1 {{mesh declared here}}
tp.mesh @m ["tp" = 4]
func.func @annotate_unknown_axis(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tp.annotate' op mesh axis "dp" in the layout does not exist in @m}}
  %0 = tp.annotate %x layout <@m, [-], partial = sum("dp")> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @annotate_dynamic_split(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'tp.annotate' op dynamic dimension 0 cannot be split over mesh axes}}
  %0 = tp.annotate %x layout <@m, ["tp"]> : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @annotate_type_change(%x: tensor<8xf32>) -> tensor<8xf16> {
  // expected-error @+1 {{'tp.annotate' op failed to verify that all of {input, result} have same type}}
  %0 = "tp.annotate"(%x) <{layout = #tp.layout<@m, ["tp"]>}> : (tensor<8xf32>) -> tensor<8xf16>
  return %0 : tensor<8xf16>
}

// -----

func.func @collective_no_mesh(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tp.all_reduce' op refers to @m, which is not a tp.mesh in scope}}
  %0 = tp.all_reduce sum %x over @m ["tp"] : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @collective_no_axes(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tp.all_reduce' op needs at least one mesh axis}}
  %0 = tp.all_reduce sum %x over @m [] : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @collective_axis_twice(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tp.all_reduce' op mesh axis "tp" appears more than once}}
  %0 = tp.all_reduce max %x over @m ["tp", "tp"] : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// expected-note @+1 {{mesh declared here}}
tp.mesh @m ["tp" = 4]
func.func @collective_unknown_axis() -> index {
  // expected-error @+1 {{'tp.axis_index' op mesh axis "dp" does not exist in @m}}
  %0 = tp.axis_index @m ["dp"] : index
  return %0 : index
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_reduce_type_change(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tp.all_reduce' op failed to verify that all of {input, result} have same type}}
  %0 = "tp.all_reduce"(%x) <{kind = #tp<reduction sum>, mesh = @m, axes = ["tp"]}> : (tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_gather_rank(%x: tensor<8x2xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{'tp.all_gather' op result rank 1 differs from input rank 2}}
  %0 = tp.all_gather %x over @m ["tp"] dim = 0 : tensor<8x2xf32> -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_gather_dim_range(%x: tensor<8x2xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{'tp.all_gather' op dim 2 is out of range for a tensor of rank 2}}
  %0 = tp.all_gather %x over @m ["tp"] dim = 2 : tensor<8x2xf32> -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_gather_negative_dim(%x: tensor<8x2xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{'tp.all_gather' op dim -1 is out of range for a tensor of rank 2}}
  %0 = tp.all_gather %x over @m ["tp"] dim = -1 : tensor<8x2xf32> -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_gather_size(%x: tensor<16x256xf32>) -> tensor<16x1000xf32> {
  // expected-error @+1 {{'tp.all_gather' op result dimension 1 has size 1000, expected 1024 (input size 256 times group size 4)}}
  %0 = tp.all_gather %x over @m ["tp"] dim = 1 : tensor<16x256xf32> -> tensor<16x1000xf32>
  return %0 : tensor<16x1000xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_gather_other_dim(%x: tensor<16x256xf32>) -> tensor<8x1024xf32> {
  // expected-error @+1 {{'tp.all_gather' op result dimension 0 has size 8, expected 16 (the input's size)}}
  %0 = tp.all_gather %x over @m ["tp"] dim = 1 : tensor<16x256xf32> -> tensor<8x1024xf32>
  return %0 : tensor<8x1024xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_gather_element_type(%x: tensor<4xf32>) -> tensor<16xf16> {
  // expected-error @+1 {{'tp.all_gather' op failed to verify that all of {input, result} have same element type}}
  %0 = tp.all_gather %x over @m ["tp"] dim = 0 : tensor<4xf32> -> tensor<16xf16>
  return %0 : tensor<16xf16>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @reduce_scatter_divisibility(%x: tensor<10x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'tp.reduce_scatter' op dimension 0 of size 10 is not divisible by the group size 4 of mesh axes ["tp"]}}
  %0 = tp.reduce_scatter sum %x over @m ["tp"] dim = 0 : tensor<10x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

tp.mesh @m ["dp" = 2, "tp" = 4]
func.func @reduce_scatter_size(%x: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tp.reduce_scatter' op result dimension 0 has size 4, expected 2 (input size 16 divided by group size 8)}}
  %0 = tp.reduce_scatter sum %x over @m ["dp", "tp"] dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @slice_divisibility(%x: tensor<8x50257xf32>) -> tensor<8x12564xf32> {
  // expected-error @+1 {{'tp.slice' op dimension 1 of size 50257 is not divisible by the group size 4 of mesh axes ["tp"]}}
  %0 = tp.slice %x over @m ["tp"] dim = 1 : tensor<8x50257xf32> -> tensor<8x12564xf32>
  return %0 : tensor<8x12564xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @slice_size(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tp.slice' op result dimension 1 has size 16, expected 4 (input size 16 divided by group size 4)}}
  %0 = tp.slice %x over @m ["tp"] dim = 1 : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_to_all_same_dims(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tp.all_to_all' op split_dim and concat_dim are both 1; an all_to_all must move the split to another dimension}}
  %0 = tp.all_to_all %x over @m ["tp"] split_dim = 1 concat_dim = 1 : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_to_all_split_range(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tp.all_to_all' op split_dim 3 is out of range for a tensor of rank 2}}
  %0 = tp.all_to_all %x over @m ["tp"] split_dim = 3 concat_dim = 0 : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_to_all_concat_range(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tp.all_to_all' op concat_dim -1 is out of range for a tensor of rank 2}}
  %0 = tp.all_to_all %x over @m ["tp"] split_dim = 0 concat_dim = -1 : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_to_all_divisibility(%x: tensor<8x6xf32>) -> tensor<32x1xf32> {
  // expected-error @+1 {{'tp.all_to_all' op dimension 1 of size 6 is not divisible by the group size 4 of mesh axes ["tp"]}}
  %0 = tp.all_to_all %x over @m ["tp"] split_dim = 1 concat_dim = 0 : tensor<8x6xf32> -> tensor<32x1xf32>
  return %0 : tensor<32x1xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_to_all_concat_size(%x: tensor<4x16xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'tp.all_to_all' op result dimension 0 has size 4, expected 16 (input size 4 times group size 4)}}
  %0 = tp.all_to_all %x over @m ["tp"] split_dim = 1 concat_dim = 0 : tensor<4x16xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_to_all_rank(%x: tensor<4x16xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{'tp.all_to_all' op result rank 1 differs from input rank 2}}
  %0 = tp.all_to_all %x over @m ["tp"] split_dim = 1 concat_dim = 0 : tensor<4x16xf32> -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @axis_index_type() -> i32 {
  // expected-error @+1 {{'tp.axis_index' op result #0 must be index, but got 'i32'}}
  %0 = "tp.axis_index"() <{mesh = @m, axes = ["tp"]}> : () -> i32
  return %0 : i32
}

// -----

tp.mesh @m ["tp" = 4]
func.func @all_reduce_unknown_kind(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{unknown reduction kind 'avg'; expected 'sum', 'max' or 'min'}}
  %0 = tp.all_reduce avg %x over @m ["tp"] : tensor<8xf32>
  return %0 : tensor<8xf32>
}
