// RUN: tp-opt %s --tp-propagate="tp=4 weight-constant-bytes=64" | FileCheck %s
// RUN: tp-opt %s --tp-shard="tp=4 weight-constant-bytes=64" | FileCheck %s --check-prefix=SHARD
// Regression (issue 28): weights baked in as constants (torch-mlir's ONNX
// importer, dense or dense_resource) are weights whatever their size: a
// constant used as one (read along a contraction, or gathered from by
// data) of at least weight-constant-bytes (default 4 KiB; 64 here, to keep
// the values small) is planned like a parameter, and a fused one is cut
// into pieces, each a constant of its own (FusedParams.cpp) split like a
// separate projection. Smaller tables, and constants not used as weights,
// stay replicated constants (each device slices what it reads for free).

// A [4, 8] f32 constant (128 bytes) read along the matmul's reduction:
// a weight, split by columns.
// CHECK-LABEL: func.func @used_as_weight
// CHECK: arith.constant {tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]} dense
tp.mesh @tp ["tp" = 4]
func.func @used_as_weight(%x: tensor<16x4xf32>) -> tensor<16x8xf32> {
  %w = arith.constant dense<"0x000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F00000000000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F00000000000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F"> : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x4xf32>, tensor<4x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  %g = math.tanh %y : tensor<16x8xf32>
  return %g : tensor<16x8xf32>
}

// The same values added elementwise: not used as a weight, a replicated
// constant.
// CHECK-LABEL: func.func @not_a_weight
// CHECK: arith.constant {tp.result_layouts = [#tp.layout<@tp, [-, -]>]} dense
func.func @not_a_weight(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = arith.constant dense<"0x000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F00000000000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F00000000000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F"> : tensor<4x8xf32>
  %y = arith.addf %x, %w : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// A [2, 4] table (32 bytes, below the threshold) stays replicated.
// CHECK-LABEL: func.func @tiny_table
// CHECK: arith.constant {tp.result_layouts = [#tp.layout<@tp, [-, -]>]} dense
func.func @tiny_table(%x: tensor<16x2xf32>) -> tensor<16x4xf32> {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x4xf32>) -> tensor<16x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x2xf32>, tensor<2x4xf32>) outs(%f : tensor<16x4xf32>) -> tensor<16x4xf32>
  return %y : tensor<16x4xf32>
}

// A fused [4, 12] dense_resource weight, its product cut into three
// [16, 4] pieces: three constants, each split by columns, and no
// collective before the pieces are used.
// CHECK-LABEL: func.func @fused_constant
// CHECK-DAG: arith.constant {tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]} dense_resource<fused_1_0> : tensor<4x4xf32>
// CHECK-DAG: arith.constant {tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]} dense_resource<fused_1_4> : tensor<4x4xf32>
// CHECK-DAG: arith.constant {tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]} dense_resource<fused_1_8> : tensor<4x4xf32>
// CHECK-NOT: tensor<4x12xf32>
// CHECK: return
// SHARD-LABEL: func.func @fused_constant
// SHARD-NOT: tp.all_gather
// SHARD: return
func.func @fused_constant(%x: tensor<16x4xf32>)
    -> (tensor<16x4xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>},
        tensor<16x4xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>},
        tensor<16x4xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>}) {
  %w = arith.constant dense_resource<fused> : tensor<4x12xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x12xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x12xf32>) -> tensor<16x12xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x4xf32>, tensor<4x12xf32>) outs(%f : tensor<16x12xf32>) -> tensor<16x12xf32>
  %a = tensor.extract_slice %y[0, 0] [16, 4] [1, 1] : tensor<16x12xf32> to tensor<16x4xf32>
  %b = tensor.extract_slice %y[0, 4] [16, 4] [1, 1] : tensor<16x12xf32> to tensor<16x4xf32>
  %c = tensor.extract_slice %y[0, 8] [16, 4] [1, 1] : tensor<16x12xf32> to tensor<16x4xf32>
  %ta = math.tanh %a : tensor<16x4xf32>
  %tb = math.tanh %b : tensor<16x4xf32>
  %tc = math.tanh %c : tensor<16x4xf32>
  return %ta, %tb, %tc : tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      fused: "0x04000000000000BF0000003E0000403F000080BE0000C03E0000803F000000000000203F0000C0BE0000803E0000603F000000BE0000003F000000BF0000003E0000403F000080BE0000C03E0000803F000000000000203F0000C0BE0000803E0000603F000000BE0000003F000000BF0000003E0000403F000080BE0000C03E0000803F000000000000203F0000C0BE0000803E0000603F000000BE0000003F000000BF0000003E0000403F000080BE0000C03E0000803F000000000000203F0000C0BE"
    }
  }
#-}
